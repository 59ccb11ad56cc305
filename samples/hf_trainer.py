"""Fine-tune a tiny GPT-2 for sequence classification with the Hugging Face Trainer.

Everything is built locally: the tokenizer is trained in code on synthetic sentences and
the model comes from a GPT2Config, so nothing is downloaded.

    python hf_trainer.py --max-steps 8
"""
import argparse
import os
import random
import tempfile

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (
    DataCollatorWithPadding,
    GPT2Config,
    GPT2ForSequenceClassification,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
    set_seed,
)

POSITIVE = ["great", "excellent", "lovely", "fantastic", "superb", "wonderful", "good", "pleasant"]
NEGATIVE = ["awful", "terrible", "boring", "dreadful", "poor", "bad", "horrible", "dull"]
SUBJECTS = ["the movie", "this film", "the plot", "the acting", "the soundtrack", "the ending", "the cast"]
FILLERS = ["really", "quite", "very", "rather", "truly", "somewhat", "just"]


def make_examples(n, seed):
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        label = rng.randint(0, 1)
        words = POSITIVE if label == 1 else NEGATIVE
        parts = [rng.choice(SUBJECTS), "was", rng.choice(FILLERS), rng.choice(words)]
        if rng.random() < 0.5:
            parts += ["and", rng.choice(FILLERS), rng.choice(words)]
        texts.append(" ".join(parts))
        labels.append(label)
    return texts, labels


def build_tokenizer(corpus):
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[BOS]", "[EOS]"])
    tok.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                        bos_token="[BOS]", eos_token="[EOS]")
    tokenizer.padding_side = "right"
    return tokenizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", "--steps", dest="max_steps", type=int,
                        default=int(os.environ.get("STEPS", 8)))
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    set_seed(args.seed)
    train_texts, train_labels = make_examples(256, seed=args.seed)
    eval_texts, eval_labels = make_examples(32, seed=args.seed + 1)
    tokenizer = build_tokenizer(train_texts + eval_texts)

    raw_train = Dataset.from_dict({"text": train_texts, "label": train_labels})
    raw_eval = Dataset.from_dict({"text": eval_texts, "label": eval_labels})

    def tokenize(batch):
        return tokenizer(batch["text"], padding=True, truncation=True, max_length=32)

    train_ds = raw_train.map(tokenize, batched=True, remove_columns=["text"])
    eval_ds = raw_eval.map(tokenize, batched=True, remove_columns=["text"])

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=128,
        n_embd=32,
        n_layer=2,
        n_head=2,
        num_labels=2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = GPT2ForSequenceClassification(config)

    output_dir = args.output_dir or tempfile.mkdtemp(prefix="hf_trainer_")
    training_args = TrainingArguments(
        output_dir=output_dir,
        fp16=True,
        optim="adamw_torch",
        learning_rate=5e-4,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        max_steps=args.max_steps,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=args.seed,
    )

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        data_collator=DataCollatorWithPadding(tokenizer),
        processing_class=tokenizer,
    )
    result = trainer.train()
    print(f"train_loss {result.training_loss:.4f} steps {result.global_step}")
    metrics = trainer.evaluate()
    print(f"eval_loss {metrics['eval_loss']:.4f}")


if __name__ == "__main__":
    main()
