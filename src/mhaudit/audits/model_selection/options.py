"""What a model-selection run compares: the paper's presets, the protocols, the model specs and the
options of a run, checked before anything is trained.

Protocols (`Protocol.parse`): `holdout` (stratified, 70/30 by default; `holdout:0.2` for 80/20), `cv`
(stratified k-fold, k = `folds`, 5 by default; `cv:10` for k = 10) and `kfold` (plain shuffled k-fold;
`kfold:10`). A model spec (`ModelSpec.parse`) is a registered model or an alias with options; its
`val=true|false` overrides the family's default for validation rows (true for the transformer and the
hybrids, false for every other model) and `subsample=N` trains on N rows of each fold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from mhaudit.audits.model_selection.sources import (
    CORPUS_SOURCE,
    checked_sources,
    label_probabilities,
    label_sources,
    sides,
)
from mhaudit.core.errors import InputError
from mhaudit.core.executors import EXECUTORS
from mhaudit.core.options import at_least, between, check, one_of, option
from mhaudit.models.base import BUILTIN
from mhaudit.tables.corpus.schema import Corpus

# The model families a preset speaks to, by the module a built-in model lives in (models.base.BUILTIN).
FAMILIES = {"mhaudit.models.transformer": "transformer", "mhaudit.models.hybrid": "hybrid"}
# Model names that are shorthands for a registered model with options.
ALIASES = {"minilm": ("transformer", {"checkpoint": "minilm"})}


@dataclass(frozen=True)
class Preset:
    """The paper's training settings for a task; every value is a default the user can override."""

    name: str
    protocols: tuple[str, ...]
    folds: int
    transformer: dict
    hybrid: dict
    description: str


PRESETS = {
    "si": Preset(
        "si",
        ("holdout", "cv"),
        5,
        dict(epochs=3, batch_size=16, eval_batch_size=64, lr=2e-5, val=False),
        dict(lr=1e-3, weight_decay=1e-4, batch_size=16, epochs=5, patience=3),
        "SI: 70/30 stratified holdout and stratified 5-fold CV; transformers AdamW lr 2e-5, 3 epochs "
        "(all three run, the last kept: no validation rows), batch 16, evaluation 64; hybrids Adam lr 1e-3, "
        "weight decay 1e-4, batch 16, early stopping patience 3 over at most 5 epochs",
    ),
    "mh": Preset(
        "mh",
        ("cv",),
        5,
        dict(epochs=5, patience=2, max_length=512, batch_size=8, eval_batch_size=16, lr=2e-5),
        dict(max_length=512),
        "MH: stratified 5-fold CV; transformers AdamW lr 2e-5, up to 5 epochs with early stopping "
        "(patience 2) on the validation rows, max length 512, dynamic padding, batch 8, evaluation 16; "
        "hybrids (not in the paper's MH benchmark) at their defaults with max length 512",
    ),
}


@dataclass(frozen=True)
class Protocol:
    kind: str  # holdout | cv | kfold
    k: int = 5
    test_size: float = 0.3

    @classmethod
    def parse(cls, spec: str, folds: int = 5, test_size: float = 0.3) -> Protocol:
        """'holdout', 'holdout:0.2', 'cv', 'cv:10', 'kfold', 'kfold:10' (k defaults to `folds`)."""
        kind, _, arg = spec.strip().lower().partition(":")
        if kind not in ("holdout", "cv", "kfold"):
            raise InputError(
                f"protocol '{spec}' is not one of holdout, cv (stratified k-fold), kfold (plain k-fold); "
                "add ':K' for the number of folds (cv:10) or ':FRACTION' for the test share (holdout:0.3)"
            )
        try:
            if kind == "holdout":
                size = float(arg) if arg else test_size
                if not 0 < size < 1:
                    raise ValueError
                return cls("holdout", 1, size)
            k = int(arg) if arg else folds
        except ValueError:
            what = "the test share must lie in (0, 1)" if kind == "holdout" else "k must be an integer"
            raise InputError(f"protocol '{spec}': {what}") from None
        if k < 2:
            raise InputError(f"protocol '{spec}': cross-validation needs at least 2 folds, got {k}")
        return cls(kind, k, test_size)

    @property
    def label(self) -> str:
        if self.kind == "holdout":
            test = round(100 * self.test_size, 6)  # 'holdout 70/30'; 'holdout 69.5/30.5' for 0.305
            return f"holdout {round(100 - test, 6):g}/{test:g}"
        return f"stratified {self.k}-fold CV" if self.kind == "cv" else f"{self.k}-fold CV"


@dataclass(frozen=True)
class ModelSpec:
    """A model by registry name (or alias) with options, the label it has in the tables, and how it trains:
    `val` (hold out validation rows inside each fold) and `subsample` (train on N rows of each fold)."""

    label: str
    name: str
    options: dict = field(default_factory=dict)
    val: bool | None = None  # None until `with_preset` settles it
    subsample: int | None = None

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        """'NAME' or 'NAME:key=value,key=value' (values as JSON where they parse: numbers, true, lists;
        True/False in any case are booleans too).

        NAME is a registered model or an alias ('minilm' = transformer with checkpoint minilm); the keys
        label, val and subsample are the protocol's, the rest are model options. `val` left out is None:
        `with_preset` settles it (the preset's value, else the family's default)."""
        name, _, rest = spec.strip().partition(":")
        name = name.strip()
        if not name:
            raise InputError(f"model spec '{spec}' has no model name")
        options: dict = {}
        for item in re.split(r",(?=\s*[A-Za-z_]\w*\s*=)", rest) if rest.strip() else []:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise InputError(f"model spec '{spec}': '{item}' must be KEY=VALUE")
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                parsed = value.strip()
                if parsed.lower() in ("true", "false"):  # Python's spelling: 'False' must not stay a (truthy) string
                    parsed = parsed.lower() == "true"
            options[key.strip()] = parsed
        label = str(options.pop("label", "")) or None
        val = options.pop("val", None)
        subsample = options.pop("subsample", None)
        if val is not None and not isinstance(val, bool):
            raise InputError(f"model spec '{spec}': val must be true or false, got {val!r}")
        if subsample is not None and (not isinstance(subsample, int) or isinstance(subsample, bool) or subsample < 2):
            raise InputError(f"model spec '{spec}': subsample must be an integer of at least 2, got {subsample!r}")
        base, alias_options = ALIASES.get(name, (name, {}))
        if label is None:
            label = name
            if "checkpoint" in options and family(base) != "other":
                label = f"{name}[{Path(str(options['checkpoint'])).name or options['checkpoint']}]"
            if subsample:
                label += f"@{subsample}"
        return cls(label, base, {**alias_options, **options}, val, subsample)

    def family(self) -> str:
        return family(self.name)

    def with_preset(self, preset: Preset | None) -> ModelSpec:
        """The preset's settings for this model's family under the spec's own options, and `val` settled:
        the spec's own value, else the preset's, else the family's default (true for the transformer and
        the hybrids, which choose their epoch on validation rows; false for every other model)."""
        settings = {}
        if preset is not None and self.family() != "other":
            settings = dict(preset.transformer if self.family() == "transformer" else preset.hybrid)
        preset_val = settings.pop("val", None)
        val = self.val if self.val is not None else preset_val if preset_val is not None else self.family() != "other"
        return replace(self, options={**settings, **self.options}, val=val)


def family(name: str) -> str:
    """'transformer', 'hybrid' or 'other', by the module that registers the model."""
    return FAMILIES.get(BUILTIN.get(name, ""), "other")


@dataclass(frozen=True)
class ModelSelectionOptions:
    """One run: the models, the protocols and their folds, the seed, and how and where the fold jobs run."""

    models: tuple[ModelSpec | str, ...] = option(
        help="Model to compare, repeatable: a registered name (tfidf-lr, char-tfidf-lr, transformer, bert-lstm, "
        "bert-lstm-attention) or minilm, optionally with options 'NAME:key=value,key=value' (label=..., "
        "val=true|false, subsample=N are the audit's).",
        flag="model",
        parse=str,
        split=False,
    )
    protocols: tuple[str, ...] | None = option(
        None,
        help="holdout[:TEST_SHARE], cv[:K] (stratified k-fold) or kfold[:K] (plain); repeatable. Default: the "
        "preset's, else holdout and cv.",
        flag="protocol",
    )
    folds: int | None = option(None, help="k for cv / kfold without ':K' (default: the preset's, else 5).")
    test_size: float = option(0.3, help="Holdout test share.", rule=between(0, 1))
    val_fraction: float = option(
        0.1,
        help="Share of each fold's training rows held out for early stopping / calibration.",
        rule=between(0, 0.5, low_open=False),
    )
    seed: int = option(0, help="Seed of folds, validation rows, subsamples and models.")
    preset: str | None = option(None, help="The paper's settings: si or mh (overridable).", rule=one_of(*PRESETS))
    positive: str | None = option(None, help="Positive class (default: the corpus's last class).")
    subsample: int | None = option(
        None, help="Benchmark a stratified subsample of this many rows (drawn before the folds).", rule=at_least(2)
    )
    executor: str = option("local", help="local (processes) or ray.", rule=one_of(*EXECUTORS))
    workers: int = option(1, help="Local worker processes for the fold jobs.", rule=at_least(1))
    cache_dir: Path | None = option(None, help="Folder the finished fold jobs are written to.", cli=False)
    resume: bool = option(
        True, help="Reuse finished fold jobs from OUT/jobs; --no-resume retrains them (and writes them over)."
    )
    figures: bool = option(True, help="Draw the protocol effect, the efficiency frontier and the trade-off.")
    soft_labels: bool = option(
        True,
        help="Train on the training labeler's probabilities where it has them (a combined labeler): each training "
        "post enters twice, weighted P and 1 - P; --no-soft-labels trains on its hard labels.",
    )

    def __post_init__(self) -> None:
        check(self)
        self.resolved()  # a bad model spec, preset or protocol, or a seed out of range, fails here

    def resolved(self) -> tuple[Preset | None, list[ModelSpec], list[Protocol]]:
        """The preset, the model specs settled by it and the protocols; a bad option fails here."""
        preset = PRESETS.get(self.preset) if self.preset else None
        specs = [m if isinstance(m, ModelSpec) else ModelSpec.parse(m) for m in self.models]
        if not specs:
            raise InputError("models is empty; give at least one model to compare")
        labels = [s.label for s in specs]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise InputError(f"two models are labelled '{dup[0]}'; give one a label (e.g. '{dup[0]}:label=other')")
        specs = [s.with_preset(preset) for s in specs]
        folds = self.folds if self.folds is not None else (preset.folds if preset else 5)
        names = list(self.protocols) if self.protocols else list(preset.protocols if preset else ("holdout", "cv"))
        protocols = [Protocol.parse(p, folds, self.test_size) for p in names]
        if len({p.label for p in protocols}) < len(protocols):
            raise InputError(f"a protocol is given twice ({', '.join(names)})")
        # per-fold seeds are seed x 1000 + fold, and NumPy/scikit-learn take seeds in [0, 2**32)
        top = (2**32 - 1 - max(p.k for p in protocols)) // 1000
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= top:
            raise InputError(f"seed must be an integer from 0 to {top:,}, got {self.seed!r}")
        return preset, specs, protocols


@dataclass(frozen=True)
class ModelSelectionInputs:
    """What a model-selection run reads: a binary corpus (its `synthetic` mark carries into the result), the labels
    the models learn (`train_labels`: class names indexed by row id; default: the corpus's label column) under the
    name `train_source`, and `references`: other label sources by name (class names indexed by id, any subset of the
    rows), every model also scored against each. Rows without a training label are left out. `title`: the report's;
    `files`: (file, SHA-256) of the files read. `train_probabilities`: the training labeler's probability of the
    positive class by id, where it has one (a combined labeler: soft labels). `sources`: every label source,
    checked, the training one first."""

    corpus: Corpus
    train_labels: pd.Series | None = None
    train_source: str = CORPUS_SOURCE
    references: Mapping[str, pd.Series] = field(default_factory=dict)
    title: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    train_probabilities: pd.Series | None = None
    sources: dict[str, pd.Series] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        classes = [str(c) for c in self.corpus.classes]
        sides(classes, None)  # a binary corpus
        sources = checked_sources(self.corpus.frame, classes, self.train_labels, self.train_source, self.references)
        if self.corpus.frame["id"].astype(str).map(sources[self.train_source]).isna().all():
            raise InputError(f"no row has a label from the training source '{self.train_source}'")
        object.__setattr__(self, "sources", sources)

    @property
    def synthetic(self) -> bool:
        return self.corpus.synthetic

    @classmethod
    def from_files(
        cls,
        corpus: str | Path,
        *,
        labels=(),
        train_labeler: str = CORPUS_SOURCE,
        reference_labelers=(),
        task: str | None = None,
        dataset: str | None = None,
        positive: str | None = None,
    ) -> ModelSelectionInputs:
        """From a corpus file (only its rows of `dataset`, a data set or platform, when given) and the labels tables
        holding the label sources: 'corpus' is the corpus's own labels, any other name a labeler of `task` whose
        1 is the `positive` class (default: the corpus's last)."""
        from mhaudit.tables.predictions import sha256_file
        from mhaudit.tables.label_store import read_label_files
        from mhaudit.tables.labeler_names import full_labeler_name

        path = Path(corpus)
        read = Corpus.read(path)
        if dataset is not None:
            frame = read.frame
            read = replace(read, frame=frame[(frame["dataset"] == dataset) | (frame["platform"] == dataset)])
            if read.frame.empty:
                raise InputError(f"the corpus has no data set or platform '{dataset}'", path=path)
        table = read_label_files(labels) if labels else None
        if table is not None:  # a labeler may be named by a short name (`full_labeler_name`)
            train_labeler, *reference_labelers = (
                name if name == CORPUS_SOURCE else full_labeler_name(table, name, task, role="label source")
                for name in (train_labeler, *reference_labelers)
            )
        train, references = label_sources(
            read.frame,
            read.classes,
            table,
            train_labeler=train_labeler,
            reference_labelers=reference_labelers,
            task=task,
            positive=positive,
        )
        files = tuple((str(p), sha256_file(p)) for p in [path, *map(Path, labels)])
        soft = label_probabilities(table, train_labeler, task)
        return cls(read, train, train_labeler, references, f"Model selection on {path.name}", files, soft)


__all__ = [
    "ALIASES",
    "FAMILIES",
    "PRESETS",
    "ModelSelectionInputs",
    "ModelSelectionOptions",
    "ModelSpec",
    "Preset",
    "Protocol",
    "family",
]
