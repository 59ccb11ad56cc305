"""Write a tiny synthetic word corpus for train.py: OUT_DIR/{train,valid,test}.txt (deterministic).

Sentences come from a small grammar so that the next word is partly predictable.

    python make_data.py /tmp/word_lm_data
"""
import os
import random
import sys

SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the bird", "a child"]
VERBS = ["sees", "likes", "follows", "finds", "watches"]
OBJECTS = ["the ball", "a tree", "the river", "the house", "a small boat", "the moon"]
TAILS = ["", "today", "at night", "in the park", "again"]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)]
    return " ".join(w for w in words if w) + " ."


def main(out_dir: str, seed: int = 1111) -> str:
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    for split, lines in (("train", 60), ("valid", 12), ("test", 12)):
        with open(os.path.join(out_dir, f"{split}.txt"), "w", encoding="utf-8") as f:
            for _ in range(lines):
                f.write(" " + sentence(rng) + " \n")
    return out_dir


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
