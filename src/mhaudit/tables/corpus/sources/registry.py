"""The registry of data-set importers: what an importer is (`Source`), its read options, and `register`.

Apart from the package's `__init__` so that each importer module can register itself without importing the
package that imports it (docs/architecture.md: no import cycles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["ReadOptions", "Source", "REGISTRY", "register"]


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
