"""Write a tiny synthetic token corpus for train.py: OUT_DIR/tokens.npy (deterministic).

A 1-D int32 array of token ids in [0, 64) drawn from a random first-order Markov chain, so the
next token is learnable.

    python make_data.py /tmp/fsdp2_data
"""
import os
import sys

import numpy as np


def main(out_dir: str, n_tokens: int = 8192, vocab: int = 64, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    transition = rng.dirichlet(np.full(vocab, 0.1), size=vocab)
    tokens = np.empty(n_tokens, dtype=np.int32)
    tokens[0] = 0
    for i in range(1, n_tokens):
        tokens[i] = rng.choice(vocab, p=transition[tokens[i - 1]])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tokens.npy")
    np.save(path, tokens)
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
