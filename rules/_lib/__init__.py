"""Helpers the rules share, by concern: nodes, call arguments, imports, tree walks, and the
analyses of devices, precision, statements and host syncs. No rule lives here."""
