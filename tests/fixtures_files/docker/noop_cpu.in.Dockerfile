FROM python:3.11-slim
RUN pip install --no-cache-dir numpy
COPY . /app
CMD ["python", "/app/main.py"]
