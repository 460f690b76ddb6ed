"""The predictions table: one row per example x model x seed, one raw score column per class.

Our models write it with `predict_corpus`; a user's own model's outputs enter through
`read_predictions` (CSV or Parquet with `logit_<class>` or `prob_<class>` columns), which validates
every column and turns probabilities into log-probabilities, saying so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_table

KEY_COLUMNS = ("id", "model", "seed", "platform", "dataset", "split", "label")
PROB_SUM_TOLERANCE = 1e-3  # probabilities written as text lose digits; a row must sum to 1 within this
LOGIT, PROB = "logit_", "prob_"


def logit_column(cls: str) -> str:
    return f"{LOGIT}{cls}"


def predict_corpus(model, corpus: Corpus, *, model_name: str, seed: int,
                   splits: tuple[str, ...] = ("test", "calibration")) -> pd.DataFrame:
    """Score the rows of `corpus` in `splits` with a fitted model; classes in the corpus's mapping order."""
    rows = corpus.frame[corpus.frame["split"].isin(splits)]
    logits = model.predict_logits(rows["text"].astype(str).tolist())
    out = rows[["id", "platform", "dataset", "split", "label"]].reset_index(drop=True)
    out.insert(1, "model", model_name)
    out.insert(2, "seed", np.int64(seed))
    scores = pd.DataFrame(logits, columns=[logit_column(c) for c in corpus.classes])
    return pd.concat([out[list(KEY_COLUMNS)], scores], axis=1)


def scores(predictions: pd.DataFrame, classes: list[str]) -> np.ndarray:
    return predictions[[logit_column(c) for c in classes]].to_numpy(dtype=float)


@dataclass
class PredictionSet:
    """Validated predictions: KEY_COLUMNS + one `logit_<class>` column per class, in class order."""

    frame: pd.DataFrame
    classes: list[str]
    score_kind: str = "logits"  # or "log-probabilities (from prob_ columns)"
    fingerprints: dict[str, str] = field(default_factory=dict)  # file -> sha256


@dataclass(frozen=True)
class PredictionColumns:
    label: str = "label"
    platform: str | None = "platform"  # None: the platform is the file's stem
    model: str = "model"
    seed: str = "seed"
    id: str = "id"
    dataset: str = "dataset"
    split: str = "split"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _score_columns(frame: pd.DataFrame, path: Path) -> tuple[str, list[str]]:
    logits = [c for c in frame.columns if str(c).startswith(LOGIT)]
    probs = [c for c in frame.columns if str(c).startswith(PROB)]
    if logits:
        return LOGIT, [c[len(LOGIT):] for c in logits]
    if probs:
        return PROB, [c[len(PROB):] for c in probs]
    raise InputError(f"has no score columns; expected one 'logit_<class>' (preferred) or 'prob_<class>' column "
                     f"per class, found {', '.join(map(str, frame.columns))}", path=path)


def _where(frame: pd.DataFrame, mask: np.ndarray) -> str:
    i = int(np.flatnonzero(mask)[0])
    return f"{frame[SOURCE_FILE].iat[i]}: row {frame[SOURCE_ROW].iat[i]}"


def read_predictions(paths: list[Path], *, classes: list[str] | None = None,
                     columns: PredictionColumns = PredictionColumns(), model: str | None = None,
                     seed: int | None = None) -> PredictionSet:
    """Read one or more prediction files into one validated PredictionSet.

    `classes` fixes the class order (default: the order of the score columns in the first file); a
    label is a class name, or its index in `classes` when that order is given explicitly. `model`/`seed` fill missing columns.
    """
    frames, kinds, fingerprints = [], set(), {}
    explicit_order = classes is not None
    for path in map(Path, paths):
        frame = read_table(path, required=[columns.label], place=True)
        kind, found = _score_columns(frame, path)
        order = classes or found
        unknown = [c for c in found if c not in order]
        if unknown:
            raise InputError(f"score column '{kind}{unknown[0]}' is for class '{unknown[0]}', which is not one of "
                             f"the classes {', '.join(order)}", path=path)
        missing = [c for c in order if c not in found]
        if missing:
            raise InputError(f"missing score column '{kind}{missing[0]}'; expected one per class "
                             f"({', '.join(kind + c for c in order)})", path=path)
        classes = list(order)
        kinds.add(kind)
        fingerprints[str(path)] = sha256_file(path)
        frames.append(_standardise(frame, path, kind, classes, columns, model, seed, explicit_order))
    if len(kinds) > 1:
        raise InputError("some files have logit_ columns and others prob_ columns; give one kind of score")
    frame = pd.concat(frames, ignore_index=True)
    dup = frame.duplicated(["id", "model", "seed", "platform", "dataset"])
    if dup.any():
        raise InputError(f"{_where(frame, dup.to_numpy())}: id '{frame['id'][dup].iat[0]}' appears twice for the "
                         "same model, seed and platform; ids must be unique there")
    kind = kinds.pop()
    return PredictionSet(frame.drop(columns=[SOURCE_FILE, SOURCE_ROW]), classes,
                         "logits" if kind == LOGIT else "log-probabilities (from prob_ columns)", fingerprints)


def _standardise(frame: pd.DataFrame, path: Path, kind: str, classes: list[str], columns: PredictionColumns,
                 model: str | None, seed: int | None, explicit_order: bool) -> pd.DataFrame:
    if len(frame) == 0:
        raise InputError("has no rows; expected one row per example", path=path)
    values = frame[[f"{kind}{c}" for c in classes]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raw = frame[f"{kind}{classes[col]}"].iat[row]
        shown = "empty" if str(raw).strip() in ("", "nan", "None") else repr(raw)
        raise InputError(f"{_where(frame, bad.any(axis=1))}: score column '{kind}{classes[col]}' is {shown}; "
                         "scores must be finite numbers")
    if kind == PROB:
        outside = (values < 0).any(axis=1) | (values > 1).any(axis=1)
        off = np.abs(values.sum(axis=1) - 1) > PROB_SUM_TOLERANCE
        if outside.any() or off.any():
            mask = outside | off
            i = int(np.flatnonzero(mask)[0])
            raise InputError(f"{_where(frame, mask)}: probabilities sum to {values[i].sum():.6g}; each row of "
                             f"prob_ columns must lie in [0, 1] and sum to 1 (tolerance {PROB_SUM_TOLERANCE})")
        values = np.log(np.clip(values, 1e-12, None))  # log-probabilities serve as logits up to a constant
    labels = frame[columns.label].astype(str).str.strip()
    as_index = labels.str.fullmatch(r"\d+") & ~labels.isin(classes)
    if as_index.any() and not explicit_order:  # an index only means something in an order the user gave
        raise InputError(f"{_where(frame, as_index.to_numpy())}: label '{labels[as_index].iat[0]}' is an index, "
                         "not a class name; pass --classes to say which class each index means")
    labels = labels.where(~as_index, labels[as_index].map(lambda s: classes[int(s)] if int(s) < len(classes)
                                                           else s))
    unknown = ~labels.isin(classes)
    if unknown.any():
        raise InputError(f"{_where(frame, unknown.to_numpy())}: label '{labels[unknown].iat[0]}' is not one of the "
                         f"classes {', '.join(classes)} (or their index 0-{len(classes) - 1})")
    out = pd.DataFrame({
        "id": _column(frame, columns.id, [f"{path.stem}-{r}" for r in frame[SOURCE_ROW]]),
        "model": _column(frame, columns.model, model or path.stem),
        "seed": pd.to_numeric(pd.Series(_column(frame, columns.seed, 0 if seed is None else seed)),
                              errors="coerce"),
        "platform": _column(frame, columns.platform, path.stem),
        "split": _column(frame, columns.split, "test"),
        "label": labels.to_numpy(),
    })
    seeds = out["seed"].to_numpy(dtype=float)
    bad_seed = ~np.isfinite(seeds) | (np.mod(seeds, 1) != 0)
    if bad_seed.any():
        raise InputError(f"{_where(frame, bad_seed)}: seed is not an integer")
    out["seed"] = out["seed"].astype(np.int64)
    out["dataset"] = _column(frame, columns.dataset, None)
    out["dataset"] = out["dataset"].fillna(out["platform"])
    for name in ("id", "model", "platform", "dataset", "split"):
        blank = out[name].isna() | out[name].astype(str).str.strip().isin(["", "nan", "None", "<NA>"])
        if blank.any():
            raise InputError(f"{_where(frame, blank.to_numpy())}: column '{name}' is empty; every row needs one")
    out[SOURCE_FILE], out[SOURCE_ROW] = frame[SOURCE_FILE].to_numpy(), frame[SOURCE_ROW].to_numpy()
    scores = pd.DataFrame(values, columns=[logit_column(c) for c in classes])
    return pd.concat([out[[*KEY_COLUMNS, SOURCE_FILE, SOURCE_ROW]], scores], axis=1)


def _column(frame: pd.DataFrame, name: str | None, default) -> list:
    """A column's values as text, or `default` (a scalar or a list) where the file lacks it."""
    if name and name in frame.columns:
        return [None if pd.isna(v) else str(v) for v in frame[name]]
    return list(default) if isinstance(default, list) else [default] * len(frame)
