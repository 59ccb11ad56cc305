test:
	pytest -q

lint:
	ruff check .
