"""Custom fine-tuning loop over a tiny BERT classifier with CUDA mixed precision.

The shape of the Hugging Face `*_no_trainer.py` examples without the Accelerator:
a collate function that tokenizes each batch, a hand-written loop with
torch.cuda.amp autocast(float16) + GradScaler, AdamW and a linear warmup schedule.
Tokenizer (BPE, trained in code) and model (BertConfig) are built locally.

    python hf_accelerate_loop.py --steps 8
"""
import argparse
import math
import os
import random

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from tokenizers.processors import TemplateProcessing
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    PreTrainedTokenizerFast,
    get_linear_schedule_with_warmup,
)

TOPICS = {
    0: ["goal", "match", "striker", "league", "coach", "stadium", "penalty", "season"],
    1: ["recipe", "oven", "garlic", "dessert", "flavour", "kitchen", "sauce", "chef"],
    2: ["compiler", "kernel", "server", "database", "network", "laptop", "cache", "python"],
}
TEMPLATES = [
    "yesterday the {} and the {} were discussed at length",
    "everyone talked about the {} before the {}",
    "a new {} changed how people think about the {}",
    "the {} was late so the {} had to wait",
    "i read an article about the {} and the {} today",
]


def make_texts(n, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.randrange(len(TOPICS))
        a, b = rng.sample(TOPICS[label], 2)
        rows.append({"text": rng.choice(TEMPLATES).format(a, b), "label": label})
    return rows


def build_tokenizer(texts, vocab_size=200):
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size,
                                  special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(texts, trainer=trainer)
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def parse_args():
    parser = argparse.ArgumentParser(description="Fine-tune a tiny BERT on synthetic topic classification")
    parser.add_argument("--steps", "--max_train_steps", dest="max_train_steps", type=int,
                        default=int(os.environ.get("STEPS", 8)))
    parser.add_argument("--per_device_train_batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--weight_decay", type=float, default=0.01)
    parser.add_argument("--num_warmup_steps", type=int, default=0)
    parser.add_argument("--max_length", type=int, default=32)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args()


def main():
    args = parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_rows = make_texts(args.max_train_steps * args.per_device_train_batch_size, seed=args.seed)
    eval_rows = make_texts(48, seed=args.seed + 1)
    tokenizer = build_tokenizer([r["text"] for r in train_rows + eval_rows])

    def collate_fn(rows):
        texts = [r["text"] for r in rows]
        batch = tokenizer(texts, padding="longest", truncation=True, max_length=args.max_length,
                          return_tensors="pt")
        batch["labels"] = torch.tensor([r["label"] for r in rows], dtype=torch.long)
        return batch

    train_dataloader = DataLoader(train_rows, shuffle=True, collate_fn=collate_fn,
                                  batch_size=args.per_device_train_batch_size)
    eval_dataloader = DataLoader(eval_rows, collate_fn=collate_fn, batch_size=16)

    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=len(TOPICS),
        pad_token_id=tokenizer.pad_token_id,
    )
    model = BertForSequenceClassification(config)
    model.to("cuda")

    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": args.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=args.learning_rate)
    num_update_steps_per_epoch = len(train_dataloader)
    num_train_epochs = math.ceil(args.max_train_steps / num_update_steps_per_epoch)
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer,
        num_warmup_steps=args.num_warmup_steps,
        num_training_steps=args.max_train_steps,
    )
    scaler = torch.cuda.amp.GradScaler()

    print("***** Running training *****")
    print(f"  Num examples = {len(train_rows)}")
    print(f"  Num Epochs = {num_train_epochs}")
    print(f"  Total optimization steps = {args.max_train_steps}")
    progress_bar = tqdm(range(args.max_train_steps))
    completed_steps = 0

    for epoch in range(num_train_epochs):
        model.train()
        total_loss = 0.0
        for step, batch in enumerate(train_dataloader):
            batch = {k: v.cuda() for k, v in batch.items()}
            with torch.cuda.amp.autocast(dtype=torch.float16):
                outputs = model(**batch)
                loss = outputs.loss
            total_loss += loss.detach().float()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            lr_scheduler.step()
            optimizer.zero_grad()
            progress_bar.update(1)
            completed_steps += 1
            tqdm.write(f"epoch {epoch} step {completed_steps} loss {loss.item():.4f} "
                       f"lr {lr_scheduler.get_last_lr()[0]:.2e}")
            if completed_steps >= args.max_train_steps:
                break

        model.eval()
        correct, seen = 0, 0
        for batch in eval_dataloader:
            batch = {k: v.cuda() for k, v in batch.items()}
            with torch.no_grad(), torch.cuda.amp.autocast(dtype=torch.float16):
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            correct += (predictions == batch["labels"]).sum().item()
            seen += batch["labels"].numel()
        print(f"epoch {epoch}: train_loss {total_loss.item() / (step + 1):.4f} "
              f"eval_accuracy {correct / seen:.4f}")
        if completed_steps >= args.max_train_steps:
            break


if __name__ == "__main__":
    main()
