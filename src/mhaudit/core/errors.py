"""User-facing errors: one clear sentence, no traceback, a documented exit code."""

from __future__ import annotations

# Exit codes (documented in README): 0 success, 2 bad input or usage, 1 unexpected internal error.
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """A mistake in what the user gave (file, column, value). Its message is shown as is."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, path: object | None = None):
        prefix = f"{path}: " if path is not None else ""
        super().__init__(prefix + message)
