"""The fault battery's machinery: run a writer in a subprocess under one fault, and look at what it left.

Faults, each made real rather than mocked:

* ``kill-9``: the writer runs under tests/faults/driver.py, which stops it at a hook (the first rename of a
  temporary ``*.part`` file, or inside an SQLite transaction); the test then sends SIGKILL.
* ``corrupt-input``: the writer's input is cut in half (a Parquet file, a report.json, an SQLite file).
* ``read-only``: the output folder (and every folder in it) is chmod 0555. Root ignores file modes through
  CAP_DAC_OVERRIDE, so as root the writer runs under ``setpriv`` with CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and
  CAP_FOWNER dropped from its bounding set (Debian's util-linux, no mount and no other user needed; CI is root
  on Debian too). Not root: the chmod alone is enough.
* ``full-disk``: RLIMIT_FSIZE in the subprocess (SIGXFSZ ignored, as Python does anyway): a write past the limit
  fails with EFBIG, as a full disk fails with ENOSPC.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("driver.py")
SQLITE_SIDE_FILES = ("-wal", "-shm")  # SQLite's own files beside a WAL database while it is open
DROP_CAPS = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]


def env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def driver_command(writer_args: list[str], *, pause: str | None = None, marker: Path | None = None) -> list[str]:
    command = [sys.executable, str(DRIVER)]
    if pause:
        command += ["--pause", pause, "--marker", str(marker)]
    return command + writer_args


def run(
    writer_args: list[str], *, fsize: int | None = None, drop_caps: bool = False, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run the writer to its end (under a file-size limit, or without the capabilities that let root write)."""
    command = driver_command(writer_args)
    if drop_caps and os.geteuid() == 0:
        command = [*DROP_CAPS, *command]

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        command,
        check=False,
        capture_output=True,
        text=True,
        env=env(),
        timeout=timeout,
        preexec_fn=limit if fsize is not None else None,
        cwd=REPO,
    )


def kill_at(writer_args: list[str], pause: str, workdir: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Start the writer, wait until it reports the hook, SIGKILL it there; returns the finished process."""
    marker = workdir / f"paused-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        driver_command(writer_args, pause=pause, marker=marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=REPO,
    )
    deadline = time.monotonic() + timeout
    try:
        while not marker.exists():
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(
                    f"the writer ended (exit {proc.returncode}) before the hook '{pause}':\n{out}{err}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"the writer did not reach the hook '{pause}' in {timeout} s")
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        marker.unlink(missing_ok=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def read_only(folder: Path) -> None:
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        path.chmod(0o555)


def writable(folder: Path) -> None:
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        path.chmod(0o755)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def copy_folder(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def one_sentence(stderr: str, *fragments: str) -> str:
    """The contract of a failed command: no traceback, exactly one 'error:' line, the last one; returns it."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def strays(folder: Path, before: dict[str, bytes], *, allowed: tuple[str, ...] = ()) -> list[str]:
    """Files under `folder` that were not there before, except names ending with one of `allowed`."""
    now = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    return sorted(name for name in now - set(before) if not name.endswith(allowed))


def truncate_copy(source: Path, target: Path) -> Path:
    """A copy of `source` cut in half: what a copy stopped by a full disk or a dropped connection leaves."""
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target
