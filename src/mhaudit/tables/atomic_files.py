"""Atomic writes: a file is written to a temporary name in its folder, then renamed, so a crash or a validation
error never leaves a half-written file under the final name; a full disk or a read-only folder is one sentence
(`OutputError`) and leaves the earlier file as it was. `write_files_atomic`: several files, none renamed until all
are written (a report). `tables.io` re-exports these names, where callers import them."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from mhaudit.core.errors import os_fault


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside `final`; rename it over `final` only if the block succeeds.

    The file gets `mode`, by default what `open()` would give a new file (0o666 less the umask): mkstemp's
    0600 would keep reports and tables from colleagues whatever the umask. Secrets pass mode=0o600. A full
    disk, a file-size limit or a read-only folder (here or in the block's writes to the temporary file) is an
    `OutputError` naming `final`, and the earlier `final` is left as it was (docs/faults.md)."""
    final = Path(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    except OSError as exc:
        if (fault := os_fault(exc, final, kept=True)) is None:
            raise
        raise fault from None
    tmp_path = Path(tmp)
    try:
        try:
            os.fchmod(fd, 0o666 & ~current_umask() if mode is None else mode)
        finally:
            os.close(fd)
        yield tmp_path
        os.replace(tmp_path, final)
    except OSError as exc:
        # Another file the block touched (an input it read) is not this write's fault; nor is any other OSError.
        elsewhere = exc.filename is not None and Path(exc.filename).parent != final.parent
        if elsewhere or (fault := os_fault(exc, final, kept=True)) is None:
            raise
        raise fault from None
    finally:
        tmp_path.unlink(missing_ok=True)


def write_files_atomic(files: Mapping[Path, str | bytes]) -> list[Path]:
    """Write several files (text as UTF-8) so that a failure publishes none of them: each is written to its
    temporary name first, and only when every one is complete are they renamed over their final names, in
    the given order. A kill between two of those renames can still leave some old and some new."""
    finals = [Path(f) for f in files]
    with contextlib.ExitStack() as stack:  # entered last to first, so that they are renamed first to last
        for final, data in reversed(list(zip(finals, files.values(), strict=True))):
            tmp = stack.enter_context(atomic_path(final))
            if isinstance(data, str):
                tmp.write_text(data, encoding="utf-8")
            else:
                tmp.write_bytes(data)
    return finals


def current_umask() -> int:
    """The process's umask, read without changing it (os.umask sets one to read it: a race between threads)."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # no /proc: read it the only other way, and put it straight back
    os.umask(mask)
    return mask


def write_text_atomic(final: str | os.PathLike, text: str) -> None:
    write_files_atomic({Path(final): text})
