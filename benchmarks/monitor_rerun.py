"""A rerun of the monitor with nothing new, against the first round (not a test; issue 33.3).

    python benchmarks/monitor_rerun.py [--windows 30] [--per-window 1200] [--n-boot 200] [--work /tmp/mhaudit-rerun]

A SYNTHETIC stream (mhaudit.synthetic.simulate_stream: --windows days of --per-window posts, the prevalence
doubling at two thirds) drawn from the synthetic corpus's tweets, in a SQLite post store; a tfidf-lr model trained
on the corpus's train split, its reference predictions on the test split. Three runs of the real command
(`python -m mhaudit audit monitor`, each its own process, so Python's start-up and imports count):

1. the first round: scores every post and computes every window (writes the window cache);
2. a rerun with nothing new: every window read from the store;
3. one new post in the last window: that window alone computed.

Each prints its wall time, the windows it computed (the command's note) and the load average
before it; the rerun's windows table must equal the first round's, float for float. OMP_NUM_THREADS is 1 unless
set (the threads of a busy machine are issue 33.1's, benchmarks/busy_machine.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

CLASSES = ["other", "depression"]


def build(work: Path, windows: int, per_window: int) -> list[dict]:
    import mhaudit as mh
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
    from mhaudit.weak_supervision.collect.store import PostStore
    from synthetic_monitor import tweet_model

    model, texts = tweet_model(work)
    mh.save_model(model, work / "model")
    posts = simulate_stream(texts["depression"], texts["other"],
                            StreamConfig(n_windows=windows, per_window=per_window, change_at=2 * windows // 3, seed=1))
    with PostStore(work / "posts.sqlite") as store:
        for i in range(0, len(posts) - 1, 1000):  # the last post comes before the third run
            store.commit_batch(posts[i:min(i + 1000, len(posts) - 1)], cursor=i + 1000)
    return posts


def run(work: Path, name: str, n_boot: int) -> tuple[float, dict, pd.DataFrame]:
    load = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mhaudit", "audit", "monitor", "--store", str(work / "posts.sqlite"),
                           "--model", str(work / "model"), "--reference", str(work / "reference.parquet"),
                           "--positive", "depression", "--n-boot", str(n_boot), "--out", str(work / name)],
                          check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    report = json.loads((work / name / "report.json").read_text())
    computed = re.search(r"[\d,]+ of [\d,]+ windows computed", done.stderr).group(0)  # the command's note
    print(f"{name:>10}: {seconds:6.1f} s, {computed}, {report['options']['scored_now']:,} "
          f"posts scored (load average before: {load:.2f})", flush=True)
    return seconds, report["options"], pd.DataFrame(report["sections"][0]["tables"]["windows"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--per-window", type=int, default=1200)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-rerun"))
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    args.work.mkdir(parents=True, exist_ok=True)
    if (args.work / "posts.sqlite").exists():
        sys.exit(f"{args.work / 'posts.sqlite'} exists; give a new --work folder")
    posts = build(args.work, args.windows, args.per_window)
    print(f"SYNTHETIC stream: {args.windows} windows of {args.per_window:,} posts, n_boot {args.n_boot}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {os.cpu_count()} CPUs")
    _, _, first = run(args.work, "first", args.n_boot)
    _, _, rerun = run(args.work, "rerun", args.n_boot)
    pd.testing.assert_frame_equal(first, rerun, check_exact=True)
    print("rerun's windows table equals the first round's, float for float")
    from mhaudit.weak_supervision.collect.store import PostStore
    with PostStore(args.work / "posts.sqlite") as store:
        store.commit_batch(posts[-1:], cursor=len(posts) + 1000)
    run(args.work, "one new", args.n_boot)


if __name__ == "__main__":
    main()
