"""CLI subcommands. Each module defines ``command: click.Command``; ``porter.cli`` adds them all.

A command's callback returns the process exit code (0 clean, 1 findings, 2 errors).
"""
