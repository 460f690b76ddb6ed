"""Experiment files (TOML), validated with pydantic: one sentence per mistake, naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mhaudit.errors import InputError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CorpusSpec(Strict):
    source: str
    paths: list[str]
    mapping: str | None = None
    multi_label: Literal["first", "expand", "priority", "drop-ambiguous"] = "first"
    priority: list[str] | None = None
    split: str = "auto"
    seed: int = 0
    platform: str | None = None
    dataset: str | None = None
    label_source: str | None = None
    encoding: str = "utf-8"
    drop_empty: bool = False
    text_col: str | None = None
    label_col: str | None = None
    id_col: str | None = None


class ModelSpec(Strict):
    name: str
    label: str | None = None  # the model's name in tables (default: name)
    options: dict = Field(default_factory=dict)
    subsample: int | None = None  # stratified subsample of the training rows (seeded)
    explain: Literal["none", "linear", "saliency", "integrated_gradients"] = "none"
    explain_sample: int = 200
    adapt_epochs: int = 0  # > 0: also fine-tune on each target's calibration split (paper section 4.6: 3)

    @property
    def key(self) -> str:
        return self.label or self.name


class AuditSpec(Strict):
    n_boot: int = 2000
    n_boot_ece: int = 1000
    n_bins: int = 10
    seed: int = 0
    calibration_fraction: float = 0.10
    correction: Literal["bonferroni", "bh"] = "bonferroni"
    non_independent: list[tuple[str, str]] = Field(default_factory=list)


class Experiment(Strict):
    name: str
    design: Literal["reference", "all-pairs"] = "reference"
    reference: str | None = None
    seeds: list[int] = Field(default_factory=lambda: [42, 0, 1, 7, 123])
    corpus: list[CorpusSpec]
    model: list[ModelSpec]
    audit: AuditSpec = Field(default_factory=AuditSpec)
    folder: Path = Path(".")  # the experiment file's folder: relative paths are read from there

    @model_validator(mode="after")
    def _reference_for_design(self) -> Experiment:
        if self.design == "reference" and not self.reference:
            raise ValueError("design 'reference' needs reference = \"<platform>\"")
        return self


def load_experiment(path: str | Path) -> Experiment:
    path = Path(path)
    if not path.exists():
        raise InputError("no such file; expected an experiment TOML (see examples/)", path=path)
    try:
        doc = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path) from None
    try:
        return Experiment(**doc, folder=path.resolve().parent)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise InputError(f"{where}: {first['msg']} ({exc.error_count()} problem(s) in all)", path=path) from None
