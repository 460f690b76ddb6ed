"""The monitor's alerts on streams with known truth: false alarms on stationary streams, delay after a planted change.

    python benchmarks/monitor_detection.py [--windows 2000] [--per-window 1000] [--replications 200]

Each stream is a sequence of windows of --per-window posts drawn (with replacement) from a labelled pool,
positive with the window's prevalence. Every pool post is scored once; a window's statistics are those the
monitor computes (audits.monitor.windows): the mean calibrated positive posterior, fed to the self-starting CUSUM
(stats.change), and the PSI of the calibrated positive-class posterior against the reference (warn >= 0.10).

Pools and models:
- SYNTHETIC: tfidf-lr trained on the synthetic corpus's tweets (depression vs other, train split); reference the
  test split; the pool the val split. The vocabulary shift replaces half of each post's words by slang the model
  never saw (mhaudit.synthetic.simulate_stream), each pool post shifted once and scored.
- real: tfidf-lr trained on Depression Reddit; reference the Bluesky depression set's posts before 2024-09;
  the pool its posts from 2024-09 on (skipped when ../shared/data is absent).

Measured:
1. false alarms: --windows stationary windows (the pool's own prevalence), alarms per 100 windows, for the
   CUSUM and for the PSI warning;
2. detection delay: --replications streams of 20 windows, prevalence x2 from window 10 (and, SYNTHETIC, the
   vocabulary shift from window 10): the windows from the change to the first alarm (0 = the changed window
   itself), and the alarms before it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CUT = pd.Timestamp("2024-09-01", tz="UTC")


def synthetic_setup():
    import mhaudit as mh
    from mhaudit.synthetic.simulate_stream import _shifted

    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=2400, seed=0))
    frame = corpus.frame[corpus.frame["platform"] == "synthetic-tweets"]
    frame = frame.assign(label=np.where(frame["label"] == "depression", "depression", "other"))
    classes = ["other", "depression"]
    model = mh.create_model("tfidf-lr").fit(frame[frame["split"] == "train"], classes)
    ref, pool = frame[frame["split"] == "test"], frame[frame["split"] == "val"]
    rng = np.random.default_rng(0)
    shifted = [_shifted(t, rng) for t in pool["text"]]
    return (model, classes, ref["text"].tolist(), (ref["label"] == "depression").to_numpy(), pool["text"].tolist(),
            (pool["label"] == "depression").to_numpy(), shifted)


def real_setup():
    from mhaudit.models import create
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    reddit = import_source("depression_reddit", [DATA / "depression_reddit_cleaned" /
                                                 "depression_dataset_reddit_cleaned.csv"], ImportOptions(seed=0)).corpus
    model = create("tfidf-lr").fit(reddit.frame[reddit.frame["split"].isin(["train", "val"])], reddit.classes)
    raw = pd.read_csv(DATA / "bluesky_depression" / "bluesky-depression-dataset.csv").dropna(subset=["text"])
    raw["time"] = pd.to_datetime(raw["createdAt"], utc=True, format="ISO8601")
    ref, pool = raw[raw["time"] < CUT], raw[raw["time"] >= CUT]
    return (model, reddit.classes, ref["text"].astype(str).tolist(), ref["depressive"].to_numpy() == 1,
            pool["text"].astype(str).tolist(), pool["depressive"].to_numpy() == 1, None)


def window_stats(reference, logits: np.ndarray, index: np.ndarray):
    """Per window (rows of `index`, pool positions): the sum and sum of squares of the calibrated positive
    posteriors (the CUSUM's input) and the score PSI."""
    from mhaudit.stats.drift import psi

    score = reference.drift_score(reference.calibration.probs(logits))
    bins = np.searchsorted(reference.edges, score, side="left")
    share = np.stack([score[index].sum(axis=1), (score[index] ** 2).sum(axis=1)], axis=1)
    n_bins = reference.edges.size + 1
    counts = np.stack([np.bincount(row, minlength=n_bins) for row in bins[index]])
    psis = np.array([psi(reference.shares, c / c.sum()) for c in counts])
    return share, psis


def draw(rng, positives, negatives, n_windows, per_window, prevalence):
    """Pool positions (windows x posts), positive with each window's prevalence."""
    pos = rng.random((n_windows, per_window)) < np.asarray(prevalence)[:, None]
    return np.where(pos, positives[rng.integers(len(positives), size=pos.shape)],
                    negatives[rng.integers(len(negatives), size=pos.shape)])


def run(name, setup, args):
    from mhaudit.audits.monitor.windows import Reference
    from mhaudit.stats.change import self_starting_cusum

    model, classes, ref_texts, ref_y, pool_texts, pool_y, shifted = setup()
    reference = Reference(ref_y.astype(np.int64), model.predict_logits(ref_texts), classes, 1)
    logits = model.predict_logits(pool_texts)
    positives, negatives = np.flatnonzero(pool_y), np.flatnonzero(~pool_y)
    base = pool_y.mean()
    rng = np.random.default_rng(1)
    n = args.per_window
    index = draw(rng, positives, negatives, args.windows, n, np.full(args.windows, base))
    share, psis = window_stats(reference, logits, index)
    alarms = self_starting_cusum(share[:, 0], np.full(args.windows, n), share[:, 1]).alarm
    print(f"\n{name}: pool {len(pool_y):,} posts, prevalence {base:.3f}; reference {len(ref_y):,} posts")
    print(f"  stationary, {args.windows} windows of {n}: CUSUM {alarms.sum()} alarms = "
          f"{100 * alarms.mean():.2f} per 100 windows; PSI >= 0.10 in {100 * (psis >= 0.10).mean():.2f} per 100 "
          f"(PSI median {np.median(psis):.4f}, max {psis.max():.4f})")
    changes = {"prevalence x2": (2.0, None)}
    if shifted is not None:
        changes["vocabulary shift"] = (1.0, model.predict_logits(shifted))
    for label, (factor, shifted_logits) in changes.items():
        delays, early, missed = [], 0, 0
        for _ in range(args.replications):
            prevalence = np.where(np.arange(20) < 10, base, min(base * factor, 0.95))
            idx = draw(rng, positives, negatives, 20, n, prevalence)
            if shifted_logits is None:
                share, psis = window_stats(reference, logits, idx)
            else:
                before = window_stats(reference, logits, idx[:10])
                after = window_stats(reference, shifted_logits, idx[10:])
                share, psis = (np.concatenate([b, a]) for b, a in zip(before, after))
            alarm = self_starting_cusum(share[:, 0], np.full(20, n), share[:, 1]).alarm | (psis >= 0.10)
            early += int(alarm[:10].any())
            hits = np.flatnonzero(alarm[10:])
            delays.append(hits[0] if hits.size else np.nan)
            missed += int(not hits.size)
        delays = np.asarray(delays, dtype=float)
        print(f"  {label} from window 10 ({args.replications} streams of 20 windows of {n}): alarm in the changed "
              f"window in {np.mean(delays == 0):.1%}, within one window in {np.mean(delays <= 1):.1%}, median delay "
              f"{np.nanmedian(delays):.0f}; missed in {missed}; streams with an alarm before the change: {early}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=2000)
    parser.add_argument("--per-window", type=int, default=1000)
    parser.add_argument("--replications", type=int, default=200)
    args = parser.parse_args()
    started = time.perf_counter()
    run("SYNTHETIC", synthetic_setup, args)
    if (DATA / "bluesky_depression").is_dir():
        run("real (Bluesky depression set, Reddit model)", real_setup, args)
    else:
        print("real: skipped, ../shared/data is absent")
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
