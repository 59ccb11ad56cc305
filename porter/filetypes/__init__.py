"""Ports of files that are not Python: dependency pins, launchers, configs, containers."""
