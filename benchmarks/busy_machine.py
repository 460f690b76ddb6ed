"""The monitor and the estimate on a busy machine (issue 33): wall-clock idle and beside competing CPU load, the
slowdown against idle, and whether the numbers are the same.

    python benchmarks/busy_machine.py [--busy 2] [--windows 30] [--per-window 1200] [--one-thread] [--quick]

Two workloads, each run in its own process with the user's default thread settings (OMP_NUM_THREADS and
MHAUDIT_THREADS removed from its environment), first idle, then beside --busy processes that each spin one core
(`while True: pass`):
- monitor: `audit_monitor` (figures off, the CLI's --n-boot 200) on --windows daily windows of --per-window
  SYNTHETIC scored posts (mhaudit.synthetic.simulate_stream drawn from the synthetic corpus's tweets, scored by a
  tfidf-lr trained on them, as tests/audits/test_monitor.py; prevalence x2 from two thirds of the way). Timed:
  the analysis alone, the inputs read beforehand.
- estimate: `mhaudit audit estimate` on one SYNTHETIC pair (benchmarks/estimate_speed.py's: 6,257 reference +
  2,883 target rows, 4 classes, 1,000 draws). Timed: the whole command, start-up included.
The tables (the monitor's windows, every table of the estimate's report.json) must equal the idle run's. CPU
seconds (the process's, all threads) barely move with the load when no thread spins against the others: the
wall-clock slowdown is then the share of the cores the load leaves (3 runnable processes on 2 cores: 1.5x).
--one-thread: a third run under load with OMP_NUM_THREADS=1 (the workaround issue 33 found): as fast as the
default when no stage is left unbudgeted. --quick: 6 windows of 300 posts and 200 draws, a smoke run. Prints
the 1-minute load average around each run: other processes on the machine add to the load. --src times another
checkout (e.g. one from before the thread budgets) on the same inputs, prepared with this one.
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

import pandas as pd

SRC = Path(__file__).resolve().parents[1] / "src"
CLASSES = ["other", "depression"]


def monitor_inputs(work: Path, windows: int, per_window: int) -> None:
    """SYNTHETIC scored posts (the scored_posts columns) and the reference predictions, as parquet files."""
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
    from mhaudit.tables.predictions import logit_column
    from synthetic_monitor import tweet_model

    model, texts = tweet_model(work)
    posts = simulate_stream(texts["depression"], texts["other"],
                            StreamConfig(n_windows=windows, per_window=per_window, change_at=2 * windows // 3, seed=1))
    logits = model.predict_logits([p["text"] for p in posts])
    scored = pd.DataFrame({"uri": [p["uri"] for p in posts], "created_at": [p["created_at"] for p in posts],
                           "length": [len(p["text"]) for p in posts], "langs": [list(p["langs"]) for p in posts],
                           "categories": [list(p["categories"]) for p in posts]})
    for c, name in enumerate(CLASSES):
        scored[logit_column(name)] = logits[:, c]
    scored.to_parquet(work / "posts.parquet")


def estimate_inputs(work: Path) -> None:
    import mhaudit as mh

    mh.simulate_scores(6257, [0.4, 0.2, 0.2, 0.2], platform="home", seed=0).frame.to_parquet(
        work / "est_reference.parquet")
    mh.simulate_scores(2883, [0.25] * 4, platform="away", seed=1, labelled=False).frame.to_parquet(
        work / "est_target.parquet")


def monitor_worker(work: Path, out: Path, n_boot: int) -> float:
    """Seconds of `audit_monitor` on the prepared inputs; its window table to out/windows.csv."""
    from mhaudit.audits.monitor import MonitorInputs, MonitorOptions, audit_monitor
    from mhaudit.tables.prediction_files import read_predictions

    posts = pd.read_parquet(work / "posts.parquet")
    posts["langs"] = posts["langs"].map(list)
    posts["categories"] = posts["categories"].map(list)
    reference = read_predictions([str(work / "reference.parquet")], classes=CLASSES)
    inputs = MonitorInputs(posts, reference, "tfidf-lr", "SYNTHETIC", tuple(CLASSES), synthetic=True)
    options = MonitorOptions(window="1d", positive="depression", n_boot=n_boot, figures=False)
    start = time.perf_counter()
    result = audit_monitor(inputs, options)
    seconds = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    result.sections[0].tables["windows"].to_csv(out / "windows.csv", index=False)
    return seconds


def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MHAUDIT_THREADS")}
    return env | {"PYTHONPATH": str(SRC)} | extra  # SRC: this checkout's, or --src


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_monitor(work: Path, out: Path, args, extra: dict) -> tuple[float, float]:
    """Wall-clock seconds of the analysis, and CPU seconds of its whole process (all threads, start-up too)."""
    command = [sys.executable, __file__, "--worker", str(work), "--out", str(out), "--n-boot-monitor",
               str(args.n_boot_monitor)]
    cpu = _cpu_children()
    done = subprocess.run(command, env=_env(extra), check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1]), _cpu_children() - cpu


def run_estimate(work: Path, out: Path, args, extra: dict) -> tuple[float, float]:
    """Wall-clock and CPU seconds of the whole command."""
    command = [sys.executable, "-m", "mhaudit", "audit", "estimate", "--reference", str(work / "est_reference.parquet"),
               "--target", str(work / "est_target.parquet"), "--out", str(out), "--n-boot", str(args.n_boot)]
    start, cpu = time.perf_counter(), _cpu_children()
    subprocess.run(command, env=_env(extra), check=True, capture_output=True, text=True)
    return time.perf_counter() - start, _cpu_children() - cpu


def tables(out: Path) -> dict[str, pd.DataFrame]:
    if (out / "windows.csv").exists():
        return {"windows": pd.read_csv(out / "windows.csv")}
    report = json.loads((out / "report.json").read_text())
    return {f"{s['title']}/{name}": pd.DataFrame(rows) for s in report["sections"]
            for name, rows in s.get("tables", {}).items()}


def same(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> str:
    """'equal', or the first table that differs."""
    if a.keys() != b.keys():
        return f"tables differ: {sorted(set(a) ^ set(b))}"
    for name in a:
        try:
            pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)
        except AssertionError:
            return f"table {name} differs"
    return "equal"


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="competing processes, one spinning core each")
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--per-window", type=int, default=1200)
    parser.add_argument("--n-boot", type=int, default=1000, help="the estimate's bootstrap draws")
    parser.add_argument("--n-boot-monitor", type=int, default=200, help="each window's bootstrap draws")
    parser.add_argument("--quick", action="store_true", help="6 windows of 300 posts, 200 draws: a smoke run")
    parser.add_argument("--one-thread", action="store_true", help="also under load with OMP_NUM_THREADS=1")
    parser.add_argument("--src", help="the src/ folder of another checkout to time (default: this one's)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.src:
        global SRC
        SRC = Path(args.src).resolve()
    if args.worker:
        print(monitor_worker(Path(args.worker), Path(args.out), args.n_boot_monitor))
        return 0
    if args.quick:
        args.windows, args.per_window, args.n_boot = 6, 300, 200
    with tempfile.TemporaryDirectory(prefix="busy-machine-") as folder:
        work = Path(folder)
        monitor_inputs(work, args.windows, args.per_window)
        estimate_inputs(work)
        print(f"SYNTHETIC inputs; {os.cpu_count()} cores; monitor: {args.windows} windows x {args.per_window:,} posts, "
              f"{args.n_boot_monitor} draws a window; estimate: one pair, 6,257 + 2,883 rows, {args.n_boot:,} draws")
        loads = [("idle", 0, {}), ("busy", args.busy, {})]
        if args.one_thread:  # the workaround, for comparison: every pool on one thread from the start
            loads.append(("busy, OMP_NUM_THREADS=1", args.busy, {"OMP_NUM_THREADS": "1"}))
        seconds: dict[tuple[str, str], float] = {}
        for load, n_busy, extra in loads:
            spinning = busy(n_busy)
            try:
                time.sleep(1 if spinning else 0)
                for kind, run in (("monitor", run_monitor), ("estimate", run_estimate)):
                    before, out = os.getloadavg()[0], work / f"{load}-{kind}"
                    seconds[kind, load], cpu = run(work, out, args, extra)
                    verdict = "" if load == "idle" else \
                        f"; tables vs idle: {same(tables(work / f'idle-{kind}'), tables(out))}"
                    ratio = "" if load == "idle" else f" ({seconds[kind, load] / seconds[kind, 'idle']:.2f}x idle)"
                    print(f"  {kind:8} {load} ({n_busy} busy): {seconds[kind, load]:.1f} s{ratio}, CPU {cpu:.1f} s; "
                          f"load average {before:.2f} -> {os.getloadavg()[0]:.2f}{verdict}", flush=True)
            finally:
                for process in spinning:
                    process.kill()
                    process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
