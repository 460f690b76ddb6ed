"""Cost as work grows: `audit cpfe`, `audit estimate` and the certification design at 10k, 100k and 1M rows (issue 31.4).

Not a test. Files are SYNTHETIC predictions (generated here, not real data) shaped as researchers publish
them, 4 classes, 2 platforms (reddit, the reference, and twitter), the same rows per platform:

- cpfe: one CSV per platform for one model, integer labels, `prob_<i>` columns, no ids
  (`mhaudit audit cpfe --name-pattern {model}_seed{seed}_{platform}`);
- estimate, per run (CBPE, ATC, DoC, the shift diagnostic): the same CSVs, one run;
- estimate with `--no-per-run` (the ensemble estimate, the agreement line) and the certification design:
  one Parquet per platform holding `--runs` runs of one model (columns id, model, seed, label,
  prob_0..prob_3), the runs scoring the same ids; an items table (id, text) for the target's posts.

Each command runs as its own process (the real CLI, `python -m mhaudit ...`), one after another, with a
per-command timeout so a blow-up is reported, not hung. Its wall time, and its CPU time and peak RSS from
os.wait4 on that child (ru_utime + ru_stime, ru_maxrss; its own children included). The growth exponent is
the log-log slope of wall time (and of CPU time and peak RSS) between consecutive sizes; start-up (imports, about 1-2 s) flattens the first
slope. Medians of --repeats (one run at the largest size unless --repeats-largest). A command that failed or
timed out at one size is not run at the larger ones.

    python benchmarks/scaling.py [--sizes 10000,100000,1000000] [--runs 5] [--repeats 3] [--timeout 900]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

CLASSES = 4
# platform: class priors, separation of the true class's logit, per-class logit bias (the shift)
PLATFORMS = {"reddit": ([0.40, 0.25, 0.20, 0.15], 2.0, [0.0, 0.0, 0.0, 0.0]),
             "twitter": ([0.55, 0.15, 0.10, 0.20], 0.9, [-0.4, 0.5, 0.0, 0.2])}
GOAL_CPFE_S, GOAL_CPFE_GIB = 120.0, 4.0


def write_files(folder: Path, n: int, runs: int, seed: int = 20261203) -> dict[str, Path]:
    """SYNTHETIC predictions of `runs` runs of one model on n rows per platform, and the target's items."""
    rng = np.random.default_rng(seed)
    paths = {}
    for platform, (priors, separation, bias) in PLATFORMS.items():
        y = rng.choice(CLASSES, size=n, p=priors)
        shared = rng.normal(size=(n, CLASSES)).astype(np.float32)  # example difficulty common to every run
        frames = []
        for run in range(runs):
            z = 0.7 * shared + 0.7 * rng.normal(size=(n, CLASSES)).astype(np.float32) + np.float32(bias)
            z[np.arange(n), y] += separation
            z *= 1.5
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            probs = {f"prob_{c}": p[:, c].astype(np.float64).round(6) for c in range(CLASSES)}
            if run == 0:  # the cpfe file: as published, a CSV without ids
                paths[f"cpfe_{platform}"] = folder / f"bert_seed0_{platform}.csv"
                pd.DataFrame({"label": y, **probs}).to_csv(paths[f"cpfe_{platform}"], index=False)
            frames.append(pd.DataFrame({"id": [f"{platform}-{i}" for i in range(n)], "model": "bert", "seed": run,
                                        "label": y, **probs}))
        paths[platform] = folder / f"{platform}_runs.parquet"
        pd.concat(frames, ignore_index=True).to_parquet(paths[platform], index=False)
        if platform == "twitter":
            paths["items"] = folder / "twitter_items.parquet"
            pd.DataFrame({"id": frames[0]["id"], "text": [f"synthetic post {i}" for i in range(n)]}).to_parquet(
                paths["items"], index=False)
    return paths


def commands(paths: dict[str, Path], out: Path) -> dict[str, list[str]]:
    mh = [sys.executable, "-m", "mhaudit"]
    return {
        "audit cpfe": [*mh, "audit", "cpfe", "--predictions", str(paths["cpfe_reddit"]), str(paths["cpfe_twitter"]),
                       "--name-pattern", "{model}_seed{seed}_{platform}", "--reference", "reddit",
                       "--out", str(out / "cpfe")],
        "audit estimate (1 run)": [*mh, "audit", "estimate", "--reference", str(paths["cpfe_reddit"]),
                                   "--target", str(paths["cpfe_twitter"]), "--out", str(out / "estimate-1")],
        "audit estimate --no-per-run (runs: ensemble)": [
            *mh, "audit", "estimate", "--reference", str(paths["reddit"]), "--target", str(paths["twitter"]),
            "--no-per-run", "--out", str(out / "estimate-runs")],
        "labels sample --strategy estimate --certify": [
            *mh, "labels", "sample", "--strategy", "estimate", "--predictions", str(paths["twitter"]),
            "--reference", str(paths["reddit"]), "--items", str(paths["items"]), "--task", "mh", "--budget", "400",
            "--certify", "bert:0", "--out", str(out / "sample.parquet")],
    }


def measure(command: list[str], timeout: float) -> dict:
    """Wall seconds, CPU seconds (user + system) and peak RSS (bytes) of one child process, or why it did not
    finish. On a shared machine the CPU seconds say more than the wall time: the child gets a share of the cores."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    timer = threading.Timer(timeout, lambda: os.killpg(child.pid, signal.SIGKILL))
    timer.start()
    stderr = child.stderr.read()  # until the child closes it (exits)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    timer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    failed = None
    if seconds >= timeout:
        failed = f"timed out after {timeout:.0f} s"
    elif child.returncode:
        failed = f"exit {child.returncode}: {stderr.decode(errors='replace').strip()[-300:]}"
    return {"s": seconds, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024, "failed": failed}


def slope(a: float, b: float, n_a: int, n_b: int) -> float:
    return math.log(b / a) / math.log(n_b / n_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="rows per platform, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="runs of the model in the estimate's files")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-largest", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    parser.add_argument("--only", nargs="*", help="command names to run (default all)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"scaling, SYNTHETIC predictions, 4 classes x 2 platforms, {args.runs} runs in the estimate's files; "
          f"{os.cpu_count()} CPUs; load at start {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[str, dict[int, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            begun = time.perf_counter()
            paths = write_files(folder, n, args.runs)
            print(f"{n:,} rows per platform: files written in {time.perf_counter() - begun:.1f} s", flush=True)
            for name, command in commands(paths, folder / "out").items():
                if args.only and name not in args.only or any(r["failed"] for r in results.get(name, {}).values()):
                    continue
                seen, loads = [], [os.getloadavg()[0]]
                for _ in range(args.repeats_largest if n == sizes[-1] else args.repeats):
                    seen.append(measure(command, args.timeout))
                    loads.append(os.getloadavg()[0])
                    if seen[-1]["failed"]:
                        break
                failed = next((r["failed"] for r in seen if r["failed"]), None)
                row = {"s": statistics.median(r["s"] for r in seen), "cpu": statistics.median(r["cpu"] for r in seen),
                       "rss": max(r["rss"] for r in seen),
                       "runs_s": [round(r["s"], 1) for r in seen], "load": (min(loads), max(loads)), "failed": failed}
                results.setdefault(name, {})[n] = row
                print(f"  {name}: {row['s']:.1f} s (runs {row['runs_s']}), CPU {row['cpu']:.1f} s, "
                      f"peak RSS {row['rss'] / 2**30:.2f} GiB, "
                      f"load {row['load'][0]:.2f}-{row['load'][1]:.2f}" + (f"  FAILED: {failed}" if failed else ""),
                      flush=True)
            for path in folder.glob("*"):
                if path.is_file():
                    path.unlink()
    print("\n| command | " + " | ".join(f"{n:,} rows: wall, CPU, peak RSS" for n in sizes)
          + " | exponent: wall | CPU | memory |")
    for name, by_size in results.items():
        cells = [f"{r['s']:.1f} s, {r['cpu']:.1f} s, {r['rss'] / 2**30:.2f} GiB" + (" (failed)" if r["failed"] else "")
                 if (r := by_size.get(n)) else "-" for n in sizes]
        done = [n for n in sizes if n in by_size and not by_size[n]["failed"]]
        pairs = list(zip(done, done[1:]))
        t_exp = ", ".join(f"{slope(by_size[a]['s'], by_size[b]['s'], a, b):.2f}" for a, b in pairs)
        c_exp = ", ".join(f"{slope(by_size[a]['cpu'], by_size[b]['cpu'], a, b):.2f}" for a, b in pairs)
        m_exp = ", ".join(f"{slope(by_size[a]['rss'], by_size[b]['rss'], a, b):.2f}" for a, b in pairs)
        print(f"| {name} | " + " | ".join(cells) + f" | {t_exp} | {c_exp} | {m_exp} |")
    cpfe = results.get("audit cpfe", {}).get(sizes[-1])
    if cpfe and sizes[-1] >= 1_000_000:
        met = not cpfe["failed"] and cpfe["s"] <= GOAL_CPFE_S and cpfe["rss"] <= GOAL_CPFE_GIB * 2**30
        print(f"audit cpfe at {sizes[-1]:,} rows per platform: {cpfe['s']:.1f} s, {cpfe['rss'] / 2**30:.2f} GiB "
              f"(goal <= {GOAL_CPFE_S:.0f} s and <= {GOAL_CPFE_GIB:.0f} GiB: {'MET' if met else 'NOT MET'})")


if __name__ == "__main__":
    main()
