"""Speed of the label-free estimate: one reference x target pair (6,257 + 2,883 rows, 4 classes, 1,000
bootstrap draws) through `estimate_pair`, and 20 such pairs through `mh.audit_estimate`, side by side with an
older checkout of mhaudit (alternating, each run in its own process with that checkout's sources first).

    git worktree add /tmp/est-old e9c6764
    python benchmarks/estimate_speed.py --old /tmp/est-old/src [--repeats 5] [--pairs 20] [--n-boot 1000]
                                        [--kinds pair,audit,cli]

`cli` times the whole `mhaudit audit estimate` process (report and figures included) on files shaped as
researchers publish them (one CSV per platform, integer labels, prob_ columns, no ids): one target, then all.

SYNTHETIC scores (mhaudit.synthetic.simulate_scores). BLAS and OpenMP get one thread each in both
(OMP_NUM_THREADS=1), so a busy machine compares like with like. Prints the median wall-clock and CPU seconds
of each (CPU seconds move less with the machine's load), the ratios and the 1-minute load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def worker(kind: str, n_ref: int, n_tgt: int, pairs: int, n_boot: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds for one pair (estimate_pair) or `pairs` targets (audit_estimate), inputs built beforehand."""
    import numpy as np
    import pandas as pd

    import mhaudit as mh
    from mhaudit.stats import pair_estimate

    ref = mh.simulate_scores(n_ref, [0.4, 0.2, 0.2, 0.2], platform="home", seed=0)
    targets = [mh.simulate_scores(n_tgt, [0.25, 0.25, 0.25, 0.25], platform=f"away{i}", seed=i + 1, labelled=False)
               for i in range(pairs if kind == "audit" else 1)]
    if kind == "pair":
        start, cpu = time.perf_counter(), time.process_time()
        cutoffs = {"seed": 0} if hasattr(pair_estimate, "TrustOptions") else \
            {"seed": 0, "domain_auc_cutoff": 0.6, "prior_gap_cutoff": 0.1}  # the cut-offs typed since issue 42
        if hasattr(pair_estimate, "reference_draws"):  # the reference's side of the draws apart (issue 31)
            reference = pair_estimate.reference_draws(ref.codes, ref.scores(), n_boot, np.random.default_rng(1))
            pair_estimate.estimate_pair(reference, targets[0].scores(), rng=np.random.default_rng(0), **cutoffs)
        else:
            pair_estimate.estimate_pair(ref.codes, ref.scores(), targets[0].scores(), n_boot=n_boot,
                                        rng=np.random.default_rng(0), **cutoffs)
        return time.perf_counter() - start, time.process_time() - cpu
    hidden = mh.PredictionSet(pd.concat([t.frame for t in targets], ignore_index=True), ref.classes)
    start, cpu = time.perf_counter(), time.process_time()
    mh.audit_estimate(mh.EstimateInputs(ref, hidden), mh.EstimateOptions(n_boot=n_boot, figures=False))
    return time.perf_counter() - start, time.process_time() - cpu


def write_files(folder: Path, n_ref: int, n_tgt: int, pairs: int) -> tuple[Path, list[Path]]:
    """SYNTHETIC: the reference and `pairs` targets as published-style CSVs."""
    import pandas as pd
    from scipy.special import softmax

    import mhaudit as mh

    def write(preds, name: str) -> Path:
        probs = softmax(preds.scores(), axis=1)
        columns = {f"prob_{c}": probs[:, c].round(6) for c in range(probs.shape[1])}
        frame = pd.DataFrame({"label": preds.codes, **columns})
        frame.to_csv(folder / name, index=False)
        return folder / name

    ref = write(mh.simulate_scores(n_ref, [0.4, 0.2, 0.2, 0.2], platform="home", seed=0), "home.csv")
    targets = [write(mh.simulate_scores(n_tgt, [0.25] * 4, platform=f"away{i}", seed=i + 1), f"away{i}.csv")
               for i in range(pairs)]
    return ref, targets


def timed_cli(src: str, ref: Path, targets: list[Path], out: Path, n_boot: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds (of the child) of one whole `mhaudit audit estimate` process."""
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-m", "mhaudit", "audit", "estimate", "--reference", str(ref), "--target",
               *map(str, targets), "--model", "bert", "--n-boot", str(n_boot), "--out", str(out)]
    before, start = os.times(), time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    wall, after = time.perf_counter() - start, os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def timed(src: str, kind: str, args) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--worker", kind, "--n-ref", str(args.n_ref), "--n-tgt", str(args.n_tgt),
               "--pairs", str(args.pairs), "--n-boot", str(args.n_boot)]
    wall, cpu = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout.split()[-2:]
    return float(wall), float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="the src/ folder of the checkout to compare with")
    parser.add_argument("--n-ref", type=int, default=6257)
    parser.add_argument("--n-tgt", type=int, default=2883)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--audit-repeats", type=int, default=1)
    parser.add_argument("--kinds", default="pair,audit", help="which to time: pair, audit or both")
    parser.add_argument("--worker", choices=["pair", "audit"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(*worker(args.worker, args.n_ref, args.n_tgt, args.pairs, args.n_boot))
        return 0
    sources = {"new": str(SRC)} | ({"old": args.old} if args.old else {})
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    folder = Path(tempfile.mkdtemp(prefix="estimate-speed-"))
    if "cli" in args.kinds.split(","):
        ref, targets = write_files(folder, args.n_ref, args.n_tgt, args.pairs)
    kinds = [("pair", args.repeats, None), ("audit", args.audit_repeats, None), ("cli", args.repeats, 1),
             ("cli", args.audit_repeats, args.pairs)]
    for kind, repeats, files in kinds:
        if kind not in args.kinds.split(","):
            continue
        seconds = {name: [] for name in sources}
        for _ in range(repeats):
            for name, src in sources.items():  # alternating, so both see the same load
                seconds[name].append(timed(src, kind, args) if kind != "cli" else
                                     timed_cli(src, ref, targets[:files], folder / f"out-{name}", args.n_boot))
        what = {"pair": "one pair", "audit": f"{args.pairs} pairs through audit_estimate",
                "cli": f"`mhaudit audit estimate`, whole process, {files} target file(s)"}[kind]
        print(f"{what}, {args.n_ref:,} + {args.n_tgt:,} rows, {args.n_boot:,} draws; load {os.getloadavg()[0]:.2f}")
        for unit, column in (("wall-clock", 0), ("CPU", 1)):
            median = {name: statistics.median(s[column] for s in runs) for name, runs in seconds.items()}
            line = ", ".join(f"{name} {median[name]:.2f} s (runs: {' '.join(f'{s[column]:.2f}' for s in runs)})"
                             for name, runs in seconds.items())
            ratio = f"; old / new {median['old'] / median['new']:.2f}" if "old" in median else ""
            print(f"  {unit} seconds, median: {line}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
