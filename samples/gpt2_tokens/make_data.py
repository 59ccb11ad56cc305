"""Write tiny synthetic token shards for train.py (deterministic).

Each shard is a binary file: a header of 256 int32 (magic 20240520, version 1, token count) and
then the tokens as uint16. Files: OUT_DIR/synth_train_000000.bin, synth_train_000001.bin and
synth_val_000000.bin. Tokens follow a random sparse Markov chain over a 128-token vocabulary.

    python make_data.py /tmp/gpt2_tokens_data
"""
import os
import sys

import numpy as np

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256


def write_shard(path: str, tokens: np.ndarray) -> None:
    header = np.zeros(HEADER_INTS, dtype=np.int32)
    header[:3] = (MAGIC, VERSION, len(tokens))
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype(np.uint16).tobytes())


def main(out_dir: str, vocab: int = 128, shard_tokens: int = 4096, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    transition = rng.dirichlet(np.full(vocab, 0.05), size=vocab)
    os.makedirs(out_dir, exist_ok=True)
    for name in ("synth_train_000000", "synth_train_000001", "synth_val_000000"):
        tokens = np.empty(shard_tokens, dtype=np.int64)
        tokens[0] = rng.integers(vocab)
        for i in range(1, shard_tokens):
            tokens[i] = rng.choice(vocab, p=transition[tokens[i - 1]])
        write_shard(os.path.join(out_dir, name + ".bin"), tokens)
    return out_dir


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
