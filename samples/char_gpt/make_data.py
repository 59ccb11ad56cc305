"""Write a tiny synthetic text corpus for train.py: OUT_DIR/input.txt (deterministic).

    python make_data.py /tmp/char_gpt_data
"""
import os
import random
import sys

WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "big", "red", "house", "by", "sea"]


def main(out_dir: str, lines: int = 120, seed: int = 1337) -> str:
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "input.txt")
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 9))]
            f.write(" ".join(words).capitalize() + ".\n")
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
