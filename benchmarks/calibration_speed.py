"""Vectorised bootstrap ECE against a Python loop of `ece` over materialised resamples.

n = 8,000 rows, 4 classes, B = 1,000 multinomial resamples. The loop is timed on the first 50
resamples and extrapolated to B; times are best of --repeat. Peak memory is what tracemalloc sees
numpy allocate during one call, the (B, n) counts matrix excluded (the caller holds it either way).

Timings on a shared machine are noisy; the ratio is the number to compare.

    python benchmarks/calibration_speed.py [--n 8000] [--classes 4] [--boot 1000] [--loop 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from mhaudit.stats.calibration import bootstrap_classwise_ece, bootstrap_ece, ece, softmax


def multinomial_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) draw counts of n-out-of-n resampling, via one bincount of offset indices."""
    idx = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
    return np.bincount(idx.ravel(), minlength=n * n_boot).reshape(n_boot, n)


def timed_peak(fn, repeat: int):
    """Result, best wall time of `repeat` runs (tracemalloc off), and peak traced memory of one more run."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, best, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--loop", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best-of timing")
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    probs = softmax(rng.normal(0.0, 2.0, size=(a.n, a.classes)))
    y = rng.integers(0, a.classes, size=a.n)
    counts = multinomial_counts(a.n, a.boot, rng)

    bootstrap_ece(probs, y, counts[:2])  # warm-up (imports, BLAS threads)
    vec, t_vec, peak_vec = timed_peak(lambda: bootstrap_ece(probs, y, counts), a.repeat)
    _, t_cw, peak_cw = timed_peak(lambda: bootstrap_classwise_ece(probs, y, counts), a.repeat)

    def loop():
        rows = np.arange(a.n)
        return np.array([ece(probs[idx], y[idx]) for idx in (np.repeat(rows, c) for c in counts[:a.loop])])

    naive, t_loop, peak_loop = timed_peak(loop, a.repeat)
    t_naive = t_loop * a.boot / a.loop
    err = float(np.max(np.abs(naive - vec[:a.loop])))

    mib = 2.0**20
    print(f"n={a.n} classes={a.classes} B={a.boot} (counts matrix {counts.nbytes / mib:.1f} MiB, "
          f"{counts.dtype})")
    print(f"bootstrap_ece (vectorised)      {t_vec * 1e3:9.1f} ms   peak {peak_vec / mib:7.1f} MiB")
    print(f"bootstrap_classwise_ece         {t_cw * 1e3:9.1f} ms   peak {peak_cw / mib:7.1f} MiB")
    print(f"ece loop, {a.loop} resamples          {t_loop * 1e3:9.1f} ms   peak {peak_loop / mib:7.1f} MiB")
    print(f"ece loop, extrapolated to {a.boot}  {t_naive * 1e3:9.1f} ms")
    print(f"speed-up (loop / vectorised)    {t_naive / t_vec:9.1f}x")
    print(f"max |vectorised - loop| on the first {a.loop}: {err:.2e}")


if __name__ == "__main__":
    main()
