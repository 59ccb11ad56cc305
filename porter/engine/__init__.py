"""The engine: bytes in, a FileResult out. Knows no specific rule (see docs/architecture.md)."""
