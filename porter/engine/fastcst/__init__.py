"""Fast reads of a libcst tree: one-pass index, qualified names on demand, positions per statement."""
