"""The test suite on a busy machine (issue 44): a fresh clone's whole suite, and the annotation fuzz test many
times, each beside --busy processes that spin one core each (`python3 -c "while True: pass"`).

    python benchmarks/busy_suite.py [--suites 3] [--fuzz 20] [--busy 3] [--clone /tmp/mhaudit-busy]

Clones HEAD of this checkout into --clone (with ../shared beside it, as CI has it: a link to this checkout's
../shared), runs `CI=true .ci/run` there once (it makes the venv and runs the suite: a skipped test fails), then
--suites - 1 more runs of the README's test command in that venv, then --fuzz runs of
tests/weak_supervision/annotate/test_annotate_fuzz.py, all with the load spinning. Prints one line per run: wall
time, exit status, the 1-minute load average at its end, and pytest's last line. Exits non-zero when any run
failed. Started from a background job? The runs restore SIGINT first (a shell's background job ignores it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
FUZZ = "tests/weak_supervision/annotate/test_annotate_fuzz.py"


@contextlib.contextmanager
def spinning(n: int):
    """n processes, each spinning one core until the block ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def timed(name: str, command: list[str], cwd: Path) -> bool:
    env = {**os.environ, "CI": "true"}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seconds = time.perf_counter() - start
    last = next((line for line in reversed(done.stdout.splitlines()) if line.strip()), "")
    print(f"{name}: {seconds:7.1f} s, rc {done.returncode}, load {os.getloadavg()[0]:.1f}; {last}", flush=True)
    if done.returncode:
        print(done.stdout[-4000:] + done.stderr[-2000:], flush=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=3)
    parser.add_argument("--fuzz", type=int, default=20)
    parser.add_argument("--busy", type=int, default=3)
    parser.add_argument("--clone", type=Path, default=Path("/tmp/mhaudit-busy/mhaudit"))
    args = parser.parse_args()
    if args.clone.exists():
        sys.exit(f"{args.clone} exists; remove it or name another --clone")
    args.clone.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(HERE), str(args.clone)], check=True)
    shared = args.clone.parent / "shared"
    if not shared.exists():
        shared.symlink_to((HERE.parent / "shared").resolve())
    python = str(args.clone / ".venv" / "bin" / "python")
    ok = []
    with spinning(args.busy):
        print(f"{args.busy} spinning processes; {os.cpu_count()} cores; clone of "
              f"{subprocess.check_output(['git', 'rev-parse', '--short', 'HEAD'], cwd=HERE, text=True).strip()}")
        for k in range(args.suites):
            command = ["bash", ".ci/run"] if k == 0 else [python, "-m", "pytest", "-q"]
            ok.append(timed(f"suite {k + 1}", command, args.clone))
        for k in range(args.fuzz):
            ok.append(timed(f"fuzz {k + 1}", [python, "-m", "pytest", "-q", "-n0", FUZZ],
                            args.clone))
    print(f"{sum(ok)} of {len(ok)} runs passed")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
