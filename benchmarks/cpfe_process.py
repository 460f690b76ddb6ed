"""The whole `mhaudit audit cpfe` process against a fairscope 0.3.0 script on the same files (issue 15, item 5).

Not a test. Files are SYNTHETIC predictions (generated here, not real data) shaped as researchers publish
them: one CSV per model, seed and platform, integer labels, one `prob_<i>` column per class, no ids.

- small: one model x 2 platforms, 6,257 rows (reddit, the reference) + 2,883 (twitter): the sizes of
  the CPFE paper's GoEmotions and dair-ai test sets. Ours: `mhaudit audit cpfe` with figures and the
  HTML report, B = 2000. Peer: `python benchmarks/cpfe_process.py --fairscope FILES`, a process that
  reads the same CSVs with pandas, runs `CPFEProtocol(..., n_boot=2000).run()` and writes its report
  as JSON (fairscope has no command line of its own).
- large: 20 model-seeds (4 models x 5 seeds) x the same 2 platforms (182,800 rows), ours only (goal:
  under 12 s including the report).

Runs alternate ours, fairscope, ours, ... so a drifting machine affects both; medians of --runs, with the
1-minute load average before and after each side (and the CPU time, user + system, which load inflates less).

    python benchmarks/cpfe_process.py [--runs 5] [--skip-fairscope] [--skip-large]
    python benchmarks/cpfe_process.py --compare SRC_A SRC_B  # two checkouts' src/, alternating, small files only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CLASSES = ["normal", "depression", "anxiety", "stress"]
# platform: rows, class priors, separation of the true class's logit, per-class logit bias (the shift)
PLATFORMS = {"reddit": (6257, [0.40, 0.25, 0.20, 0.15], 2.0, [0.0, 0.0, 0.0, 0.0]),
             "twitter": (2883, [0.55, 0.15, 0.10, 0.20], 0.9, [-0.4, 0.5, 0.0, 0.2])}
MODELS = {"bert": (1.0, 1.6), "distilbert": (0.9, 1.3), "mentalbert": (1.15, 1.8), "roberta": (1.05, 1.4)}
SEEDS = [0, 1, 2, 3, 4]
N_BOOT = 2000


def write_files(folder: Path, models: dict, seeds: list[int], seed: int = 20241202) -> list[Path]:
    """One CSV per model, seed and platform: label (integer), prob_0..prob_3; SYNTHETIC."""
    rng = np.random.default_rng(seed)
    paths = []
    for platform, (n, priors, separation, bias) in PLATFORMS.items():
        y = rng.choice(len(CLASSES), size=n, p=priors)
        shared = rng.normal(size=(n, len(CLASSES)))  # example difficulty common to every model
        for model, (factor, scale) in models.items():
            for s in seeds:
                z = 0.7 * shared + 0.7 * rng.normal(size=(n, len(CLASSES))) + np.asarray(bias)
                z[np.arange(n), y] += separation * factor
                z *= scale
                p = np.exp(z - z.max(axis=1, keepdims=True))
                p /= p.sum(axis=1, keepdims=True)
                frame = pd.DataFrame({"label": y, **{f"prob_{c}": p[:, c].round(6) for c in range(len(CLASSES))}})
                path = folder / f"{model}_seed{s}_{platform}.csv"
                frame.to_csv(path, index=False)
                paths.append(path)
    return paths


def fairscope_process(files: list[str], out: str) -> None:
    """The peer's whole process: read the CSVs, run CPFEProtocol per (model, seed), write JSON."""
    from fairscope.nlp.cross_platform import CPFEProtocol

    runs: dict[tuple[str, str], dict] = {}
    for name in files:
        model, seed, platform = Path(name).stem.rsplit("_", 2)
        frame = pd.read_csv(name)
        probs = frame[[f"prob_{c}" for c in range(len(CLASSES))]].to_numpy()
        runs.setdefault((model, seed), {})[platform] = {"y_true": frame["label"].to_numpy(), "probs": probs}
    report = {}
    for (model, seed), data in runs.items():
        result = CPFEProtocol(data, "reddit", len(CLASSES), n_bins=10, n_boot=N_BOOT).run()
        report[f"{model} {seed}"] = {"performance": result.performance, "significance": result.significance,
                                     "equity": result.equity}
    Path(out).write_text(json.dumps(report, default=str))


def wall(command: list[str], env: dict | None = None, cpu: list | None = None) -> float:
    """The command's wall time; its CPU time (user + system, all threads) appended to `cpu` when given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:4])} ... failed: {done.stderr[-2000:]}")
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def with_bytecode_written(env: dict | None) -> dict:
    """`env` (default: this process's) without PYTHONDONTWRITEBYTECODE, for the warm-up run: every side then runs
    from cached bytecode, as an installed package does (pip compiles it; an editable checkout writes it on its first
    run). Where that variable is set, as on this machine, each run of ours recompiled its ~80 modules (~0.05 s)
    while fairscope's came compiled from pip."""
    return {name: value for name, value in (env or os.environ).items() if name != "PYTHONDONTWRITEBYTECODE"}


def ours(files: list[Path], out: Path) -> list[str]:
    mhaudit = shutil.which("mhaudit") or "mhaudit"
    return [mhaudit, "audit", "cpfe", "--predictions", *map(str, files), "--name-pattern",
            "{model}_seed{seed}_{platform}", "--reference", "reddit",
            "--n-boot-significance", str(N_BOOT), "--out", str(out)]


def side_by_side(sides: dict[str, list[str]], runs: int, envs: dict[str, dict] | None = None) -> dict[str, dict]:
    envs = envs or {}
    for name, command in sides.items():  # warm the file cache, the imports and the bytecode cache
        wall(command, with_bytecode_written(envs.get(name)))
    times = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    load = {name: [] for name in sides}
    for _ in range(runs):
        for name, command in sides.items():
            load[name].append(os.getloadavg()[0])
            times[name].append(wall(command, envs.get(name), cpu[name]))
            load[name].append(os.getloadavg()[0])
    return {name: {"median_s": statistics.median(t), "runs_s": [round(x, 2) for x in t],
                   "cpu_median_s": statistics.median(cpu[name]), "load_1min": [min(load[name]), max(load[name])]}
            for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-fairscope", action="store_true")
    parser.add_argument("--skip-large", action="store_true", help="only the 1 model x 2 platforms files")
    parser.add_argument("--compare", nargs=2, metavar="SRC", help="time `python -m mhaudit` from two src/ folders "
                        "(PYTHONPATH), alternating, on the small files; nothing else")
    parser.add_argument("--fairscope", nargs="+", metavar="FILE", help=argparse.SUPPRESS)  # the peer's process
    parser.add_argument("--fairscope-out", default=os.devnull, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fairscope:
        fairscope_process(args.fairscope, args.fairscope_out)
        return
    if args.compare:
        compare(args.compare, args.runs)
        return
    print(f"whole-process CPFE, SYNTHETIC prediction files; {os.cpu_count()} CPUs; median of {args.runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "small").mkdir()
        (tmp / "large").mkdir()
        small = write_files(tmp / "small", {"bert": MODELS["bert"]}, [0])
        large = write_files(tmp / "large", MODELS, SEEDS)
        sides = {"ours: mhaudit audit cpfe (1 model x 2 platforms)": ours(small, tmp / "out-small")}
        if not args.skip_fairscope:
            sides["fairscope 0.3.0: read CSVs, CPFEProtocol.run(), JSON"] = [
                sys.executable, __file__, "--fairscope", *map(str, small), "--fairscope-out", str(tmp / "fs.json")]
        results = side_by_side(sides, args.runs)
        if not args.skip_large:
            results |= side_by_side({"ours: mhaudit audit cpfe (20 model-seeds x 2 platforms, 182,800 rows)":
                                     ours(large, tmp / "out-large")}, args.runs)
    for name, r in results.items():
        print(f"{name}: median {r['median_s']:.2f} s (CPU {r['cpu_median_s']:.2f} s), runs {r['runs_s']}, load "
              f"{r['load_1min'][0]:.2f}-{r['load_1min'][1]:.2f}")
    names = list(results)
    if not args.skip_fairscope:
        ratio = results[names[1]]["median_s"] / results[names[0]]["median_s"]
        print(f"ratio fairscope / ours (1 model x 2 platforms): {ratio:.1f}x (goal >= 25x: "
              f"{'MET' if ratio >= 25 else 'NOT MET'})")
    if not args.skip_large:
        large_s = results[names[-1]]["median_s"]
        print(f"20 model-seeds x 2 platforms: {large_s:.2f} s (goal < 12 s: {'MET' if large_s < 12 else 'NOT MET'})")


def compare(sources: list[str], runs: int) -> None:
    """`mhaudit audit cpfe` on the small files from two source trees, alternating A, B, A, ...: median of `runs`
    each, the 1-minute load around each side, and B's time as a share of A's."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = write_files(tmp, {"bert": MODELS["bert"]}, [0])
        command = [sys.executable, "-m", "mhaudit", *ours(small, tmp / "out")[1:]]
        envs = {src: {**os.environ, "PYTHONPATH": str(Path(src).resolve())} for src in sources}
        results = side_by_side({src: command for src in sources}, runs, envs)
    for src, r in results.items():
        print(f"{src}: median {r['median_s']:.2f} s (CPU {r['cpu_median_s']:.2f} s), runs {r['runs_s']}, load "
              f"{r['load_1min'][0]:.2f}-{r['load_1min'][1]:.2f}")
    a, b = (results[src]["median_s"] for src in sources)
    print(f"B / A: {b / a:.2f} ({a / b:.2f}x faster); CPU B / A: "
          f"{results[sources[1]]['cpu_median_s'] / results[sources[0]]['cpu_median_s']:.2f}")


if __name__ == "__main__":
    main()
