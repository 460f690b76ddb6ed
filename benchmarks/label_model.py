"""Label models on a million items: mhaudit's three methods beside crowd-kit's (issue 47; not a test).

SYNTHETIC planted votes: `--items` items (1,000,000), 8 binary sources with accuracies 0.55-0.9 and coverages
0.3-1.0, prevalence 0.2 (each source right with its accuracy whatever the class, votes on a random share of the
items). Each method runs in a child process of its own on the same matrix, read from a .npy file; reported: the
wall time of the call (ours: from the vote matrix, checks included; crowd-kit: from its long task/worker/label
frame, built before the clock starts), the peak resident memory above the child's memory once the input is
loaded (`ru_maxrss`), the iterations, and the largest error of the estimated source accuracies against the
realised ones (each source's share of correct votes). crowd-kit runs with its defaults (DawidSkene: 100
iterations at most, tol 1e-5 on its ELBO per vote); ours with theirs (200, relative tol 1e-7).

    OMP_NUM_THREADS=2 python benchmarks/label_model.py [--items 1000000] [--no-crowdkit]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ACCURACIES = np.array([0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9])
COVERAGES = np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
OURS = ("majority", "dawid-skene", "label-model")
THEIRS = ("crowdkit-majority", "crowdkit-dawid-skene")


def planted(n_items: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC votes (int8, -1 = abstain) and each source's realised accuracy."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < 0.2).astype(np.int8)
    correct = rng.random((n_items, len(ACCURACIES))) < ACCURACIES
    voted = rng.random(correct.shape) < COVERAGES
    votes = np.where(voted, np.where(correct, truth[:, None], 1 - truth[:, None]), -1).astype(np.int8)
    return votes, (correct & voted).sum(axis=0) / voted.sum(axis=0)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(method: str, path: str) -> dict:
    """One method on the saved matrix, in this (child) process."""
    votes = np.load(path)
    if method.startswith("crowdkit"):
        import warnings

        import pandas as pd
        from crowdkit.aggregation import DawidSkene, MajorityVote

        warnings.simplefilter("ignore")  # crowd-kit 1.4.2 uses pandas' deprecated inplace= and copy=
        items, sources = np.nonzero(votes != -1)
        frame = pd.DataFrame({"task": items, "worker": sources, "label": votes[items, sources].astype(np.int64)})
        base, start = peak_mib(), time.perf_counter()
        model = (DawidSkene() if method.endswith("dawid-skene") else MajorityVote()).fit(frame)
        seconds = time.perf_counter() - start
        if method.endswith("dawid-skene"):
            errors = model.errors_
            accuracy = [
                float(errors.loc[(s, 0), 0] * model.priors_[0] + errors.loc[(s, 1), 1] * model.priors_[1])
                for s in range(votes.shape[1])
            ]  # their prior-weighted diagonal: their per-item shares are not kept
            n_iter = len(model.loss_history_)
        else:
            accuracy, n_iter = list(map(float, model.skills_.sort_index())), 0
        return {"seconds": seconds, "peak": peak_mib() - base, "n_iter": n_iter, "accuracy": accuracy}
    from mhaudit.stats.label_model import combine_votes

    base, start = peak_mib(), time.perf_counter()
    fit = combine_votes(votes, 2, method)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak": peak_mib() - base, "n_iter": fit.n_iter, "accuracy": fit.accuracy.tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--no-crowdkit", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "NPY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        json.dump(run_one(*args.one), sys.stdout)
        return
    votes, realised = planted(args.items)
    methods = OURS if args.no_crowdkit else OURS + THEIRS
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "votes.npy")
        np.save(path, votes)
        for method in methods:
            child = [sys.executable, __file__, "--one", method, path]
            out = subprocess.run(child, capture_output=True, text=True, check=True, env=os.environ.copy())
            results[method] = json.loads(out.stdout)
    threads = os.environ.get("OMP_NUM_THREADS")
    print(f"{args.items:,} SYNTHETIC items x {votes.shape[1]} sources, OMP_NUM_THREADS={threads}")
    print("| method | seconds | peak MiB | iterations | max accuracy error |")
    print("|---|---:|---:|---:|---:|")
    for method, r in results.items():
        error = np.max(np.abs(np.array(r["accuracy"]) - realised))
        print(f"| {method} | {r['seconds']:.2f} | {r['peak']:.0f} | {r['n_iter']} | {error:.4f} |")
    for ours, theirs in [("majority", "crowdkit-majority"), ("dawid-skene", "crowdkit-dawid-skene")]:
        if theirs in results:
            print(f"{theirs} / {ours}: {results[theirs]['seconds'] / results[ours]['seconds']:.0f}x the time")


if __name__ == "__main__":
    main()
