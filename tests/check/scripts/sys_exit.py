"""Crafted: the script rejects its arguments and exits non-zero."""
import sys

import torch

print("data file tiny.bin not found: expected uint16 tokens", file=sys.stderr)
sys.exit(3)
