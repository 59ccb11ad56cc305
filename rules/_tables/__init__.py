"""The data tables behind the rules: mechanical renames and facts, each entry with its source."""
