"""porter's rules: one module per rule (or tight family). Installed as ``porter.rules``.

Modules whose names start with ``_`` hold shared helpers and tables, not rules.
"""
