"""The model protocol every classifier follows, and the registry that names them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import pandas as pd


class Model(Protocol):
    """Fit on a corpus frame (train + val rows), give raw logits for texts, classes in mapping order."""

    classes: list[str]

    def fit(self, train: pd.DataFrame, classes: list[str]) -> Model: ...

    def predict_logits(self, texts: list[str]) -> np.ndarray: ...


REGISTRY: dict[str, Callable[..., Model]] = {}


def register(name: str) -> Callable:
    def add(factory: Callable[..., Model]) -> Callable[..., Model]:
        REGISTRY[name] = factory
        return factory
    return add


def create(name: str, **options) -> Model:
    from mhaudit.models import linear  # noqa: F401  registers the built-in baselines
    from mhaudit.errors import InputError

    if name not in REGISTRY:
        raise InputError(f"unknown model '{name}'; known models: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name](**options)
