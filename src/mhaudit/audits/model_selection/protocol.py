"""The benchmark protocol (Bluesky paper, "Benchmarking"): several models on one labelled binary corpus under
a stratified holdout and cross-validation, side by side.

Protocols (`Protocol.parse`): `holdout` (stratified, 70/30 by default; `holdout:0.2` for 80/20), `cv`
(stratified k-fold, k = `folds`, 5 by default; `cv:10` for k = 10) and `kfold` (plain shuffled k-fold;
`kfold:10`). The folds are drawn once, from the training labels and the seed, before any model is
made, so every model sees exactly the same rows. Inside each fold's training rows a stratified
`val_fraction` (10% by default) is set aside as split 'val' for the models that choose their epoch on
it: the transformer and the hybrids (`val` defaults to true for them) keep their best epoch by
validation macro-F1. Every other model, the TF-IDF baselines included, trains on all of the fold's
training rows (`val` defaults to false: the TF-IDF temperature fitted on validation rows changes no
binary prediction and no AUC, so holding rows out for it would only shrink its training set). A spec's
`val=true|false` overrides either default. A spec with `subsample=N` trains on a stratified, seeded
N-row subsample of each fold's training rows (the test rows stay the same), for models too slow for the
full set on a CPU.

Every (protocol, fold, model) is one job run through `mhaudit.experiments.executors.run_jobs` (in-process by default,
local processes or Ray on request); with a `cache_dir` each finished job is written there, keyed by a
hash of everything it depends on (the rows, labels, classes in order, folds, validation rows, model
name and options, the checkpoint folder's file digests and the mhaudit version), and a re-run reads it
back unless `resume` is off (then it is trained again and written over).

Scores (positive class = the last class unless given): precision, recall, F1, accuracy, AUC (of the
positive-minus-negative logit), macro-F1 (mean of both classes' F1), training time (the wall time of
fitting the model, checkpoint loading included; the model's module is imported and the model object
made before the clock starts, for every family alike) and inference time (predicting the test rows),
per fold and as mean +/- sd over folds. A metric that is undefined on a fold (precision with no
positive prediction, recall or AUC with no positive) is NaN with the reason in `undefined`, never 0 or
0.5. Predictions are the argmax of the logits.

Label sources: the models train on one source (the corpus's own labels, or one labeler of a labels
table, e.g. LLM or lexicon weak labels) and are scored against it and against every reference source
given (e.g. human-adjudicated labels for part of the data, or the expert label while training on weak
labels), each on the test rows that source labels.

Tables: `design`, `label_sources`, `training_vs_reference` (the training labels themselves scored
against each reference on the rows both label), `fold_scores`, `summary`, `protocol_effect` (CV minus
holdout per model and metric), `efficiency` (F1 against training time, with the Pareto frontier),
`tradeoff` (recall against precision), `model_notes`; figures for the protocol effect, the efficiency
frontier and the trade-off, each drawn from its table.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

import mhaudit
from mhaudit.core.errors import InputError
from mhaudit.tables.io import write_text_atomic
from mhaudit.models.base import BUILTIN
from mhaudit.experiments.executors import run_jobs
from mhaudit.report.render import Result, Section

CORPUS_SOURCE = "corpus"  # the label source that is the corpus's own label column
METRICS = ("precision", "recall", "f1", "accuracy", "auc", "macro_f1")
TIMES = ("train_seconds", "infer_seconds")
# The model families a preset speaks to, by the module a built-in model lives in (models.base.BUILTIN).
FAMILIES = {"mhaudit.models.transformer": "transformer", "mhaudit.models.hybrid": "hybrid"}
# Model names that are shorthands for a registered model with options.
ALIASES = {"minilm": ("transformer", {"checkpoint": "minilm"})}
# Keys of a model spec that belong to the benchmark, not to the model.
SPEC_KEYS = ("label", "val", "subsample")


# --------------------------------------------------------------------------- presets, protocols, model specs
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
        label, val and subsample are the benchmark's, the rest are model options. `val` left out is None:
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


@dataclass
class BenchmarkOptions:
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
    progress: bool = True  # one line per job on stderr

    def resolved(self) -> tuple[Preset | None, list[ModelSpec], list[Protocol]]:
        if self.preset is not None and self.preset not in PRESETS:
            raise InputError(f"preset '{self.preset}' is not one of {', '.join(PRESETS)}")
        preset = PRESETS.get(self.preset) if self.preset else None
        specs = [m if isinstance(m, ModelSpec) else ModelSpec.parse(m) for m in self.models]
        if not specs:
            raise InputError("no model to benchmark; give at least one --model")
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


# --------------------------------------------------------------------------- folds and rows
def assign_folds(y: np.ndarray, protocol: Protocol, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row positions for each fold of `protocol`, deterministic for the labels and the seed.

    `y` are the training labels as 0/1; stratified protocols keep each class's share in every fold."""
    y = np.asarray(y)
    n = len(y)
    counts = np.bincount(y, minlength=2)
    names = ("negative", "positive")
    if (counts == 0).any():
        raise InputError(f"the training labels hold only one class ({names[int(np.argmax(counts))]}, {n} rows); "
                         "a benchmark needs both classes")
    index = np.arange(n)
    if protocol.kind == "holdout":
        n_test = int(np.ceil(protocol.test_size * n))
        if counts.min() < 2 or n_test < 2 or n - n_test < 2:
            raise InputError(f"a stratified {protocol.label} holdout needs at least 2 rows of each class on each "
                             f"side; the training labels have {counts[0]} negative and {counts[1]} positive rows")
        train, test = train_test_split(index, test_size=protocol.test_size, stratify=y, random_state=seed)
        folds = [(np.sort(train), np.sort(test))]
    elif protocol.kind == "cv":
        if counts.min() < protocol.k:
            cls = names[int(np.argmin(counts))]
            raise InputError(f"{protocol.label} needs at least {protocol.k} rows of every class; the {cls} class has "
                             f"{counts.min()} (use fewer folds or more data)")
        splitter = StratifiedKFold(n_splits=protocol.k, shuffle=True, random_state=seed)
        folds = [(np.sort(a), np.sort(b)) for a, b in splitter.split(index, y)]
    else:
        if n < protocol.k:
            raise InputError(f"{protocol.label} needs at least {protocol.k} rows; there are {n}")
        splitter = KFold(n_splits=protocol.k, shuffle=True, random_state=seed)
        folds = [(np.sort(a), np.sort(b)) for a, b in splitter.split(index)]
    for i, (train, _) in enumerate(folds, start=1):
        if len(np.unique(y[train])) < 2:
            raise InputError(f"fold {i} of {protocol.label} has training rows of one class only; use a stratified "
                             "protocol (cv) or fewer folds")
    return folds


def stratified_take(y: np.ndarray, fraction: float | None = None, n: int | None = None, *, seed: int,
                    keep_one: bool = True) -> np.ndarray:
    """Positions of a stratified random share (`fraction`) or count (`n`) of `y`, sorted.

    Each class gives round(share x its size) rows; with `keep_one`, at least one row of each class is
    left out (so the rows not taken still hold both classes)."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    share = fraction if fraction is not None else min(1.0, n / len(y))
    taken = []
    for cls in np.unique(y):
        rows = np.flatnonzero(y == cls)
        m = int(round(share * len(rows)))
        if keep_one:
            m = min(m, len(rows) - 1)
        m = max(m, 0 if keep_one else min(1, len(rows)))
        taken.append(rng.permutation(rows)[:m])
    return np.sort(np.concatenate(taken)) if taken else np.array([], dtype=int)


# --------------------------------------------------------------------------- scores
def binary_metrics(y: np.ndarray, score: np.ndarray, pred: np.ndarray) -> dict:
    """Positive-class precision, recall, F1; accuracy; AUC of `score`; macro-F1; the confusion counts.

    Undefined values are NaN and named in `undefined`: precision with no positive prediction, recall with no
    positive, AUC with one class present. F1 = 2TP / (2TP + FP + FN) (0 when there are positives but none is
    found; undefined only with no positive and no positive prediction), as sklearn computes it.
    """
    y, pred = np.asarray(y).astype(bool), np.asarray(pred).astype(bool)
    tp, fp = int((y & pred).sum()), int((~y & pred).sum())
    fn, tn = int((y & ~pred).sum()), int((~y & ~pred).sum())
    n = len(y)
    undefined = []

    def ratio(num, den, what):
        if den == 0:
            undefined.append(what)
            return float("nan")
        return num / den

    precision = ratio(tp, tp + fp, "precision (no positive prediction)")
    recall = ratio(tp, tp + fn, "recall (no positive)")
    f1 = ratio(2 * tp, 2 * tp + fp + fn, "F1 (no positive, none predicted)")
    f1_negative = (2 * tn / (2 * tn + fp + fn)) if (2 * tn + fp + fn) else float("nan")
    if y.all() or not y.any():
        undefined.append("AUC (one class)")
        auc = float("nan")
    else:
        auc = float(roc_auc_score(y, score))
    return {"n": n, "positives": int(y.sum()), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": precision, "recall": recall, "f1": f1, "accuracy": (tp + tn) / n if n else float("nan"),
            "auc": auc, "macro_f1": float(np.nanmean([f1, f1_negative])) if n else float("nan"),
            "predicted_positive_rate": (tp + fp) / n if n else float("nan"), "undefined": "; ".join(undefined)}


# --------------------------------------------------------------------------- one job
def fit_and_predict(*, name: str, options: dict, classes: list[str], train_text: list[str], train_label: list[str],
                    train_split: list[str], test_text: list[str], cache: str | None = None, read_cache: bool = True,
                    label: str = "", where: str = "", describe: str = "") -> dict:
    """Fit one model on one fold's training rows and score its test rows (a run_jobs job).

    Returns logits, train_seconds (fit, checkpoint loading included), infer_seconds (predict on the test
    rows), the model's notes and epochs run. The model is made (its module imported: seconds for torch in a
    fresh worker process) before the clock starts, for every model alike. With `cache` the result is
    written to that JSON file, and read from it instead of training when `read_cache` and it exists.
    A ValueError from fitting (e.g. scikit-learn rejecting an option, or an option these rows cannot
    satisfy) is an InputError naming the model (`label`) and the fold (`where`)."""
    if cache and read_cache and Path(cache).is_file():
        result = json.loads(Path(cache).read_text())
        result["cached"] = True
        return result
    from mhaudit.models import create

    frame = pd.DataFrame({"text": train_text, "label": train_label, "split": train_split})
    model = create(name, **options)
    start = time.perf_counter()
    try:
        model.fit(frame, classes)
    except ValueError as exc:  # sklearn's InvalidParameterError is a ValueError too
        text = str(exc).strip()
        raise InputError(f"model '{label or name}' could not be trained{' (' + where + ')' if where else ''}: "
                         f"{text.splitlines()[0] if text else type(exc).__name__}") from None
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    logits = model.predict_logits(test_text)
    infer_seconds = time.perf_counter() - start
    history = getattr(model, "history", None) or []
    result = {"logits": np.asarray(logits, dtype=float).tolist(), "train_seconds": train_seconds,
              "infer_seconds": infer_seconds, "notes": list(getattr(model, "notes", []) or []),
              "epochs": len([h for h in history if h.get("stage", "fit") == "fit"]) or None,
              "best_epoch": getattr(model, "best_epoch", None), "cached": False}
    if cache:
        write_text_atomic(cache, json.dumps(result))
    if describe:
        print(f"  {describe}: trained in {train_seconds:.1f} s, predicted {len(test_text)} rows in "
              f"{infer_seconds:.1f} s", file=sys.stderr, flush=True)
    return result


def _job_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _hash_rows(ids: Sequence[str], labels: Sequence[str], texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i, y, t in zip(ids, labels, texts):
        h.update(f"{i}\x1f{y}\x1f{t}\x1e".encode())
    return h.hexdigest()


def checkpoint_fingerprint(source: str) -> str:
    """What a job's cache key knows of a model's checkpoint: for a folder the SHA-256 of every file in it
    with its relative path, so a checkpoint retrained or replaced in place invalidates the cached jobs; for
    a hub id the id itself (the hub is not asked)."""
    folder = Path(source).expanduser()
    if not folder.is_dir():
        return f"id:{source}"
    from mhaudit.core.pinned import _digest  # cached by size and mtime: each file is hashed once per process

    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        h.update(f"{path.relative_to(folder).as_posix()}\x1f{_digest(path, stat.st_size, stat.st_mtime_ns)}\x1e"
                 .encode())
    return h.hexdigest()


def _check_model(spec: ModelSpec, options: dict) -> str | None:
    """Make the model once, before any training: an unknown model or a bad option fails here, as does a
    `max_length` beyond the checkpoint's position embeddings. Returns the fingerprint of its `checkpoint`
    option (None without one; 'minilm' is the packaged folder)."""
    from mhaudit.models import create
    from mhaudit.models.base import REGISTRY

    try:
        model = create(spec.name, **options)
    except (TypeError, ValueError, InputError) as exc:
        if isinstance(exc, InputError) and spec.name not in REGISTRY:  # unknown model, missing dependency
            raise
        raise InputError(f"model '{spec.label}': {exc}") from None
    checkpoint = model.options.get("checkpoint")
    if checkpoint is None:
        return None
    source = str(checkpoint)
    if spec.family() != "other":
        from mhaudit.models.transformer import check_max_length, resolve_checkpoint

        source = resolve_checkpoint(source)
        config = Path(source) / "config.json"
        if config.is_file():
            limit = json.loads(config.read_text()).get("max_position_embeddings")
            try:
                check_max_length(model.options["max_length"], limit, str(checkpoint))
            except InputError as exc:
                raise InputError(f"model '{spec.label}': {exc}") from None
    return checkpoint_fingerprint(source)


# --------------------------------------------------------------------------- the benchmark
@dataclass
class BenchmarkRun:
    """The report (`result`) and the out-of-fold predictions (one row per model x protocol x fold x test row)."""

    result: Result
    predictions: pd.DataFrame


def run_benchmark(frame: pd.DataFrame, classes: list[str], options: BenchmarkOptions, *,
                  train_labels: pd.Series | None = None, train_source: str = CORPUS_SOURCE,
                  references: Mapping[str, pd.Series] | None = None, synthetic: bool = False,
                  title: str | None = None) -> BenchmarkRun:
    """Benchmark `options.models` on the rows of `frame` (columns id, text; label when the corpus's own labels
    are used) under every protocol.

    `train_labels` (class names indexed by row id; default: the frame's label column) are what the models
    learn and the folds are stratified by; rows without one are left out. `references` maps a source name to
    class names indexed by id (any subset of the rows); every model is also scored against each.
    """
    preset, specs, protocols = options.resolved()
    classes = [str(c) for c in classes]
    if len(classes) != 2:
        raise InputError(f"the benchmark needs a binary corpus (two classes); this one has {len(classes)}: "
                         f"{', '.join(classes)}")
    positive = options.positive if options.positive is not None else classes[-1]
    if positive not in classes:
        raise InputError(f"positive class '{positive}' is not one of the classes {', '.join(classes)}")
    negative = classes[0] if positive == classes[1] else classes[1]
    model_options = {spec.label: {"seed": options.seed, **({"progress": False} if spec.family() != "other" else {}),
                                  **spec.options} for spec in specs}
    fingerprints = {spec.label: _check_model(spec, model_options[spec.label]) for spec in specs}

    rows = frame.reset_index(drop=True)
    rows = rows.assign(id=rows["id"].astype(str), text=rows["text"].astype(str))
    if train_labels is None:
        if "label" not in rows:
            raise InputError("the rows have no 'label' column and no training labels were given")
        train_labels = pd.Series(rows["label"].astype(str).to_numpy(), index=rows["id"])
    sources = {train_source: _check_source(train_labels, classes, train_source)}
    for name, series in (references or {}).items():
        if name == train_source:
            raise InputError(f"label source '{name}' is both the training source and a reference")
        sources[name] = _check_source(series, classes, name)
    labelled = rows["id"].map(sources[train_source]).notna()
    dropped = int((~labelled).sum())
    rows = rows[labelled].reset_index(drop=True)
    if rows.empty:
        raise InputError(f"no row has a label from the training source '{train_source}'")
    if options.subsample is not None:
        if options.subsample < 2:
            raise InputError(f"subsample must be at least 2, got {options.subsample}")
        if options.subsample < len(rows):
            y_all = (rows["id"].map(sources[train_source]) == positive).to_numpy().astype(int)
            rows = rows.iloc[stratified_take(y_all, n=options.subsample, seed=options.seed, keep_one=False)]
            rows = rows.reset_index(drop=True)
    y_train_all = rows["id"].map(sources[train_source]).to_numpy()
    y = (y_train_all == positive).astype(int)

    fold_sets = {p.label: assign_folds(y, p, options.seed) for p in protocols}

    # ---- jobs: every (protocol, fold, model); rows identical across models
    jobs, meta, design = [], [], []
    corpus_hash = _hash_rows(rows["id"], y_train_all, rows["text"])
    cache_dir = Path(options.cache_dir) if options.cache_dir else None
    total = sum(len(f) for f in fold_sets.values()) * len(specs)
    for protocol in protocols:
        for fold, (train_idx, test_idx) in enumerate(fold_sets[protocol.label], start=1):
            fold_seed = options.seed * 1000 + fold
            val_pos = (stratified_take(y[train_idx], fraction=options.val_fraction, seed=fold_seed)
                       if options.val_fraction > 0 else np.array([], dtype=int))
            split = np.full(len(train_idx), "train", dtype=object)
            split[val_pos] = "val"
            design.append(_design_row(protocol, fold, train_idx, test_idx, split, y, rows, sources, train_source))
            for spec in specs:
                idx, spl = train_idx, split
                if spec.subsample and spec.subsample < len(train_idx):
                    keep = stratified_take(y[train_idx], n=spec.subsample, seed=fold_seed, keep_one=False)
                    idx, spl = train_idx[keep], split[keep]
                if not spec.val:
                    spl = np.full(len(idx), "train", dtype=object)
                payload = dict(name=spec.name, options=model_options[spec.label], classes=classes,
                               train_text=rows["text"].iloc[idx].tolist(), train_label=y_train_all[idx].tolist(),
                               train_split=spl.tolist(), test_text=rows["text"].iloc[test_idx].tolist())
                key = _job_key({"corpus": corpus_hash, "classes": classes, "protocol": protocol.label, "fold": fold,
                                "seed": options.seed, "name": spec.name, "options": model_options[spec.label],
                                "checkpoint": fingerprints[spec.label], "mhaudit": mhaudit.__version__,
                                "val": spec.val, "subsample": spec.subsample, "val_fraction": options.val_fraction,
                                "train": idx.tolist(), "split": spl.tolist(), "test": test_idx.tolist()})
                cache = str(cache_dir / f"{key}.json") if cache_dir else None
                where = f"{protocol.label}, fold {fold}"
                describe = f"[{len(jobs) + 1}/{total}] {spec.label} · {where}" if options.progress else ""
                jobs.append({**payload, "cache": cache, "read_cache": options.resume, "label": spec.label,
                             "where": where, "describe": describe})
                meta.append((protocol, fold, spec, test_idx, len(idx), int((spl == "val").sum())))
    if cache_dir:
        cache_dir.mkdir(parents=True, exist_ok=True)
    results = run_jobs(fit_and_predict, jobs, executor=options.executor, workers=options.workers)

    # ---- score every job against every source
    pos_col, neg_col = classes.index(positive), classes.index(negative)
    fold_rows, predictions, notes = [], [], []
    for (protocol, fold, spec, test_idx, n_train, n_val), result in zip(meta, results):
        logits = np.asarray(result["logits"], dtype=float).reshape(len(test_idx), len(classes))
        score = logits[:, pos_col] - logits[:, neg_col]
        pred = logits.argmax(axis=1) == pos_col
        ids = rows["id"].iloc[test_idx].to_numpy()
        truths = {f"label_{s}": pd.Series(ids).map(v).to_numpy() for s, v in sources.items()}
        predictions.append(pd.DataFrame({"id": ids, "model": spec.label, "protocol": protocol.label, "fold": fold,
                                         "score": score, "predicted": np.where(pred, positive, negative), **truths}))
        for source, labels in sources.items():
            truth = pd.Series(ids).map(labels)
            have = truth.notna().to_numpy()
            if not have.any():
                continue
            metrics = binary_metrics(truth[have].to_numpy() == positive, score[have], pred[have])
            fold_rows.append({"model": spec.label, "protocol": protocol.label, "fold": fold, "scored_against": source,
                              "role": "training labels" if source == train_source else "reference",
                              "n_train": n_train, "n_val": n_val, **metrics,
                              "train_seconds": result["train_seconds"], "infer_seconds": result["infer_seconds"]})
        notes.append({"model": spec.label, "protocol": protocol.label, "fold": fold, "epochs": result.get("epochs"),
                      "best_epoch": result.get("best_epoch"), "cached": bool(result.get("cached")),
                      "notes": " | ".join(result.get("notes") or [])})
    fold_scores = pd.DataFrame(fold_rows)
    summary = summarise(fold_scores)
    effect = protocol_effect(summary)
    efficiency = efficiency_table(summary, train_source)
    tradeoff = summary[["model", "protocol", "scored_against", "role", "precision", "recall", "f1",
                        "predicted_positive_rate", "positive_rate"]].copy()
    training_vs_reference = _training_vs_reference(rows, sources, train_source, positive)
    label_table = _label_source_table(rows, sources, train_source, positive, dropped)

    described = ", ".join(f"{s.label} ({s.name}{', ' + _short(s.options) if s.options else ''}"
                          f"{'; trained on ' + str(s.subsample) + ' rows of each fold' if s.subsample else ''}"
                          f"{'; no validation rows' if not s.val else ''})" for s in specs)
    others = [repr(r) for r in sources if r != train_source]
    intro = (f"{len(rows):,} rows, positive class '{positive}', trained on the label source '{train_source}'"
             f"{'; scored also against ' + ', '.join(others) if others else ''}. "
             f"Protocols: {', '.join(p.label for p in protocols)} (seed {options.seed}, folds identical for every "
             f"model; {options.val_fraction:.0%} of each fold's training rows held out as validation rows for "
             f"the models with validation rows, the others train on all of them). "
             f"Models: {described}."
             + (f" Preset: {preset.description}." if preset else "")
             + (f" A stratified subsample of {options.subsample:,} rows was drawn first." if options.subsample else ""))
    sections = [
        Section("Design", intro, {"design": pd.DataFrame(design), "label_sources": label_table}),
        Section("Scores side by side",
                "Mean and standard deviation over folds (holdout: one fold, no SD). Metrics of the positive class "
                "unless macro; AUC of the positive-minus-negative logit; seconds of wall time per fold.",
                {"summary": summary}),
        Section("Protocol effect",
                "Cross-validation mean minus holdout, per model, label source and metric (positive: CV scores "
                "higher).", {"protocol_effect": effect}),
        Section("Efficiency frontier",
                "F1 against mean training time per fold, on the training labels; on_frontier: no other model "
                "reaches at least its F1 in at most its training time (and is better in one).",
                {"efficiency": efficiency}),
        Section("Recall / precision trade-off",
                "Positive-class recall against precision per model, protocol and label source, with the predicted "
                "and the true positive rate.", {"tradeoff": tradeoff}),
    ]
    if len(sources) > 1:
        sections.append(Section(
            "Training labels against the references",
            "The training labels themselves scored against each reference source on the rows both label "
            "(the ceiling a model that reproduced its training labels perfectly would reach against the "
            "reference); kappa is Cohen's.", {"training_vs_reference": training_vs_reference}))
    sections.append(Section("Per-fold scores", "One row per model, protocol, fold and label source.",
                            {"fold_scores": fold_scores}))
    sections.append(Section("Model notes", "What each fit reported (early stopping, kept epoch, calibration).",
                            {"model_notes": pd.DataFrame(notes)}))
    if options.figures and not summary.empty:
        if not effect.empty:
            sections[2].figures["protocol effect (F1)"] = figure_protocol_effect(effect)
        sections[3].figures["efficiency frontier"] = figure_efficiency(efficiency)
        sections[4].figures["recall vs precision"] = figure_tradeoff(tradeoff)
    result = Result(title or f"Benchmark: {len(specs)} model(s), {len(protocols)} protocol(s)", sections,
                    synthetic=synthetic,
                    options={"models": [dict(label=s.label, name=s.name, options=s.options, val=s.val,
                                             subsample=s.subsample) for s in specs],
                             "protocols": [p.label for p in protocols], "seed": options.seed,
                             "val_fraction": options.val_fraction, "preset": options.preset, "positive": positive,
                             "train_source": train_source, "references": [s for s in sources if s != train_source],
                             "subsample": options.subsample, "executor": options.executor})
    return BenchmarkRun(result, pd.concat(predictions, ignore_index=True))


def _short(options: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items())


def _check_source(series: pd.Series, classes: list[str], name: str) -> pd.Series:
    series = pd.Series(series).dropna()
    series = pd.Series(series.astype(str).to_numpy(), index=series.index.astype(str))
    unknown = sorted(set(series) - set(classes))
    if unknown:
        raise InputError(f"label source '{name}' has value(s) {', '.join(unknown[:5])}; expected the classes "
                         f"{', '.join(classes)}")
    if series.index.duplicated().any():
        raise InputError(f"label source '{name}' labels item '{series.index[series.index.duplicated()][0]}' twice")
    return series


def _design_row(protocol, fold, train_idx, test_idx, split, y, rows, sources, train_source) -> dict:
    """n_train: the fold's training rows, validation rows included (as in fold_scores); n_val: how many of
    them a model with validation rows holds out."""
    test_ids = rows["id"].iloc[test_idx]
    row = {"protocol": protocol.label, "fold": fold, "n_train": len(train_idx),
           "n_val": int((split == "val").sum()), "n_test": len(test_idx),
           "train_positive_rate": float(y[train_idx].mean()), "test_positive_rate": float(y[test_idx].mean())}
    for source, labels in sources.items():
        if source != train_source:
            row[f"test_rows_with_{source}"] = int(test_ids.map(labels).notna().sum())
    return row


def _label_source_table(rows, sources, train_source, positive, dropped) -> pd.DataFrame:
    out = []
    for source, labels in sources.items():
        values = rows["id"].map(labels)
        have = values.notna()
        out.append({"source": source, "role": "training labels" if source == train_source else "reference",
                    "rows_labelled": int(have.sum()), "positives": int((values[have] == positive).sum()),
                    "positive_rate": float((values[have] == positive).mean()) if have.any() else float("nan"),
                    "rows_left_out": dropped if source == train_source else 0})
    return pd.DataFrame(out)


def _training_vs_reference(rows, sources, train_source, positive) -> pd.DataFrame:
    out = []
    train = rows["id"].map(sources[train_source])
    for source, labels in sources.items():
        if source == train_source:
            continue
        ref = rows["id"].map(labels)
        have = ref.notna() & train.notna()
        if not have.any():
            continue
        y_ref, y_tr = (ref[have] == positive).to_numpy(), (train[have] == positive).to_numpy()
        metrics = binary_metrics(y_ref, y_tr.astype(float), y_tr)
        kappa = (float(cohen_kappa_score(y_ref, y_tr)) if len(np.unique(np.r_[y_ref, y_tr])) > 1 else float("nan"))
        out.append({"training_source": train_source, "reference": source, **metrics, "kappa": kappa})
    return pd.DataFrame(out)


def summarise(fold_scores: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD (ddof 1; NaN for one fold) over folds per model, protocol and label source; NaN folds are
    left out of a metric's mean and counted in `folds_undefined`."""
    if fold_scores.empty:
        return pd.DataFrame()
    keys = ["model", "protocol", "scored_against", "role"]
    out = []
    for key, group in fold_scores.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        row["folds"] = len(group)
        row["n_test"] = int(group["n"].sum())
        for metric in (*METRICS, *TIMES):
            values = group[metric].to_numpy(dtype=float)
            ok = values[~np.isnan(values)]
            row[metric] = float(ok.mean()) if ok.size else float("nan")
            row[f"{metric}_sd"] = float(ok.std(ddof=1)) if ok.size > 1 else float("nan")
        row["predicted_positive_rate"] = float(group["predicted_positive_rate"].mean())
        row["positive_rate"] = float(group["positives"].sum() / group["n"].sum())
        row["folds_undefined"] = int((group["undefined"] != "").sum())
        out.append(row)
    return pd.DataFrame(out)


def protocol_effect(summary: pd.DataFrame) -> pd.DataFrame:
    """CV mean minus holdout, per model, label source, CV protocol and metric."""
    if summary.empty:
        return pd.DataFrame()
    holdouts = summary[summary["protocol"].str.startswith("holdout")]
    cvs = summary[~summary["protocol"].str.startswith("holdout")]
    out = []
    for _, h in holdouts.iterrows():
        for _, c in cvs[(cvs["model"] == h["model"]) & (cvs["scored_against"] == h["scored_against"])].iterrows():
            for metric in METRICS:
                out.append({"model": h["model"], "scored_against": h["scored_against"], "holdout": h["protocol"],
                            "cv": c["protocol"], "metric": metric, "holdout_value": h[metric],
                            "cv_mean": c[metric], "cv_sd": c[f"{metric}_sd"], "difference": c[metric] - h[metric]})
    return pd.DataFrame(out)


def efficiency_table(summary: pd.DataFrame, train_source: str) -> pd.DataFrame:
    """Per protocol, F1 on the training labels against mean training time, with the Pareto frontier."""
    table = summary[summary["scored_against"] == train_source][
        ["model", "protocol", "f1", "f1_sd", "auc", "recall", "train_seconds", "train_seconds_sd", "infer_seconds",
         "n_test", "folds"]].copy()
    table["test_rows_per_second"] = table["n_test"] / table["folds"] / table["infer_seconds"]
    frontier = []
    for _, row in table.iterrows():
        same = table[(table["protocol"] == row["protocol"]) & (table["model"] != row["model"])]
        f1 = -np.inf if np.isnan(row["f1"]) else row["f1"]
        other_f1 = same["f1"].fillna(-np.inf)
        dominated = ((other_f1 >= f1) & (same["train_seconds"] <= row["train_seconds"])
                     & ((other_f1 > f1) | (same["train_seconds"] < row["train_seconds"]))).any()
        frontier.append(bool(not dominated and not np.isnan(row["f1"])))
    table["on_frontier"] = frontier
    return table.drop(columns=["n_test", "folds"]).reset_index(drop=True)


# --------------------------------------------------------------------------- label sources from files
def label_sources(corpus_frame: pd.DataFrame, classes: list[str], labels: pd.DataFrame | None, *,
                  train_labeler: str = CORPUS_SOURCE, reference_labelers: Sequence[str] = (),
                  task: str | None = None, positive: str | None = None) -> tuple[pd.Series, dict[str, pd.Series]]:
    """The training source and the references as class names indexed by corpus id.

    'corpus' is the corpus's own label column; any other name is a labeler of the labels table (values 1 ->
    the positive class, 0 -> the other; null values are left out)."""
    positive = positive if positive is not None else classes[-1]
    if len(classes) != 2 or positive not in classes:
        raise InputError(f"the benchmark needs a binary corpus with the positive class among its two classes; "
                         f"classes: {', '.join(classes)}")
    negative = classes[0] if positive == classes[1] else classes[1]
    names = [train_labeler, *reference_labelers]
    if len(set(names)) < len(names):
        raise InputError(f"a label source is named twice ({', '.join(names)})")
    ids = corpus_frame["id"].astype(str)

    def source(name: str) -> pd.Series:
        if name == CORPUS_SOURCE:
            return pd.Series(corpus_frame["label"].astype(str).to_numpy(), index=ids)
        if labels is None:
            raise InputError(f"label source '{name}' needs a labels table (--labels)")
        mine = labels[labels["labeler"].astype(str) == name]
        if task is not None:
            mine = mine[mine["task"].astype(str) == task]
        if mine.empty:
            known = sorted(set(labels["labeler"].astype(str)))
            raise InputError(f"the labels table has no labels from '{name}'"
                             f"{' for task ' + repr(task) if task else ''}; labelers: {', '.join(known)}")
        tasks = sorted(set(mine["task"].astype(str)))
        if len(tasks) > 1:
            raise InputError(f"labeler '{name}' labels several tasks ({', '.join(tasks)}); choose one with --task")
        mine = mine[mine["value"].notna()]
        values = mine["value"].astype(int).map({1: positive, 0: negative})
        series = pd.Series(values.to_numpy(), index=mine["item_id"].astype(str).to_numpy())
        unmatched = int((~series.index.isin(ids)).sum())
        if unmatched == len(series):
            raise InputError(f"none of the {len(series)} items labelled by '{name}' is a row id of the corpus")
        return series[series.index.isin(ids)]

    return source(train_labeler), {name: source(name) for name in reference_labelers}


def summary_lines(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as printable strings: 'mean ± sd' per metric."""
    def pm(row, metric, digits=3):
        value, sd = row[metric], row[f"{metric}_sd"]
        if np.isnan(value):
            return "n/a"
        return f"{value:.{digits}f}" + ("" if np.isnan(sd) else f" ± {sd:.{digits}f}")

    return pd.DataFrame([{"model": r["model"], "protocol": r["protocol"], "scored against": r["scored_against"],
                          "F1": pm(r, "f1"), "precision": pm(r, "precision"), "recall": pm(r, "recall"),
                          "AUC": pm(r, "auc"), "macro-F1": pm(r, "macro_f1"),
                          "train s": pm(r, "train_seconds", 1), "infer s": pm(r, "infer_seconds", 2)}
                         for _, r in summary.iterrows()])


def write_predictions(predictions: pd.DataFrame, path: Path) -> None:
    from mhaudit.tables.io import atomic_path

    with atomic_path(path) as tmp:
        predictions.to_parquet(tmp, index=False)


# --------------------------------------------------------------------------- figures (each from its table)
def _matplotlib():
    """pyplot (Agg backend) and the PNG writer of the CPFE figures, imported on first use (slow imports)."""
    from mhaudit.audits.cpfe.figures import plt, png_bytes

    return plt, png_bytes


def figure_protocol_effect(effect: pd.DataFrame) -> bytes:
    """Bars: CV minus holdout F1 per model, one group per label source and CV protocol."""
    plt, png_bytes = _matplotlib()
    table = effect[effect["metric"] == "f1"]
    groups = list(dict.fromkeys(zip(table["scored_against"], table["cv"])))
    models = list(dict.fromkeys(table["model"]))
    fig, ax = plt.subplots(figsize=(1.5 + 0.5 * len(models) * len(groups), 3.4))
    width = 0.8 / max(len(groups), 1)
    for i, (source, cv) in enumerate(groups):
        part = table[(table["scored_against"] == source) & (table["cv"] == cv)].set_index("model").reindex(models)
        ax.bar(np.arange(len(models)) + i * width, part["difference"], width, label=f"{cv} vs holdout, {source}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(models)) + width * (len(groups) - 1) / 2, models, rotation=20, ha="right")
    ax.set_ylabel("F1: CV mean − holdout")
    ax.legend(fontsize=7)
    return png_bytes(fig)


def figure_efficiency(efficiency: pd.DataFrame) -> bytes:
    """F1 against training time (log scale), one panel per protocol; frontier models joined by a line."""
    plt, png_bytes = _matplotlib()
    protocols = list(dict.fromkeys(efficiency["protocol"]))
    fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 3.4), squeeze=False)
    for ax, protocol in zip(axes[0], protocols):
        part = efficiency[efficiency["protocol"] == protocol]
        ax.scatter(part["train_seconds"], part["f1"], c=np.where(part["on_frontier"], "C3", "C0"))
        for _, row in part.iterrows():
            ax.annotate(row["model"], (row["train_seconds"], row["f1"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        front = part[part["on_frontier"]].sort_values("train_seconds")
        ax.plot(front["train_seconds"], front["f1"], color="C3", lw=0.8)
        seconds = part["train_seconds"]
        if (seconds > 0).all() and seconds.max() > 10 * seconds.min():  # log only where times span decades
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel("training time per fold (s)")
        ax.set_ylabel("F1 (training labels)")
        ax.set_title(protocol, fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def figure_tradeoff(tradeoff: pd.DataFrame) -> bytes:
    """Recall against precision, one panel per label source, one marker per protocol, F1 iso-lines."""
    plt, png_bytes = _matplotlib()
    sources = list(dict.fromkeys(tradeoff["scored_against"]))
    protocols = list(dict.fromkeys(tradeoff["protocol"]))
    markers = "osD^v<>"
    fig, axes = plt.subplots(1, len(sources), figsize=(4.2 * len(sources), 3.8), squeeze=False)
    grid = np.linspace(0.01, 1, 200)
    for ax, source in zip(axes[0], sources):
        for f in (0.2, 0.4, 0.6, 0.8):
            r = f * grid / (2 * grid - f)
            ok = (r > 0) & (r <= 1)
            ax.plot(grid[ok], r[ok], color="lightgrey", lw=0.7)
        part = tradeoff[tradeoff["scored_against"] == source]
        for j, protocol in enumerate(protocols):
            sub = part[part["protocol"] == protocol]
            ax.scatter(sub["precision"], sub["recall"], marker=markers[j % len(markers)], label=protocol)
            for _, row in sub.iterrows():
                ax.annotate(row["model"], (row["precision"], row["recall"]), fontsize=6, xytext=(2, 2),
                            textcoords="offset points")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("precision")
        ax.set_ylabel("recall")
        ax.set_title(f"scored against {source}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


__all__ = ["ALIASES", "PRESETS", "BenchmarkOptions", "BenchmarkRun", "ModelSpec", "Protocol", "assign_folds",
           "binary_metrics", "efficiency_table", "fit_and_predict", "label_sources", "protocol_effect",
           "run_benchmark", "stratified_take", "summarise", "summary_lines", "write_predictions"]
