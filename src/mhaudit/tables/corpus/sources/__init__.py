"""Data-set importers, one module each, registered by name.

An importer reads files into *raw records*: a DataFrame with `id, text, raw_labels` (a list of raw label
strings per row), `dataset`, `platform`, `label_source`, `split` (None where the data set has no official
split) and any optional corpus columns it knows (`domain`, `author`, `created_at`, `lang`), plus the
private `_file`/`_row` columns so errors can name the place. Label mapping and splitting happen after,
in one place (mhaudit.tables.corpus.importing), the same for every source.
"""

from __future__ import annotations

import importlib

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import REGISTRY, ReadOptions, Source, register

__all__ = ["ReadOptions", "Source", "register", "get", "all_sources"]

BUILTIN = (
    "bluesky_depression",
    "dair_emotion",
    "depression_reddit",
    "dreaddit",
    "generic",
    "goemotions",
    "hf",
    "kaggle_mh",
    "rastogi",
    "tss",
)  # the importer modules here


def get(name: str) -> Source:
    _load_builtin()
    if name not in REGISTRY:
        raise InputError(f"unknown source '{name}'; known sources: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def all_sources() -> list[Source]:
    _load_builtin()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _load_builtin() -> None:
    for module in BUILTIN:  # imported lazily: each importer module registers itself on first use
        importlib.import_module(f"{__name__}.{module}")
