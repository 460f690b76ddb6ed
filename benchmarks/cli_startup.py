"""`mhaudit --help`, whole process, against its floor: a Python that imports only what the CLI cannot do
without (typer and rich). No peer CLI does the same job, so the floor is the yardstick (issue 15: under
0.5 s). Runs alternate A, B, A, B ... so a drifting machine affects both; medians of --runs, with the
1-minute load average before and after.

    python benchmarks/cli_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "mhaudit --help": [shutil.which("mhaudit") or "mhaudit", "--help"],
    "floor: python -c 'import typer, rich.console'": [sys.executable, "-c", "import typer, rich.console"],
    "python -c pass": [sys.executable, "-c", "pass"],
}


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    for command in COMMANDS.values():  # warm the file cache
        wall(command)
    load_before = os.getloadavg()[0]
    times = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, command in COMMANDS.items():
            times[name].append(wall(command))
    load_after = os.getloadavg()[0]
    floor = statistics.median(times["floor: python -c 'import typer, rich.console'"])
    print(f"{runs} runs each, alternating; load average {load_before:.2f} before, {load_after:.2f} after")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:48s} median {median:.3f} s  (min {min(values):.3f}, max {max(values):.3f})  "
              f"{median / floor:.2f}x the floor")


if __name__ == "__main__":
    main()
