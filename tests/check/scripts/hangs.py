"""Crafted: never reaches an optimizer step."""
import time

while True:
    time.sleep(1)
