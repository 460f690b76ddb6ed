"""Word lists written for this project, one file per category: a `#` header says what the category is
meant to capture, then one lower-case entry per line (multi-word entries allowed, space-separated)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

__all__ = ["load", "names"]


@lru_cache(maxsize=None)
def load(name: str) -> frozenset[str]:
    """The entries of lexicon `name` (file `<name>.txt` in this folder)."""
    path = resources.files(__package__) / f"{name}.txt"
    if not path.is_file():
        raise KeyError(f"no lexicon named '{name}'; known: {', '.join(names())}")
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip().lower() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def names() -> list[str]:
    return sorted(p.name[:-4] for p in resources.files(__package__).iterdir() if p.name.endswith(".txt"))
