"""Character-level GPT on a plain text file, minGPT style.

A reusable ``Trainer`` runs the optimisation loop and fires callbacks; the script's callback
prints the loss and, every ``--sample-every`` iterations, samples a completion from the model with
``model.generate`` and saves a checkpoint.

    python make_data.py data
    python train.py --data data/input.txt --max-iters 2000
"""
import argparse
import math
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler


class CharDataset(Dataset):
    """Every window of block_size + 1 characters: the input and the input shifted by one."""

    def __init__(self, text, block_size):
        chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = dict(enumerate(chars))
        self.vocab_size = len(chars)
        self.block_size = block_size
        self.data = text
        print(f"data has {len(text)} characters, {self.vocab_size} unique")

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        window = [self.stoi[ch] for ch in self.data[idx: idx + self.block_size + 1]]
        x = torch.tensor(window[:-1], dtype=torch.long)
        y = torch.tensor(window[1:], dtype=torch.long)
        return x, y

    def encode(self, text):
        return torch.tensor([self.stoi[ch] for ch in text], dtype=torch.long)

    def decode(self, ids):
        return "".join(self.itos[int(i)] for i in ids)


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 48
    dropout: float = 0.1


class NewGELU(nn.Module):
    """The tanh approximation of GELU used by GPT-2."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("mask", mask.view(1, 1, cfg.block_size, cfg.block_size))
        self.n_head = cfg.n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd), NewGELU(),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd), nn.Dropout(cfg.dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block_size = cfg.block_size
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)
        n_params = sum(p.numel() for p in self.parameters())
        print(f"number of parameters: {n_params / 1e6:.2f}M")

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def configure_optimizers(self, lr, weight_decay, betas):
        """AdamW with weight decay on the matmul weights only (no biases, norms or embeddings)."""
        decay, no_decay = set(), set()
        for mn, m in self.named_modules():
            for pn, _ in m.named_parameters(recurse=False):
                full = f"{mn}.{pn}" if mn else pn
                if pn.endswith("weight") and isinstance(m, nn.Linear):
                    decay.add(full)
                else:
                    no_decay.add(full)
        params = dict(self.named_parameters())
        groups = [
            {"params": [params[n] for n in sorted(decay)], "weight_decay": weight_decay},
            {"params": [params[n] for n in sorted(no_decay)], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, f"sequence of length {t} exceeds block size {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        """Extend idx (b, t) by max_new_tokens tokens, feeding predictions back in."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class Trainer:
    """A small training loop with event callbacks (``on_batch_end``)."""

    def __init__(self, model, dataset, *, device="auto", batch_size=16, lr=5e-4, weight_decay=0.1,
                 betas=(0.9, 0.95), grad_norm_clip=1.0, max_iters=None, num_workers=0):
        self.dataset = dataset
        self.batch_size = batch_size
        self.grad_norm_clip = grad_norm_clip
        self.max_iters = max_iters
        self.num_workers = num_workers
        self.callbacks = defaultdict(list)
        if device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            self.device = device
        self.model = model.to(self.device)
        print("running on device", self.device)
        self.optimizer = model.configure_optimizers(lr, weight_decay, betas)
        self.iter_num = 0
        self.iter_time = 0.0
        self.iter_dt = 0.0
        self.loss = None

    def add_callback(self, event, fn):
        self.callbacks[event].append(fn)

    def trigger_callbacks(self, event):
        for fn in self.callbacks.get(event, []):
            fn(self)

    def run(self):
        model = self.model
        loader = DataLoader(
            self.dataset,
            sampler=RandomSampler(self.dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False,
            pin_memory=True,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
        )
        model.train()
        self.iter_time = time.time()
        batches = iter(loader)
        while True:
            x, y = [t.to(self.device) for t in next(batches)]
            _, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.grad_norm_clip)
            self.optimizer.step()
            self.trigger_callbacks("on_batch_end")
            self.iter_num += 1
            now = time.time()
            self.iter_dt = now - self.iter_time
            self.iter_time = now
            if self.max_iters is not None and self.iter_num >= self.max_iters:
                break


def main():
    parser = argparse.ArgumentParser(description="train a character-level GPT on a text file")
    parser.add_argument("--data", default="data/input.txt", help="plain text file to train on")
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=48)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--max-iters", type=int, default=int(os.environ.get("STEPS", 8)))
    parser.add_argument("--log-every", type=int, default=1)
    parser.add_argument("--sample-every", type=int, default=4)
    parser.add_argument("--sample-len", type=int, default=24)
    parser.add_argument("--work-dir", default=None, help="where checkpoints go (default: a fresh temp dir)")
    parser.add_argument("--seed", type=int, default=3407)
    args = parser.parse_args()
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="char_gpt_")
    os.makedirs(work_dir, exist_ok=True)

    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    with open(args.data, encoding="utf-8") as f:
        text = f.read()
    dataset = CharDataset(text, args.block_size)
    cfg = GPTConfig(dataset.vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd, args.dropout)
    model = GPT(cfg)
    trainer = Trainer(model, dataset, batch_size=args.batch_size, lr=args.lr, max_iters=args.max_iters)

    def batch_end_callback(trainer):
        if trainer.iter_num % args.log_every == 0:
            print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}")
        if trainer.iter_num % args.sample_every == 0:
            model.eval()
            with torch.no_grad():
                context = text[:4]
                x = dataset.encode(context)[None, ...].to(trainer.device)
                y = model.generate(x, args.sample_len, temperature=1.0, do_sample=True, top_k=10)[0]
                print(repr(dataset.decode(y)))
            ckpt_path = os.path.join(work_dir, "model.pt")
            torch.save(model.state_dict(), ckpt_path)
            model.train()

    trainer.add_callback("on_batch_end", batch_end_callback)
    trainer.run()


if __name__ == "__main__":
    main()
