"""Prediction files as researchers publish them, read into one validated PredictionSet.

A source is a path, a glob, a DataFrame or a Hugging Face `datasets.Dataset`. docs/cpfe.md ("Inputs") says
where each row's model, seed, platform and data set come from, how rows without ids are matched, and which
inputs are refused with one sentence. Sources are loaded by `prediction_sources`, their score columns read by
`prediction_scores`; this module checks labels, ids and groups and makes the set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import label_codes
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW
from mhaudit.tables.prediction_sources import (
    GROUP,
    PredictionSource,
    expand_sources,
    fields_from_name,
    load_source,
    model_input,
    name_regex,
)
from mhaudit.tables.prediction_scores import score_columns, score_values
from mhaudit.tables.predictions import (
    LOGIT,
    PROB,
    PROB_SUM_TOLERANCE,
    TEXT_HASH,
    PredictionSet,
    logit_column,
)

__all__ = ["PredictionColumns", "read_predictions", "predictions_from_arrays", "expand_sources"]

GIVEN = "_given_"  # the probabilities a file gave, beside their logs until the set is made


@dataclass(frozen=True)
class PredictionColumns:
    """Column names in the files; `platform=None`: the platform comes from the pattern, flag or file name."""

    label: str = "label"
    platform: str | None = "platform"
    model: str = "model"
    seed: str = "seed"
    id: str = "id"
    dataset: str = "dataset"
    split: str = "split"
    text: str = "text"  # hashed (never kept) so that rows without ids can be checked to line up


def _check_same_columns(sources: list[PredictionSource], ignored: frozenset = frozenset()) -> None:
    first = sources[0]
    columns = set(map(str, first.frame.columns)) - ignored
    for other in sources[1:]:
        theirs = set(map(str, other.frame.columns)) - ignored
        if theirs != columns:
            extra, lacking = sorted(theirs - columns), sorted(columns - theirs)
            detail = "; ".join(
                filter(
                    None,
                    [
                        f"it has {', '.join(extra)}" if extra else "",
                        f"it lacks {', '.join(lacking)}" if lacking else "",
                    ],
                )
            )
            raise InputError(
                f"{other.name} and {first.name} have different columns ({detail}); every prediction "
                "file must have the same columns"
            )


def read_predictions(
    sources,
    *,
    classes: list[str] | None = None,
    columns: PredictionColumns = PredictionColumns(),
    model: str | None = None,
    seed: int | None = None,
    platform: str | None = None,
    name_pattern: str | None = None,
    labelled: bool = True,
) -> PredictionSet:
    """Read prediction files (paths, globs, DataFrames or Datasets) into one validated PredictionSet.

    With `labelled=False` (a model's scores on unlabelled rows) the files need no label column; one they
    have is ignored, and a note says so. `label` is then missing (None) on every row.

    `classes` fixes the class order (default: the score columns of the first source); integer labels
    index it. Model, seed, platform and data set: a column, else `name_pattern` over the file name,
    else `model` / `seed` / `platform`, else the file name (seed 0). See the module docstring.
    """
    regex = name_regex(name_pattern) if name_pattern else None
    loaded = [
        load_source(s, i, columns.label if labelled else None) for i, s in enumerate(expand_sources(sources), start=1)
    ]
    _check_same_columns(loaded, frozenset() if labelled else frozenset({columns.label}))
    scored = [score_columns(s) for s in loaded]  # (kind, classes in column order) per source
    kind, order = scored[0]
    classes = list(classes) if classes else order
    if len(set(classes)) != len(classes):
        raise InputError(f"the classes {', '.join(classes)} repeat a name")
    notes, frames = list[str](), []
    for source, (source_kind, found) in zip(loaded, scored):
        if sorted(found) != sorted(classes):
            first = source is loaded[0]
            what = ("the classes " if first else f"{loaded[0].name}'s ") + ", ".join(classes if first else order)
            raise InputError(
                f"{source.name}: score columns for {', '.join(found)} differ from {what}; every file "
                "needs one score column per class"
            )
        if source_kind != kind:
            raise InputError(
                f"{source.name} has {source_kind} columns and {loaded[0].name} {kind} columns; give one kind of score"
            )
        defaults = {"model": model, "seed": seed, "platform": platform} | fields_from_name(source, regex, name_pattern)
        frames.append(_standardise(source, kind, classes, columns, defaults, notes, labelled))
    unlabelled = [s.name for s in loaded if not labelled and columns.label in s.frame.columns]
    if unlabelled:  # one note for all the files, not one per file
        notes.append(f"the '{columns.label}' column of {_some(unlabelled)} is ignored (read as unlabelled)")
    frame = pd.concat(frames, ignore_index=True)
    _check_groups(frame)
    positional = frozenset(
        tuple(k) for k in frame.loc[frame["_positional"], list(GROUP)].drop_duplicates().itertuples(index=False)
    )
    frame = frame.drop(columns=["_positional"])
    given = [f"{GIVEN}{c}" for c in classes] if kind == PROB else []
    probabilities = frame[given].to_numpy() if given else None
    frame = frame.drop(columns=[SOURCE_FILE, SOURCE_ROW, *given])
    # every score and label was checked above, file by file with its row: the set is not checked again
    return PredictionSet.read(
        frame,
        classes,
        label_codes(frame["label"], classes),
        probabilities,
        score_kind="logits" if kind == LOGIT else "log-probabilities (from prob_ columns)",
        fingerprints={s.name: s.fingerprint for s in loaded}
        | {model_input(m): m["sha256"] for s in loaded for m in s.models},
        notes=list(dict.fromkeys(notes)),
        positional=positional,
    )


def _some(names: list[str], shown: int = 3) -> str:
    """'a.csv', or '20 files (a.csv, b.csv, c.csv and 17 more)': file names without their folders."""
    names = [Path(name).name for name in names]
    if len(names) == 1:
        return names[0]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{len(names)} files ({', '.join(names[:shown])}{more})"


def _standardise(
    source: PredictionSource,
    kind: str,
    classes: list[str],
    columns: PredictionColumns,
    defaults: dict,
    notes: list[str],
    labelled: bool = True,
) -> pd.DataFrame:
    frame = source.frame
    if len(frame) == 0:
        raise InputError(f"{source.name} has no rows; expected one row per example")
    values = score_values(source, kind, classes)
    if kind == PROB:
        outside = (values < 0).any(axis=1) | (values > 1).any(axis=1)
        off = np.abs(values.sum(axis=1) - 1) > PROB_SUM_TOLERANCE
        if outside.any() or off.any():
            i = int(np.flatnonzero(outside | off)[0])
            raise InputError(
                f"{source.name}: row {frame[SOURCE_ROW].iat[i]}: probabilities sum to "
                f"{values[i].sum():.6g}; each row of prob_ columns must lie in [0, 1] and sum to 1 "
                f"(tolerance {PROB_SUM_TOLERANCE})"
            )
        given = values / values.sum(axis=1, keepdims=True)  # kept as given: the statistics need no softmax of logs
        values = np.log(np.clip(values, 1e-12, None))  # log-probabilities serve as logits up to a constant
    labels = _labels(source, frame[columns.label], classes, notes) if labelled else np.full(len(frame), None, object)
    if columns.id in frame.columns:
        ids, positional = _text(frame, columns.id, None), False
    else:
        ids, positional = [f"row-{r - 1}" for r in frame[SOURCE_ROW]], True
        notes.append("rows without an id column are matched across models by position")
    out = pd.DataFrame(
        {
            "id": ids,
            "model": _text(frame, columns.model, defaults.get("model") or source.stem),
            "seed": pd.to_numeric(
                pd.Series(_text(frame, columns.seed, 0 if defaults.get("seed") is None else defaults["seed"])),
                errors="coerce",
            ),
            "platform": _text(frame, columns.platform, defaults.get("platform") or source.stem),
            "split": _text(frame, columns.split, "test"),
            "label": labels,
        }
    )
    seeds = out["seed"].to_numpy(dtype=float)
    bad_seed = ~np.isfinite(seeds) | (np.mod(seeds, 1) != 0)
    if bad_seed.any():
        raise InputError(
            f"{source.name}: row {frame[SOURCE_ROW].iat[int(np.argmax(bad_seed))]}: seed is not an integer"
        )
    out["seed"] = out["seed"].astype(np.int64)
    out["dataset"] = _text(frame, columns.dataset, defaults.get("dataset"))
    out["dataset"] = out["dataset"].fillna(out["platform"])
    for name in ("id", "model", "platform", "dataset", "split"):
        blank = out[name].isna() | out[name].astype(str).str.strip().isin(["", "nan", "None", "<NA>"])
        if blank.any():
            raise InputError(
                f"{source.name}: row {frame[SOURCE_ROW].iat[int(np.argmax(blank))]}: column '{name}' is "
                "empty; every row needs one"
            )
    if columns.text in frame.columns:  # a hash only: the text itself is not kept
        out[TEXT_HASH] = pd.util.hash_pandas_object(frame[columns.text].astype(str), index=False).to_numpy()
    out[SOURCE_FILE], out[SOURCE_ROW], out["_positional"] = source.name, frame[SOURCE_ROW].to_numpy(), positional
    given = pd.DataFrame(given, columns=[f"{GIVEN}{c}" for c in classes]) if kind == PROB else None
    return pd.concat([out, pd.DataFrame(values, columns=[logit_column(c) for c in classes]), given], axis=1)


def _labels(source: PredictionSource, raw: pd.Series, classes: list[str], notes: list[str]) -> np.ndarray:
    """Class names; integer labels are indices of the score columns in class order."""
    if isinstance(raw.dtype, pd.StringDtype):  # text as read from CSV: only missing cells need a value
        labels = raw.fillna("").str.strip()
    else:
        labels = raw.map(
            lambda v: "" if pd.isna(v) else str(int(v)) if isinstance(v, float) and float(v).is_integer() else str(v)
        ).str.strip()
    as_index = labels.str.fullmatch(r"\d+") & ~labels.isin(classes)
    if as_index.any():
        index = labels[as_index].astype(int)
        beyond = index >= len(classes)
        if beyond.any():
            i = int(np.flatnonzero(as_index.to_numpy())[np.argmax(beyond.to_numpy())])
            row = source.frame[SOURCE_ROW].iat[i]
            raise InputError(
                f"{source.name}: row {row}: label index {index[beyond].iat[0]} is beyond the "
                f"{len(classes)} score columns ({', '.join(classes)}; indices 0-{len(classes) - 1})"
            )
        named = pd.Series(np.asarray(classes, dtype=object)[index.to_numpy()], index=index.index)
        labels = labels.where(~as_index, named)
        notes.append(
            "integer labels were read as indices of the score columns: "
            + ", ".join(f"{k} = {c}" for k, c in enumerate(classes))
        )
    unknown = ~labels.isin(classes)
    if unknown.any():
        i = int(np.argmax(unknown.to_numpy()))
        raise InputError(
            f"{source.name}: row {source.frame[SOURCE_ROW].iat[i]}: label '{labels.iat[i]}' is not one "
            f"of the classes {', '.join(classes)} (or their index 0-{len(classes) - 1})"
        )
    return labels.to_numpy()


def _check_groups(frame: pd.DataFrame) -> None:
    """One file per (model, seed, platform, data set), and no id twice in a group."""
    files = frame.groupby(list(GROUP), sort=True)[SOURCE_FILE].unique()
    shared = files[files.map(len) > 1]
    if len(shared):
        (model, seed, platform, dataset), names = shared.index[0], shared.iloc[0]
        raise InputError(
            f"{names[0]} and {names[1]} both hold predictions of model {model}, seed {seed} on "
            f"{platform}" + (f" ({dataset})" if dataset != platform else "") + "; give each file its "
            "own model, seed or platform (columns, --name-pattern, or --model / --model-seed)"
        )
    dup = frame.duplicated(["id", *GROUP])
    if dup.any():
        i = int(np.argmax(dup.to_numpy()))
        raise InputError(
            f"{frame[SOURCE_FILE].iat[i]}: row {frame[SOURCE_ROW].iat[i]}: id '{frame['id'].iat[i]}' "
            "appears twice for the same model, seed and platform; ids must be unique there"
        )


def _text(frame: pd.DataFrame, name: str | None, default) -> list:
    """A column's values as text, or `default` (a scalar or a list) where the file lacks it."""
    if name and name in frame.columns:
        return [None if pd.isna(v) else str(v) for v in frame[name]]
    return list(default) if isinstance(default, list) else [default] * len(frame)


def predictions_from_arrays(
    y_true,
    scores,
    platform,
    *,
    model=None,
    seed=None,
    classes: list[str] | None = None,
    kind: str = "probs",
    ids=None,
    dataset=None,
) -> PredictionSet:
    """Predictions from arrays, as fairlearn takes them: `y_true` (class names or indices), `scores` (n x k
    probabilities, or logits with kind="logits"), `platform` (one per row, or one for all), optional `model`
    and `seed` (one per row or one for all), `ids` and `dataset`. `classes` names the score columns
    (default: the sorted class names in y_true, or 0..k-1 for integer labels)."""
    if kind not in ("probs", "logits"):
        raise InputError(f"kind must be 'probs' or 'logits', got '{kind}'")
    values = np.asarray(scores, dtype=float)
    y = pd.Series(np.asarray(y_true, dtype=object))
    if values.ndim != 2 or values.shape[0] != len(y):
        raise InputError(f"scores must be an (n, k) array with one row per label ({len(y)}), got shape {values.shape}")
    if classes is None:
        names = sorted(set(map(str, y)))
        integer = all(re.fullmatch(r"\d+", n) for n in names)
        classes = [str(k) for k in range(values.shape[1])] if integer else names
    if len(classes) != values.shape[1]:
        raise InputError(
            f"scores have {values.shape[1]} columns but there are {len(classes)} classes "
            f"({', '.join(map(str, classes))})"
        )
    frame = pd.DataFrame(values, columns=[f"{PROB if kind == 'probs' else LOGIT}{c}" for c in classes])
    frame.insert(0, "label", y.to_numpy())
    for name, value in (("platform", platform), ("model", model), ("seed", seed), ("id", ids), ("dataset", dataset)):
        if value is not None:
            frame.insert(1, name, np.broadcast_to(np.asarray(value, dtype=object), len(frame)))
    return read_predictions([frame], classes=[str(c) for c in classes])
