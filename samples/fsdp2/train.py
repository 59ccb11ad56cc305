"""A small decoder-only Transformer trained with FSDP2 (``fully_shard``) under torchrun.

The model is built on the meta device, each block and then the root are sharded with
``fully_shard`` (optionally with a bf16 MixedPrecisionPolicy), parameters are materialised on the
GPU with ``to_empty`` and initialised by ``reset_parameters``. Batches are random windows of a
token file. At the end the full (unsharded) state dict is gathered to the CPU and rank 0 saves it.

    python make_data.py data
    torchrun --standalone --nproc_per_node=2 train.py --data data/tokens.npy --steps 20 --mixed-precision
"""
import argparse
import math
import os
import tempfile
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard


@dataclass
class ModelArgs:
    vocab_size: int = 64
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 2
    max_seq_len: int = 32
    dropout_p: float = 0.0


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.dropout_p = args.dropout_p

    def forward(self, x):
        bsz, seq_len, _ = x.size()
        q = self.wq(x).view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p if self.training else 0.0, is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bsz, seq_len, -1))

    def reset_parameters(self):
        for lin in (self.wq, self.wk, self.wv, self.wo):
            lin.reset_parameters()


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim)
        self.w2 = nn.Linear(hidden_dim, dim)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))

    def reset_parameters(self):
        self.w1.reset_parameters()
        self.w2.reset_parameters()


class TransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention_norm = nn.LayerNorm(args.dim)
        self.attention = Attention(args)
        self.ffn_norm = nn.LayerNorm(args.dim)
        self.feed_forward = FeedForward(args.dim, 4 * args.dim)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))

    def reset_parameters(self):
        self.attention_norm.reset_parameters()
        self.attention.reset_parameters()
        self.ffn_norm.reset_parameters()
        self.feed_forward.reset_parameters()


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.max_seq_len = args.max_seq_len
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.pos_embeddings = nn.Embedding(args.max_seq_len, args.dim)
        self.layers = nn.ModuleList([TransformerBlock(args) for _ in range(args.n_layers)])
        self.norm = nn.LayerNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)

    def forward(self, tokens):
        _, seq_len = tokens.size()
        pos = torch.arange(0, seq_len, device=tokens.device)
        h = self.tok_embeddings(tokens) + self.pos_embeddings(pos)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h)).float()

    def reset_parameters(self):
        for emb in (self.tok_embeddings, self.pos_embeddings):
            nn.init.normal_(emb.weight, std=0.02)
        for layer in self.layers:
            layer.reset_parameters()
        self.norm.reset_parameters()
        nn.init.normal_(self.output.weight, std=0.02 / math.sqrt(2 * len(self.layers)))


def get_batch(tokens, batch_size, seq_len, generator):
    starts = torch.randint(0, len(tokens) - seq_len - 1, (batch_size,), generator=generator)
    x = torch.stack([tokens[s: s + seq_len] for s in starts.tolist()])
    y = torch.stack([tokens[s + 1: s + 1 + seq_len] for s in starts.tolist()])
    return x, y


def main():
    parser = argparse.ArgumentParser(description="FSDP2 Transformer (torchrun)")
    parser.add_argument("--data", default="data/tokens.npy")
    parser.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 8)))
    parser.add_argument("--batch-size", type=int, default=8, help="per-rank batch size")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--mixed-precision", action="store_true", help="bf16 params in compute, fp32 reduce")
    parser.add_argument("--save-dir", default=None, help="where the final state dict goes (default: a temp dir)")
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl", device_id=device)
    torch.manual_seed(0)

    tokens = torch.from_numpy(np.load(args.data).astype(np.int64))
    model_args = ModelArgs(max_seq_len=args.seq_len)
    with torch.device("meta"):
        model = Transformer(model_args)
    fsdp_kwargs = {}
    if args.mixed_precision:
        fsdp_kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, **fsdp_kwargs)
    fully_shard(model, **fsdp_kwargs)
    assert isinstance(model, Transformer) and isinstance(model, FSDPModule)

    model.to_empty(device="cuda")
    model.reset_parameters()
    optim = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)

    # every rank draws different windows: the data is split by seed, not by a sampler
    generator = torch.Generator().manual_seed(1234 + rank)
    for step in range(args.steps):
        x, y = get_batch(tokens, args.batch_size, args.seq_len, generator)
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optim.step()
        optim.zero_grad()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f} grad_norm {grad_norm.full_tensor().item():.3f}")

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        save_dir = args.save_dir or tempfile.mkdtemp(prefix="fsdp2_")
        torch.save(state, os.path.join(save_dir, "model_state_dict.pt"))
        print(f"saved {len(state)} tensors of world size {world_size} run")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
