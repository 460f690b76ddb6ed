"""Speed and memory of the Degree of Divergence bootstrap (not a test).

Four synthetic binary data sets of 715, 2,051 (human side) and 2,872, 8,897 (auto side) instances,
14,535 in all, two prediction vectors each (channel x and channel a), B = 10,000 instance resamples:
`degree_of_divergence` against the plain loop a reader would write (per resample and data set, draw
n indices with replacement and call sklearn's `f1_score(average="macro")` on the indexed arrays for x
and for a), timed on 500 resamples and extrapolated per resample to B. Peak memory is the largest
block of memory traced by tracemalloc beyond what was allocated at the start of a second, traced call;
the process's max RSS is reported too. Agreement: the first resampled DoDs of ours against sklearn on
the same count rows (materialised with np.repeat).

    python benchmarks/dod_speed.py [--boot 10000] [--naive 500] [--check 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
from bootstrap_speed import peak_mb  # the same tracemalloc helper (benchmarks/ is on sys.path)
from sklearn.metrics import f1_score

from mhaudit.stats import binary
from mhaudit.stats.divergence import degree_of_divergence

SETS = {  # name: (n, prevalence, accuracy of x, accuracy of a, side)
    "dreaddit_test": (715, 0.52, 0.74, 0.70, "human"),
    "twitter_gold": (2051, 0.35, 0.72, 0.68, "human"),
    "twitter_auto": (2872, 0.45, 0.58, 0.62, "auto"),
    "reddit_combi": (8897, 0.88, 0.80, 0.78, "auto"),
}


def problem(seed: int = 0) -> tuple[dict, list[str], list[str]]:
    rng = np.random.default_rng(seed)
    groups = {}
    for name, (n, prev, acc_x, acc_a, _) in SETS.items():
        y = (rng.random(n) < prev).astype(np.int8)
        groups[name] = (y, np.where(rng.random(n) < acc_x, y, 1 - y), np.where(rng.random(n) < acc_a, y, 1 - y))
    human = [k for k, v in SETS.items() if v[4] == "human"]
    auto = [k for k, v in SETS.items() if v[4] == "auto"]
    return groups, human, auto


def macro(y, pred) -> float:
    return f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0)


def naive_dod(groups, human, auto, n_boot: int, rng) -> np.ndarray:
    """The Python loop over resamples: index, then sklearn, twice per data set per resample."""
    out = np.empty(n_boot)
    for b in range(n_boot):
        delta = {}
        for name in human + auto:
            y, px, pa = groups[name]
            idx = rng.integers(0, y.size, y.size)
            delta[name] = macro(y[idx], px[idx]) - macro(y[idx], pa[idx])
        out[b] = np.mean([delta[k] for k in human]) - np.mean([delta[k] for k in auto])
    return out


def agreement(groups, human, auto, draws: np.ndarray, n_boot: int, seed: int, rows: int) -> float:
    """max |ours - sklearn| over the first `rows` resampled DoDs, on the very count rows ours drew.

    Data set i draws from the i-th spawned child in blocks (`_count_blocks`), so replaying the blocks
    of the same call (n_boot, seed) reproduces its resamples; sklearn scores them materialised."""
    children = np.random.default_rng(seed).spawn(len(human + auto))
    deltas = {}
    for name, child in zip(human + auto, children):
        y, px, pa = groups[name]
        counts = []
        for _, block in binary._count_blocks(y, n_boot, child, False):
            counts.extend(block[:rows - len(counts)])
            if len(counts) == rows:
                break
        deltas[name] = []
        for row in counts:
            idx = np.repeat(np.arange(y.size), row)
            deltas[name].append(macro(y[idx], px[idx]) - macro(y[idx], pa[idx]))
    ref = np.mean([deltas[k] for k in human], axis=0) - np.mean([deltas[k] for k in auto], axis=0)
    return float(np.max(np.abs(draws[:rows] - ref)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=10000)
    ap.add_argument("--naive", type=int, default=500)
    ap.add_argument("--check", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    groups, human, auto = problem()
    b, seed = args.boot, 1
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    times = []
    for _ in range(args.repeat):  # the first call pays page faults and BLAS warm-up; report first and best
        t = time.perf_counter()
        res = degree_of_divergence(groups, human, auto, n_boot=b, rng=seed)
        times.append(time.perf_counter() - t)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _, mem = peak_mb(lambda: degree_of_divergence(groups, human, auto, n_boot=b, rng=seed))

    t = time.perf_counter()
    naive_dod(groups, human, auto, args.naive, np.random.default_rng(2))
    t_naive_run = time.perf_counter() - t
    t_naive = t_naive_run * b / args.naive

    worst = agreement(groups, human, auto, res["draws"], b, seed, args.check)

    sizes = ", ".join(f"{k} {SETS[k][0]}" for k in human + auto)
    n_total = sum(v[0] for v in SETS.values())
    print(f"data sets: human [{', '.join(human)}], auto [{', '.join(auto)}]; n = {sizes} (total {n_total:,})")
    print(f"B={b:,}  cpus={os.cpu_count()}  load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"degree_of_divergence     first {times[0]:6.2f} s  best {min(times):6.2f} s  "
          f"peak {mem:6.1f} MB traced (blocks of {binary._BLOCK_CELLS:,} counts)")
    print(f"naive sklearn loop       {t_naive:6.1f} s  (ran {args.naive} resamples in {t_naive_run:.1f} s, "
          f"extrapolated per resample to {b:,})")
    print(f"speed-up                 first {t_naive / times[0]:6.1f} x  best {t_naive / min(times):6.1f} x")
    print(f"max RSS of the process   {rss0:6.1f} MB before, {rss1:6.1f} MB after our calls")
    print(f"max |ours - sklearn| over the first {args.check} resampled DoDs, same count rows: {worst:.1e}")
    print(f"DoD = {res['estimate']:+.4f}  CI [{res['ci_low']:+.4f}, {res['ci_high']:+.4f}]  se {res['se']:.4f}  "
          f"z {res['z']:.2f}  p ({res['alternative']}) {res['p']:.4g}  p two-sided {res['p_two_sided']:.4g}")
    print(res["per_dataset"].round(4).to_string(index=False))


if __name__ == "__main__":
    main()
