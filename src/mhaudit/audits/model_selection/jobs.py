"""The fold jobs: every (protocol, fold, model) is one job run through `mhaudit.core.executors.run_jobs`
(in-process by default, local processes or Ray on request). With a `cache_dir` each finished job is
written there, keyed by a hash of everything it depends on (the rows, labels, classes in order, folds,
validation rows, model name and options, the checkpoint folder's file digests and the mhaudit version),
and a re-run reads it back unless `resume` is off (then it is trained again and written over).

Training time is the wall time of fitting the model, checkpoint loading included; the model's module is
imported and the model object made before the clock starts, for every family alike. Inference time is
predicting the test rows."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import mhaudit
from mhaudit.audits.model_selection.folds import Fold, stratified_take
from mhaudit.audits.model_selection.options import ModelSelectionOptions, ModelSpec
from mhaudit.audits.model_selection.soft import soft_label_rows
from mhaudit.core.errors import InputError
from mhaudit.tables.io import write_text_atomic


class SoftLabels(NamedTuple):
    """The training labeler's probability of the positive class per row (soft labels) and the two class names."""

    probability: np.ndarray
    positive: str
    negative: str


class FoldJob(NamedTuple):
    """What a job's result belongs to: its fold and model, and how many training rows it had (validation
    rows included) and of them how many were validation rows."""

    fold: Fold
    spec: ModelSpec
    n_train: int
    n_val: int


def fit_and_predict(
    *,
    name: str,
    options: dict,
    classes: list[str],
    train_text: list[str],
    train_label: list[str],
    train_split: list[str],
    test_text: list[str],
    train_weight: list[float] | None = None,
    cache: str | None = None,
    read_cache: bool = True,
    label: str = "",
    where: str = "",
) -> dict:
    """Fit one model on one fold's training rows and score its test rows (a run_jobs job).

    Returns logits, train_seconds (fit, checkpoint loading included), infer_seconds (predict on the test
    rows), the model's notes and epochs run. The model is made (its module imported: seconds for torch in a
    fresh worker process) before the clock starts, for every model alike. With `cache` the result is
    written to that JSON file, and read from it instead of training when `read_cache` and it exists.
    A ValueError from fitting (e.g. scikit-learn rejecting an option, or an option these rows cannot
    satisfy) is an InputError naming the model (`label`) and the fold (`where`)."""
    if cache and read_cache and (result := _read_cache(Path(cache))) is not None:
        return result
    from mhaudit.models import create

    frame = pd.DataFrame({"text": train_text, "label": train_label, "split": train_split})
    if train_weight is not None:  # soft labels (audits.model_selection.soft)
        frame["weight"] = train_weight
    model = create(name, **options)
    start = time.perf_counter()
    try:
        model.fit(frame, classes)
    except ValueError as exc:  # sklearn's InvalidParameterError is a ValueError too
        text = str(exc).strip()
        raise InputError(
            f"model '{label or name}' could not be trained{' (' + where + ')' if where else ''}: "
            f"{text.splitlines()[0] if text else type(exc).__name__}"
        ) from None
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    logits = model.predict_logits(test_text)
    infer_seconds = time.perf_counter() - start
    history = getattr(model, "history", None) or []
    result = {
        "logits": np.asarray(logits, dtype=float).tolist(),
        "train_seconds": train_seconds,
        "infer_seconds": infer_seconds,
        "notes": list(getattr(model, "notes", []) or []),
        "epochs": len([h for h in history if h.get("stage", "fit") == "fit"]) or None,
        "best_epoch": getattr(model, "best_epoch", None),
        "cached": False,
    }
    if cache:
        write_text_atomic(cache, json.dumps(result))
    return result


def _read_cache(path: Path) -> dict | None:
    """A finished job's result from its cache file; None when there is none, or when it is damaged (cut short,
    edited): that job is trained again and the file written over (docs/faults.md)."""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none (FileNotFoundError), unreadable, not JSON, not UTF-8
        return None
    if (
        not isinstance(result, dict)
        or not isinstance(result.get("logits"), list)
        or not all(isinstance(result.get(k), (int, float)) for k in ("train_seconds", "infer_seconds"))
    ):
        return None
    result["cached"] = True
    return result


def _job_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _hash_rows(ids: Sequence[str], labels: Sequence[str] | np.ndarray, texts: Sequence[str]) -> str:
    return hashlib.sha256("".join(f"{i}\x1f{y}\x1f{t}\x1e" for i, y, t in zip(ids, labels, texts)).encode()).hexdigest()


def fit_options(specs: Sequence[ModelSpec], seed: int) -> dict[str, dict]:
    """The options each model (by label) is made with: the run's seed, then the spec's own options."""
    return {spec.label: {"seed": seed, **spec.options} for spec in specs}


def plan_jobs(
    folds: Sequence[Fold],
    specs: Sequence[ModelSpec],
    *,
    rows: pd.DataFrame,
    labels: np.ndarray,
    y: np.ndarray,
    classes: list[str],
    model_options: dict[str, dict],
    fingerprints: dict[str, str | None],
    options: ModelSelectionOptions,
    soft: SoftLabels | None = None,
) -> tuple[list[dict], list[FoldJob]]:
    """One `fit_and_predict` job per fold and model, fold by fold, on rows identical across models, with
    the cache file its key names under `options.cache_dir`; `labels` are the training labels as class
    names, `y` as 0/1; with `soft`, each fold's training posts enter as soft labels (`soft_label_rows`)."""
    corpus_hash = _hash_rows(rows["id"], labels, rows["text"])
    cache_dir = Path(options.cache_dir) if options.cache_dir else None
    jobs, placed = [], []
    for fold in folds:
        for spec in specs:
            idx, split = _training_rows(fold, spec, y)
            n_train, n_val = len(idx), int((split == "val").sum())
            train_label, weight = labels[idx], None
            if soft is not None:
                idx, train_label, split, weight = soft_label_rows(
                    idx, split, soft.probability, labels, soft.positive, soft.negative
                )
            key = _job_key(
                {
                    "corpus": corpus_hash,
                    "classes": classes,
                    "protocol": fold.protocol.label,
                    "fold": fold.number,
                    "seed": options.seed,
                    "name": spec.name,
                    "options": model_options[spec.label],
                    "checkpoint": fingerprints[spec.label],
                    "mhaudit": mhaudit.__version__,
                    "val": spec.val,
                    "subsample": spec.subsample,
                    "val_fraction": options.val_fraction,
                    "train": idx.tolist(),
                    "split": split.tolist(),
                    "test": fold.test.tolist(),
                    **({"weight": weight.tolist(), "label": train_label.tolist()} if weight is not None else {}),
                }
            )
            jobs.append(
                dict(
                    name=spec.name,
                    options=model_options[spec.label],
                    classes=classes,
                    train_text=rows["text"].iloc[idx].tolist(),
                    train_label=train_label.tolist(),
                    train_split=split.tolist(),
                    test_text=rows["text"].iloc[fold.test].tolist(),
                    train_weight=None if weight is None else weight.tolist(),
                    cache=str(cache_dir / f"{key}.json") if cache_dir else None,
                    read_cache=options.resume,
                    label=spec.label,
                    where=fold.where,
                )
            )
            placed.append(FoldJob(fold, spec, n_train, n_val))
    return jobs, placed


def _training_rows(fold: Fold, spec: ModelSpec, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fold's training rows a model trains on (a stratified `subsample` of them where the spec asks),
    with their split: the fold's validation rows for a model with `val`, all 'train' otherwise."""
    idx, split = fold.train, fold.split
    if spec.subsample and spec.subsample < len(fold.train):
        keep = stratified_take(y[fold.train], n=spec.subsample, seed=fold.seed, keep_one=False)
        idx, split = fold.train[keep], fold.split[keep]
    if not spec.val:
        split = np.full(len(idx), "train", dtype=object)
    return idx, split


def checkpoint_fingerprint(source: str) -> str:
    """What a job's cache key knows of a model's checkpoint: for a folder the SHA-256 of every file in it
    with its relative path, so a checkpoint retrained or replaced in place invalidates the cached jobs; for
    a hub id the id itself (the hub is not asked)."""
    folder = Path(source).expanduser()
    if not folder.is_dir():
        return f"id:{source}"
    from mhaudit.core.pinned import file_sha256  # cached by size and mtime: each file is hashed once per process

    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        h.update(
            f"{path.relative_to(folder).as_posix()}\x1f{file_sha256(path, stat.st_size, stat.st_mtime_ns)}\x1e".encode()
        )
    return h.hexdigest()


def check_model(spec: ModelSpec, options: dict, *, weighted: bool = False) -> str | None:
    """Make the model once, before any training: an unknown model or a bad option fails here, as does a
    `max_length` beyond the checkpoint's position embeddings, and a model that cannot take sample weights when
    `weighted` (soft labels). Returns the fingerprint of its `checkpoint`
    option (None without one; 'minilm' is the packaged folder)."""
    from mhaudit.models import create
    from mhaudit.models.base import REGISTRY

    try:
        model = create(spec.name, **options)
    except (TypeError, ValueError, InputError) as exc:
        if isinstance(exc, InputError) and spec.name not in REGISTRY:  # unknown model, missing dependency
            raise
        raise InputError(f"model '{spec.label}': {exc}") from None
    if weighted and not getattr(model, "sample_weights", False):
        raise InputError(
            f"model '{spec.label}' cannot train on soft labels (it takes no sample weights; tfidf-lr and "
            "char-tfidf-lr do): give --no-soft-labels to train it on the training labeler's hard labels"
        )
    checkpoint = model.options.get("checkpoint")
    if checkpoint is None:
        return None
    source = str(checkpoint)
    if spec.family() != "other":
        from mhaudit.models.checkpoints import check_max_length, resolve_checkpoint

        source = resolve_checkpoint(source)
        config = Path(source) / "config.json"
        if config.is_file():
            limit = json.loads(config.read_text()).get("max_position_embeddings")
            try:
                check_max_length(model.options["max_length"], limit, str(checkpoint))
            except InputError as exc:
                raise InputError(f"model '{spec.label}': {exc}") from None
    return checkpoint_fingerprint(source)


__all__ = [
    "FoldJob",
    "SoftLabels",
    "check_model",
    "checkpoint_fingerprint",
    "fit_and_predict",
    "fit_options",
    "plan_jobs",
]
