"""Speed of the ensemble estimate: 20 runs x (6,000 reference + 3,000 target rows), 1,000 bootstrap draws.

    python benchmarks/ensemble_estimate_speed.py [--runs 20] [--n-ref 6000] [--n-tgt 3000] [--n-boot 1000]

Against the floor a reader would write first: one resample at a time (np.repeat of the drawn rows, then
ALine-S and ALine-D from the resampled predictions, as tests/stats/test_agreement_line.py's brute force does),
timed on `--loop-draws` draws and scaled to `--n-boot`. SYNTHETIC runs (mhaudit.synthetic.simulate_runs).
Median of `--repeats` for ours.
"""

from __future__ import annotations

import argparse
import statistics
import time
from itertools import combinations

import numpy as np
from scipy.special import ndtr, ndtri


def loop_estimate(pred_ref, y_ref, pred_tgt, rng, draws):
    """ALine-S and ALine-D per explicit resample, pairs in a Python loop: the peer."""
    runs, n_ref = pred_ref.shape
    n_tgt = pred_tgt.shape[1]
    pairs = list(combinations(range(runs), 2))
    design = np.zeros((len(pairs), runs))
    for p, (i, j) in enumerate(pairs):
        design[p, [i, j]] = 0.5
    out = []
    for _ in range(draws):
        r = rng.integers(0, n_ref, n_ref)
        t = rng.integers(0, n_tgt, n_tgt)
        pr, pt, y = pred_ref[:, r], pred_tgt[:, t], y_ref[r]
        clip = lambda p, n: ndtri(np.clip(p, 0.5 / n, 1 - 0.5 / n))  # noqa: E731
        acc = clip((pr == y).mean(axis=1), n_ref)
        a_ref = np.array([clip((pr[i] == pr[j]).mean(), n_ref) for i, j in pairs])
        a_tgt = np.array([clip((pt[i] == pt[j]).mean(), n_tgt) for i, j in pairs])
        slope, intercept = np.polyfit(a_ref, a_tgt, 1)
        rhs = np.array([a_tgt[p] + slope * ((acc[i] + acc[j]) / 2 - a_ref[p]) for p, (i, j) in enumerate(pairs)])
        out.append((ndtr(slope * acc + intercept), ndtr(np.linalg.lstsq(design, rhs, rcond=None)[0])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--n-ref", type=int, default=6000)
    parser.add_argument("--n-tgt", type=int, default=3000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--loop-draws", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from mhaudit.stats.agreement_line import agreement_line
    from mhaudit.synthetic.simulate_runs import gaussian_runs

    runs = gaussian_runs(n_runs=args.runs, n_ref=args.n_ref, n_tgt=args.n_tgt, seed=0)
    pred_ref, pred_tgt = (runs["margin_ref"] > 0).astype(int), (runs["margin_tgt"] > 0).astype(int)
    ours = []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        agreement_line(pred_ref, runs["y_ref"], pred_tgt, n_boot=args.n_boot, rng=repeat)
        ours.append(time.perf_counter() - started)
    started = time.perf_counter()
    loop_estimate(pred_ref, runs["y_ref"], pred_tgt, np.random.default_rng(0), args.loop_draws)
    loop = (time.perf_counter() - started) * args.n_boot / args.loop_draws
    print(f"SYNTHETIC {args.runs} runs x ({args.n_ref:,} + {args.n_tgt:,}) rows, {args.n_boot:,} draws")
    print(f"ours (batched): median {statistics.median(ours):.2f} s over {args.repeats} "
          f"(min {min(ours):.2f}, max {max(ours):.2f})")
    print(f"loop over draws: {loop:.1f} s (timed on {args.loop_draws} draws, scaled)")
    print(f"ratio: {loop / statistics.median(ours):.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
