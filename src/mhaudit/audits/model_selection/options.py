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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.models.base import BUILTIN

# The model families a preset speaks to, by the module a built-in model lives in (models.base.BUILTIN).
FAMILIES = {"mhaudit.models.transformer": "transformer", "mhaudit.models.hybrid": "hybrid"}
# Model names that are shorthands for a registered model with options.
ALIASES = {"minilm": ("transformer", {"checkpoint": "minilm"})}
# Keys of a model spec that belong to the protocol, not to the model.
SPEC_KEYS = ("label", "val", "subsample")


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
    "si": Preset("si", ("holdout", "cv"), 5,
                 dict(epochs=3, batch_size=16, eval_batch_size=64, lr=2e-5, val=False),
                 dict(lr=1e-3, weight_decay=1e-4, batch_size=16, epochs=5, patience=3),
                 "SI: 70/30 stratified holdout and stratified 5-fold CV; transformers AdamW lr 2e-5, 3 epochs "
                 "(all three run, the last kept: no validation rows), batch 16, evaluation 64; hybrids Adam lr 1e-3, "
                 "weight decay 1e-4, batch 16, early stopping patience 3 over at most 5 epochs"),
    "mh": Preset("mh", ("cv",), 5,
                 dict(epochs=5, patience=2, max_length=512, batch_size=8, eval_batch_size=16, lr=2e-5),
                 dict(max_length=512),
                 "MH: stratified 5-fold CV; transformers AdamW lr 2e-5, up to 5 epochs with early stopping "
                 "(patience 2) on the validation rows, max length 512, dynamic padding, batch 8, evaluation 16; "
                 "hybrids (not in the paper's MH benchmark) at their defaults with max length 512"),
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
            raise InputError(f"protocol '{spec}' is not one of holdout, cv (stratified k-fold), kfold (plain k-fold); "
                             "add ':K' for the number of folds (cv:10) or ':FRACTION' for the test share (holdout:0.3)")
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
        val = self.val if self.val is not None else preset_val if preset_val is not None else \
            self.family() != "other"
        return replace(self, options={**settings, **self.options}, val=val)


def family(name: str) -> str:
    """'transformer', 'hybrid' or 'other', by the module that registers the model."""
    return FAMILIES.get(BUILTIN.get(name, ""), "other")


@dataclass(frozen=True)
class ModelSelectionOptions:
    """One run: the models, the protocols and their folds, the seed, and how and where the fold jobs run."""

    models: Sequence[ModelSpec | str]
    protocols: Sequence[str] | None = None  # default: the preset's, else holdout and cv
    folds: int | None = None  # default: the preset's, else 5
    test_size: float = 0.3
    val_fraction: float = 0.1
    seed: int = 0
    preset: str | None = None
    positive: str | None = None
    subsample: int | None = None  # a stratified subsample of the whole corpus, drawn before the folds
    executor: str = "local"
    workers: int = 1
    cache_dir: Path | None = None  # finished fold jobs are written here
    resume: bool = True  # read finished fold jobs back from cache_dir (off: retrain them, still writing)
    figures: bool = True

    def __post_init__(self) -> None:
        self.resolved()  # a bad model spec, preset, protocol, share or seed fails here
        if self.subsample is not None and self.subsample < 2:
            raise InputError(f"subsample must be at least 2, got {self.subsample}")
        if not 0 < self.test_size < 1:
            raise InputError(f"test_size must lie strictly between 0 and 1, got {self.test_size}")
        if self.executor not in ("local", "ray"):
            raise InputError(f"executor '{self.executor}' must be local or ray")
        if self.workers < 1:
            raise InputError(f"workers must be at least 1, got {self.workers}")

    def resolved(self) -> tuple[Preset | None, list[ModelSpec], list[Protocol]]:
        """The preset, the model specs settled by it and the protocols; a bad option fails here."""
        if self.preset is not None and self.preset not in PRESETS:
            raise InputError(f"preset '{self.preset}' is not one of {', '.join(PRESETS)}")
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
        if not 0 <= self.val_fraction < 0.5:
            raise InputError(f"val_fraction must lie in [0, 0.5), got {self.val_fraction}")
        # per-fold seeds are seed x 1000 + fold, and NumPy/scikit-learn take seeds in [0, 2**32)
        top = (2 ** 32 - 1 - max(p.k for p in protocols)) // 1000
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= top:
            raise InputError(f"seed must be an integer from 0 to {top:,}, got {self.seed!r}")
        return preset, specs, protocols


__all__ = ["ALIASES", "FAMILIES", "PRESETS", "SPEC_KEYS", "ModelSelectionOptions", "ModelSpec", "Preset", "Protocol",
           "family"]
