"""Code that runs inside the check's subprocess (never imported by porter's own process at startup)."""
