"""The macro-AUC's DeLong SE (stats.macro_delong) against the label-stratified bootstrap it replaces in
`audit cpfe` at large n, and the coverage of its 95% intervals. Not a test.

Data: SYNTHETIC predictions drawn as benchmarks/scaling.py draws them (4 classes; "reddit" and "twitter"
with their priors, separations and shift). Part 1: at each size, each platform's macro-AUC SE and the
between-platform difference's, by DeLong and by B label-stratified resamples (drawn a block at a time, as the
audit does). Part 2: over `--reps` independent samples of n rows per platform, how often the 95% DeLong
interval of each macro-AUC and of the difference holds the population value (estimated on `--truth-rows`
rows per platform).

    python benchmarks/macro_auc_delong.py [--sizes 100000,1000000] [--boot 2000,1000] [--reps 200] [--coverage-n 20000]
    python benchmarks/macro_auc_delong.py --sizes '' --reps 200 --coverage-n 100000   # coverage only
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from scaling import CLASSES, PLATFORMS  # noqa: E402

from mhaudit.stats.auc import macro_auc  # noqa: E402
from mhaudit.stats.bootstrap import count_blocks, macro_auc_of_counts  # noqa: E402
from mhaudit.stats.macro_delong import macro_auc_delong  # noqa: E402


def draw(platform: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC labels and probabilities of one run on one platform (scaling.py's model, float64)."""
    priors, separation, bias = PLATFORMS[platform]
    y = rng.choice(CLASSES, size=n, p=priors)
    z = 0.7 * rng.normal(size=(n, CLASSES)) + 0.7 * rng.normal(size=(n, CLASSES)) + np.asarray(bias)
    z[np.arange(n), y] += separation
    z *= 1.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return y, (p / p.sum(axis=1, keepdims=True)).round(6)


def bootstrap_se(y: np.ndarray, probs: np.ndarray, n_boot: int, rng: np.random.Generator) -> float:
    statistic = macro_auc_of_counts(y, probs, CLASSES)
    values = np.concatenate([statistic(counts) for _, counts in count_blocks(y, n_boot, rng, stratified=True)])
    return float(np.std(values, ddof=1))


def compare(n: int, n_boot: int) -> None:
    rng = np.random.default_rng(20261204 + n)
    se = {}
    for platform in PLATFORMS:
        y, probs = draw(platform, n, rng)
        t0 = time.process_time()
        delong = macro_auc_delong(y, probs, CLASSES)["se"]
        t1 = time.process_time()
        boot = bootstrap_se(y, probs, n_boot, rng)
        t2 = time.process_time()
        se[platform] = (delong, boot)
        print(f"n={n:>9,} {platform:8s} SE DeLong {delong:.6f} ({t1 - t0:.2f} s CPU)  bootstrap B={n_boot} "
              f"{boot:.6f} ({t2 - t1:.1f} s CPU)  DeLong/bootstrap {delong / boot:.4f}  "
              f"95% half-width {1.96 * delong:.6f} vs {1.96 * boot:.6f}", flush=True)
    d, b = (math.hypot(*(se[p][i] for p in PLATFORMS)) for i in (0, 1))
    print(f"n={n:>9,} difference SE DeLong {d:.6f}  bootstrap {b:.6f}  ratio {d / b:.4f}  "
          f"95% half-width {1.96 * d:.6f} vs {1.96 * b:.6f}", flush=True)


def coverage(n: int, reps: int, truth_rows: int) -> None:
    rng = np.random.default_rng(7)
    truth = {p: macro_auc(*draw(p, truth_rows, rng), CLASSES) for p in PLATFORMS}
    hits = {p: 0 for p in [*PLATFORMS, "difference"]}
    for _ in range(reps):
        got = {p: macro_auc_delong(*draw(p, n, rng), CLASSES) for p in PLATFORMS}
        for p in PLATFORMS:
            hits[p] += abs(got[p]["macro_auc"] - truth[p]) <= 1.959964 * got[p]["se"]
        diff = got["reddit"]["macro_auc"] - got["twitter"]["macro_auc"]
        se = math.hypot(got["reddit"]["se"], got["twitter"]["se"])
        hits["difference"] += abs(diff - (truth["reddit"] - truth["twitter"])) <= 1.959964 * se
    worst = 1.96 * math.sqrt(0.95 * 0.05 / reps)
    print(f"coverage of 95% DeLong intervals, n={n:,} per platform, {reps} samples (MC error ±{worst:.3f}); "
          f"truth from {truth_rows:,} rows: " + ", ".join(f"{p} {h / reps:.3f}" for p, h in hits.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--boot", default="2000,1000", help="bootstrap resamples per size")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--coverage-n", type=int, default=20000)
    parser.add_argument("--truth-rows", type=int, default=4_000_000)
    args = parser.parse_args()
    for n, b in zip((int(s) for s in args.sizes.split(",") if s), (int(s) for s in args.boot.split(",") if s)):
        compare(n, b)
    if args.reps:
        coverage(args.coverage_n, args.reps, args.truth_rows)


if __name__ == "__main__":
    main()
