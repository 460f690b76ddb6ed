"""Data-set importers, one module each, registered by name.

An importer reads files into *raw records*: a DataFrame with `id, text, raw_labels` (a list of raw label
strings per row), `dataset`, `platform`, `label_source`, `split` (None where the data set has no official
split) and any optional corpus columns it knows (`domain`, `author`, `created_at`, `lang`), plus the
private `_file`/`_row` columns so errors can name the place. Label mapping and splitting happen after,
in one place (mhaudit.tables.corpus.importing), the same for every source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError


@dataclass(frozen=True)
class ReadOptions:
    encoding: str = "utf-8"
    platform: str | None = None  # overrides the source's platform name
    dataset: str | None = None  # overrides the source's data-set name
    text_col: str | None = None
    label_col: str | None = None
    id_col: str | None = None
    sep: str | None = None  # generic reader: None = from the file extension
    label_source: str | None = None


@dataclass(frozen=True)
class Source:
    name: str
    summary: str
    read: Callable[[list[Path], ReadOptions], pd.DataFrame]
    default_mapping: str | None = None
    classes: list[str] = field(default_factory=list)  # native raw-label order (used when no mapping)
    multi_label: bool = False


REGISTRY: dict[str, Source] = {}


def register(source: Source) -> Source:
    REGISTRY[source.name] = source
    return source


def get(name: str) -> Source:
    _load_builtin()
    if name not in REGISTRY:
        raise InputError(f"unknown source '{name}'; known sources: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def all_sources() -> list[Source]:
    _load_builtin()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _load_builtin() -> None:
    # Imported lazily so that each importer module registers itself on first use.
    from mhaudit.tables.corpus.sources import (  # noqa: F401
        bluesky_depression,
        dair_emotion,
        depression_reddit,
        dreaddit,
        generic,
        goemotions,
        hf,
        kaggle_mh,
        rastogi,
        tss,
    )
