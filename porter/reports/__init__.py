"""Rendering results: terminal lines, JSON, SARIF 2.1.0 and Markdown reports."""
