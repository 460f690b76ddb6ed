"""The model protocol every classifier follows, the registry that names them, and saving/loading.

A model is made by name with options (`create("tfidf-lr", C=10)`), fitted on a corpus frame (rows of
split train, plus val used for calibration or early stopping), gives raw logits with columns in the
mapping's class order, and saves to a directory that `load_model` reads back to identical logits.
Built-in models are imported on first use, so the base install never imports torch.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError

MODEL_FILE = "mhaudit-model.json"
BUILTIN = {"tfidf-lr": "mhaudit.models.linear", "char-tfidf-lr": "mhaudit.models.linear",
           "transformer": "mhaudit.models.transformer", "bert-lstm": "mhaudit.models.hybrid",
           "bert-lstm-attention": "mhaudit.models.hybrid", "llm-zero-shot": "mhaudit.models.llm"}


class Model(Protocol):
    name: str
    options: dict
    classes: list[str]

    def fit(self, train: pd.DataFrame, classes: list[str]) -> Model: ...

    def predict_logits(self, texts: list[str]) -> np.ndarray: ...

    def save_artifacts(self, directory: Path) -> None: ...

    def load_artifacts(self, directory: Path) -> None: ...


REGISTRY: dict[str, tuple[type, dict]] = {}


def register(name: str, **defaults):
    """Class decorator: make `name` create this class with `defaults` (overridden by the caller's options)."""
    def add(cls: type) -> type:
        REGISTRY[name] = (cls, defaults)
        return cls
    return add


def _entry(name: str) -> tuple[type, dict]:
    if name not in REGISTRY and name in BUILTIN:
        try:
            importlib.import_module(BUILTIN[name])
        except ImportError as exc:
            raise InputError(f"model '{name}' needs an optional dependency ({exc.name}); "
                             "install mhaudit[transformers]") from None
    if name not in REGISTRY:
        raise InputError(f"unknown model '{name}'; known models: {', '.join(model_names())}")
    return REGISTRY[name]


def model_names() -> list[str]:
    """Every model name `create` knows: the built-in ones and those registered since."""
    return sorted(set(REGISTRY) | set(BUILTIN))


def create(name: str, **options) -> Model:
    cls, defaults = _entry(name)
    merged = {**defaults, **options}
    model = cls(**merged)
    model.name, model.options = name, merged
    return model


def save_model(model: Model, directory: str | Path) -> None:
    """Write the model's artifacts, then its manifest last: a folder with a manifest is complete."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MODEL_FILE).unlink(missing_ok=True)
    model.save_artifacts(directory)
    manifest = {"name": model.name, "options": model.options, "classes": model.classes}
    tmp = directory / f".{MODEL_FILE}.part"
    tmp.write_text(json.dumps(manifest, indent=2, default=list))
    tmp.replace(directory / MODEL_FILE)


def load_model(directory: str | Path) -> Model:
    directory = Path(directory)
    manifest_path = directory / MODEL_FILE
    if not manifest_path.exists():
        raise InputError(f"no {MODEL_FILE} here; expected a folder written by mhaudit train", path=directory)
    manifest = json.loads(manifest_path.read_text())
    model = create(manifest["name"], **manifest["options"])
    model.classes = list(manifest["classes"])
    model.load_artifacts(directory)
    return model
