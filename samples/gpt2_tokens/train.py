"""GPT-2 style language model trained from pre-tokenised binary shards.

Shards are ``<prefix>_train_*.bin`` / ``<prefix>_val_*.bin``: a 256 x int32 header (magic,
version, token count) followed by uint16 tokens, read through ``np.memmap``. A light data loader
walks the shards in order (each DDP rank takes its own slice). The loop does gradient
accumulation under bf16 autocast, clips the gradient norm, follows a warmup + cosine schedule,
evaluates every ``--val-every`` steps, and times each step with ``torch.cuda.synchronize()``.

    python make_data.py data
    python train.py --input-bin "data/synth_train_*.bin" --input-val-bin "data/synth_val_*.bin"
    torchrun --standalone --nproc_per_node=8 train.py ...
"""
import argparse
import glob
import inspect
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HEADER_INTS = 256
MAGIC = 20240520


def load_shard(filename):
    header = np.fromfile(filename, dtype=np.int32, count=HEADER_INTS)
    assert header[0] == MAGIC, f"{filename}: bad magic number"
    assert header[1] == 1, f"{filename}: unsupported version"
    ntok = int(header[2])
    tokens = np.memmap(filename, dtype=np.uint16, mode="r", offset=HEADER_INTS * 4, shape=(ntok,))
    return tokens


class ShardLoader:
    """Consecutive (B, T) windows over the shards; rank r reads the r-th slice of every stride."""

    def __init__(self, pattern, B, T, rank, world_size):
        self.B, self.T = B, T
        self.rank, self.world_size = rank, world_size
        self.files = sorted(glob.glob(pattern))
        assert self.files, f"no shard matches {pattern}"
        self.reset()

    def reset(self):
        self.shard = 0
        self.tokens = load_shard(self.files[self.shard])
        self.pos = self.B * self.T * self.rank

    def next_batch(self):
        B, T = self.B, self.T
        buf = torch.from_numpy(self.tokens[self.pos: self.pos + B * T + 1].astype(np.int64))
        x = buf[:-1].view(B, T)
        y = buf[1:].view(B, T)
        self.pos += B * T * self.world_size
        if self.pos + B * T * self.world_size + 1 > len(self.tokens):
            self.shard = (self.shard + 1) % len(self.files)
            self.tokens = load_shard(self.files[self.shard])
            self.pos = B * T * self.rank
        return x, y


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 128
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 64


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.c_proj.SCALE_INIT = 1
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        qkv = self.c_attn(x)
        q, k, v = qkv.split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.c_proj.SCALE_INIT = 1

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            std = 0.02
            if hasattr(module, "SCALE_INIT"):
                std *= (2 * self.config.n_layer) ** -0.5
            torch.nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, device_type, master_process):
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        nodecay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": nodecay, "weight_decay": 0.0}]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        if master_process:
            print(f"decayed tensors: {len(decay)}, non-decayed: {len(nodecay)}, fused AdamW: {use_fused}")
        return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8, fused=use_fused)


def main():
    parser = argparse.ArgumentParser(description="GPT-2 style training on token shards")
    parser.add_argument("--input-bin", default="data/synth_train_*.bin")
    parser.add_argument("--input-val-bin", default="data/synth_val_*.bin")
    parser.add_argument("--batch-size", type=int, default=4, help="micro-batch size per rank")
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--total-batch-size", type=int, default=512, help="tokens per optimizer step")
    parser.add_argument("--num-iterations", type=int, default=int(os.environ.get("STEPS", 10)))
    parser.add_argument("--learning-rate", type=float, default=6e-4)
    parser.add_argument("--warmup-iters", type=int, default=2)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--grad-clip", type=float, default=1.0)
    parser.add_argument("--val-every", type=int, default=5)
    parser.add_argument("--val-steps", type=int, default=2)
    parser.add_argument("--compile", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args()
    B, T = args.batch_size, args.sequence_length

    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        assert torch.cuda.is_available(), "DDP needs CUDA"
        dist.init_process_group(backend="nccl")
        ddp_rank = int(os.environ["RANK"])
        ddp_local_rank = int(os.environ["LOCAL_RANK"])
        ddp_world_size = int(os.environ["WORLD_SIZE"])
        device = f"cuda:{ddp_local_rank}"
        torch.cuda.set_device(device)
        master_process = ddp_rank == 0
    else:
        ddp_rank, ddp_local_rank, ddp_world_size = 0, 0, 1
        master_process = True
        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
        elif hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
            device = "mps"
        print(f"using device: {device}")
    device_type = "cuda" if device.startswith("cuda") else "cpu"

    torch.manual_seed(args.seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(args.seed)
    tokens_per_micro = B * T * ddp_world_size
    assert args.total_batch_size % tokens_per_micro == 0, "total batch size must divide into micro-batches"
    grad_accum_steps = args.total_batch_size // tokens_per_micro
    if master_process:
        print(f"total batch size {args.total_batch_size} => gradient accumulation steps: {grad_accum_steps}")

    train_loader = ShardLoader(args.input_bin, B, T, ddp_rank, ddp_world_size)
    val_loader = ShardLoader(args.input_val_bin, B, T, ddp_rank, ddp_world_size)
    torch.set_float32_matmul_precision("high")

    model = GPT(GPTConfig(block_size=T))
    model.to(device)
    if args.compile:
        model = torch.compile(model)
    if ddp:
        model = DDP(model, device_ids=[ddp_local_rank])
    raw_model = model.module if ddp else model

    max_lr, min_lr = args.learning_rate, args.learning_rate * 0.1

    def get_lr(it):
        if it < args.warmup_iters:
            return max_lr * (it + 1) / args.warmup_iters
        if it > args.num_iterations:
            return min_lr
        ratio = (it - args.warmup_iters) / max(1, args.num_iterations - args.warmup_iters)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)

    optimizer = raw_model.configure_optimizers(args.weight_decay, max_lr, device_type, master_process)

    for step in range(args.num_iterations):
        t0 = time.time()
        last_step = step == args.num_iterations - 1
        if step % args.val_every == 0 or last_step:
            model.eval()
            val_loader.reset()
            with torch.no_grad():
                val_loss_accum = 0.0
                for _ in range(args.val_steps):
                    x, y = val_loader.next_batch()
                    x, y = x.to(device), y.to(device)
                    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                        _, loss = model(x, y)
                    val_loss_accum += loss.detach() / args.val_steps
            if ddp:
                dist.all_reduce(val_loss_accum, op=dist.ReduceOp.AVG)
            if master_process:
                print(f"validation loss: {val_loss_accum.item():.4f}")

        model.train()
        optimizer.zero_grad()
        loss_accum = 0.0
        for micro_step in range(grad_accum_steps):
            x, y = train_loader.next_batch()
            x, y = x.to(device), y.to(device)
            if ddp:
                model.require_backward_grad_sync = micro_step == grad_accum_steps - 1
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                _, loss = model(x, y)
            loss = loss / grad_accum_steps
            loss_accum += loss.detach()
            loss.backward()
        if ddp:
            dist.all_reduce(loss_accum, op=dist.ReduceOp.AVG)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        lr = get_lr(step)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        optimizer.step()
        if device_type == "cuda":
            torch.cuda.synchronize()
        dt = time.time() - t0
        tokens_per_sec = args.total_batch_size / dt
        if master_process:
            print(f"step {step:4d} | loss: {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} "
                  f"| dt: {dt * 1000:.2f}ms | tok/sec: {tokens_per_sec:.2f}")

    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
