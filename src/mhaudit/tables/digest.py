"""What identifies a table's contents: one SHA-256 over its columns and values (input digests, sample digests)."""

from __future__ import annotations

import hashlib

import pandas as pd

__all__ = ["digest_frame"]


def digest_frame(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's contents (columns and values, index ignored): what an audit was run on."""
    try:  # index=False: the rows' order alone counts, not their index
        hashed = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    except TypeError:  # object columns of mixed types: hash their text
        hashed = pd.util.hash_pandas_object(frame.astype(str), index=False).to_numpy()
    head = "\x1f".join(map(str, frame.columns)).encode()
    return hashlib.sha256(head + hashed.tobytes()).hexdigest()
