"""Pseudonymous author ids: a keyed hash (HMAC-SHA256) with a local secret, so raw ids never reach a table.

The secret comes from MHAUDIT_SECRET, else from a file (MHAUDIT_SECRET_FILE, default
~/.config/mhaudit/secret) created with mode 0600 on first use. The same secret gives the same
pseudonym for the same author across runs; without it the pseudonyms cannot be linked back.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError

PREFIX = "a-"
MIN_SECRET_BYTES = 16


def _secret_file() -> Path:
    default = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "mhaudit" / "secret"
    return Path(os.environ.get("MHAUDIT_SECRET_FILE", default))


def local_secret() -> bytes:
    if os.environ.get("MHAUDIT_SECRET"):
        secret = os.environ["MHAUDIT_SECRET"].encode()
        if len(secret) < MIN_SECRET_BYTES:
            raise InputError(f"MHAUDIT_SECRET holds {len(secret)} bytes; it needs at least {MIN_SECRET_BYTES}")
        return secret
    path = _secret_file()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    secret = path.read_text().strip().encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise InputError(
            f"the secret holds {len(secret)} bytes; it needs at least {MIN_SECRET_BYTES} or anyone "
            "could recompute the pseudonyms (delete the file to have a new one made)",
            path=path,
        )
    return secret


def pseudonymise(values: Iterable[object], secret: bytes | None = None) -> list[str | None]:
    """'a-' + the first 16 hex digits of HMAC-SHA256(secret, id); absent ids stay None."""
    key = secret if secret is not None else local_secret()
    return [
        None if pd.isna(v) or str(v) == "" else PREFIX + hmac.new(key, str(v).encode(), hashlib.sha256).hexdigest()[:16]
        for v in values
    ]
