"""Write a tiny synthetic citation graph for train.py, in the Cora file format (deterministic).

OUT_DIR/synth.content: one node per line, ``<paper id> <binary features...> <class label>``.
OUT_DIR/synth.cites:   one edge per line, ``<cited paper id> <citing paper id>``.
Nodes of a class share a feature profile and link mostly within their class.

    python make_data.py /tmp/gnn_data
"""
import os
import random
import sys

import numpy as np


def main(out_dir: str, nodes: int = 90, features: int = 48, classes: int = 3, seed: int = 72) -> str:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    ids = rng.choice(np.arange(1000, 100000), size=nodes, replace=False)
    labels = rng.integers(0, classes, size=nodes)
    profiles = rng.random((classes, features)) < 0.25
    with open(os.path.join(out_dir, "synth.content"), "w", encoding="utf-8") as f:
        for pid, label in zip(ids, labels):
            noise = rng.random(features) < 0.08
            row = (profiles[label] ^ noise).astype(int)
            f.write(f"{pid}\t" + "\t".join(map(str, row)) + f"\tTopic_{label}\n")
    by_class = {c: [int(i) for i, l in zip(ids, labels) if l == c] for c in range(classes)}
    with open(os.path.join(out_dir, "synth.cites"), "w", encoding="utf-8") as f:
        for pid, label in zip(ids, labels):
            for _ in range(3):
                pool = by_class[int(label)] if pick.random() < 0.85 else [int(i) for i in ids]
                other = pick.choice(pool)
                if other != pid:
                    f.write(f"{other}\t{pid}\n")
    return out_dir


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
