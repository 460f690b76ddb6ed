"""User-facing errors: one clear sentence, no traceback, a documented exit code."""

from __future__ import annotations

import errno

# Exit codes (documented in README): 0 success, 2 bad input or usage, 1 unexpected internal error.
EXIT_BAD_INPUT = 2

# What the machine, not the code, got wrong when a file could not be written (docs/faults.md): one sentence, exit 2.
DISK_FULL = "free some space (or raise the file-size limit, ulimit -f) and run again"
NOT_WRITABLE = "make the folder writable or write somewhere else"
OS_FAULTS = {
    errno.ENOSPC: ("the disk is full", DISK_FULL),
    errno.EDQUOT: ("the disk quota is used up", DISK_FULL),
    errno.EFBIG: ("the file would exceed the file-size limit", DISK_FULL),
    errno.EACCES: ("permission denied", NOT_WRITABLE),
    errno.EPERM: ("operation not permitted", NOT_WRITABLE),
    errno.EROFS: ("the file system is read-only", NOT_WRITABLE),
}


class InputError(Exception):
    """A mistake in what the user gave (file, column, value). Its message is shown as is."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, path: object | None = None):
        prefix = f"{path}: " if path is not None else ""
        super().__init__(prefix + message)


def first_line(exc: BaseException) -> str:
    """An exception's first line of message (a library's reason, for one sentence), else its type's name."""
    return next(iter(str(exc).strip().splitlines()), type(exc).__name__)


class OutputError(InputError, OSError):
    """A file could not be written: a full disk, a file-size limit, a read-only folder (exit code 2). Also an
    OSError with the original errno, so code that caught the OSError of a failed write still catches it."""

    def __init__(self, message: str, *, path: object | None = None, errno: int | None = None):
        super().__init__(message, path=path)
        self.errno = errno


def os_fault(
    exc: BaseException, path: object | None = None, *, kept: bool = False, writing: bool = True
) -> OutputError | None:
    """The one sentence for an OSError the user can fix (disk full, not writable), naming `path` (else the
    error's file); None for any other error, which stays a bug with its traceback. `kept`: the writer
    guarantees that the earlier file is untouched, and the sentence says so; `writing=False`: the error may
    come from reading as well (a permission error then names no folder to make writable)."""
    if isinstance(exc, OutputError):
        return exc  # already the sentence (a write inside another atomic write): keep the file it names
    if not isinstance(exc, OSError) or exc.errno not in OS_FAULTS:
        return None
    what, advice = OS_FAULTS[exc.errno]
    where = path if path is not None else exc.filename
    if not writing and advice is NOT_WRITABLE:
        return OutputError(f"{what}; check the permissions of the file and its folder", path=where, errno=exc.errno)
    tail = "; the earlier file, if any, is unchanged" if kept else ""
    return OutputError(f"cannot write it: {what}; {advice}{tail}", path=where, errno=exc.errno)
