"""Running a port over many files: discovery, cache, process pool, git, notebooks, configuration."""
