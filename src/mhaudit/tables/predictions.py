"""The predictions table: one row per example x model x seed, one raw score column per class.

Our models write it with `predict_corpus`; a user's own model's outputs enter through
`mhaudit.tables.prediction_files.read_predictions` (files as researchers publish them, DataFrames,
arrays), which validates every column and turns probabilities into log-probabilities, saying so.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import file_sha256
from mhaudit.stats.calibration import softmax
from mhaudit.tables.corpus.schema import Corpus, label_codes
from mhaudit.tables.corpus.splits import judged_rows

KEY_COLUMNS = ("id", "model", "seed", "platform", "dataset", "split", "label")
GROUP_KEYS = ("model", "seed", "platform", "dataset")  # one evaluation group: a model's run on one data set
TEXT_HASH = "text_hash"  # optional: a hash of each row's text (never the text), to check rows line up
PROB_SUM_TOLERANCE = 1e-3  # probabilities written as text lose digits; a row must sum to 1 within this
LOGIT, PROB = "logit_", "prob_"
MODELS_KEY = "mhaudit.models"  # a Parquet footer's key: JSON, each scored model's name, seed, source and sha256


def logit_column(cls: str) -> str:
    return f"{LOGIT}{cls}"


def predict_corpus(
    model, corpus: Corpus, *, model_name: str, seed: int, splits: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """Score the rows of `corpus` in `splits` with a fitted model; classes in the corpus's mapping order. Default:
    every row it is judged on (`judged_rows`: all but the train and val rows where it was trained)."""
    return predict_rows(model, corpus.frame, corpus.classes, model_name=model_name, seed=seed, splits=splits)


def predict_rows(
    model, frame: pd.DataFrame, classes: list[str], *, model_name: str, seed: int, splits: tuple[str, ...] | None
) -> pd.DataFrame:
    """`predict_corpus` on a frame of corpus rows (the whole corpus, or one chunk of it: the rows are scored one by
    one, so the chunks' tables put together are the whole one's). No rows chosen: an empty table, the model not
    called."""
    chosen = judged_rows(frame, getattr(model, "trained_on", None)) if splits is None else frame["split"].isin(splits)
    rows = frame[chosen]
    texts = rows["text"].astype(str).tolist()
    logits = model.predict_logits(texts) if texts else np.empty((0, len(classes)))
    out = rows[["id", "platform", "dataset", "split", "label"]].reset_index(drop=True)
    out.insert(1, "model", model_name)
    out.insert(2, "seed", np.int64(seed))
    scores = pd.DataFrame(logits, columns=[logit_column(c) for c in classes])
    return pd.concat([out[list(KEY_COLUMNS)], scores], axis=1)


def scores(predictions: pd.DataFrame, classes: list[str]) -> np.ndarray:
    return predictions[[logit_column(c) for c in classes]].to_numpy(dtype=float)


@dataclass(frozen=True)
class PredictionSet:
    """Predictions, validated when built (`check_predictions`): KEY_COLUMNS + one `logit_<class>` column per
    class, in class order, finite scores, labels among the classes or missing. `codes` holds the labels as
    int64 codes in class order (-1 where missing), so no audit derives them again; `groups` and `subset`
    split the set without checking it again. Frozen: to change the frame, build a new set (`dataclasses.replace`).
    `probabilities`: the scores as the files gave them when they were probabilities (prob_ columns, made
    from checked files by `read`), so the statistics use them as given rather than the softmax of their logs."""

    frame: pd.DataFrame
    classes: list[str]
    score_kind: str = "logits"  # or "log-probabilities (from prob_ columns)"
    fingerprints: dict[str, str] = field(default_factory=dict)  # file, or a model its footer names -> sha256
    notes: list[str] = field(default_factory=list)  # how the inputs were read, for the report
    # (model, seed, platform, dataset) groups whose files had no ids: rows are matched by position
    positional: frozenset = frozenset()
    codes: np.ndarray = field(init=False, repr=False, compare=False)
    probabilities: np.ndarray | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "classes", list(self.classes))
        object.__setattr__(self, "codes", check_predictions(self.frame, self.classes))

    @classmethod
    def read(
        cls, frame: pd.DataFrame, classes: list[str], codes: np.ndarray, probabilities: np.ndarray | None = None, **rest
    ) -> PredictionSet:
        """A set from a reader that has checked every score and label already (read_predictions): the checks are
        not made twice."""
        made = object.__new__(cls)
        values = dict(frame=frame, classes=list(classes), codes=codes, probabilities=probabilities, **rest)
        for name, spec in cls.__dataclass_fields__.items():
            default = spec.default_factory() if callable(spec.default_factory) else spec.default
            object.__setattr__(made, name, values.get(name, default))
        return made

    def scores(self) -> np.ndarray:
        """The (n, k) logits in class order."""
        return scores(self.frame, self.classes)

    def subset(self, rows: np.ndarray) -> PredictionSet:
        """The rows at positions `rows`, with their codes (checked already: not again)."""
        out = copy.copy(self)
        object.__setattr__(out, "frame", self.frame.iloc[rows].reset_index(drop=True))
        object.__setattr__(out, "codes", self.codes[rows])
        if self.probabilities is not None:
            object.__setattr__(out, "probabilities", self.probabilities[rows])
        return out

    def groups(self, splits: tuple[str, ...] | None = None, *, id_order: bool = False) -> dict[tuple, Group]:
        """Each (model, seed, platform, dataset) group, keys sorted; with `splits`, only the rows of those splits.
        A group's rows are in the files' order or, with `id_order`, in id order, so that two models' groups on the
        same ids line up row by row (a group whose files had no ids keeps its order: it pairs by position)."""
        rows = np.arange(len(self.frame)) if splits is None else np.flatnonzero(self.frame["split"].isin(splits))
        found = self.frame.iloc[rows].groupby(list(GROUP_KEYS), sort=True).indices
        ids, logits, split = self.frame["id"].astype(str).to_numpy(), self.scores(), self.frame["split"].to_numpy()
        hashes = self.frame[TEXT_HASH].to_numpy() if TEXT_HASH in self.frame else None
        groups = {}
        for key, index in found.items():
            index, positional = rows[index], key in self.positional
            if id_order and not positional:
                index = index[np.argsort(ids[index], kind="stable")]
            model, seed, platform, dataset = key
            groups[key] = Group(
                str(model),
                int(seed),
                str(platform),
                str(dataset),
                ids[index],
                self.codes[index],
                logits[index],
                split[index],
                positional,
                None if hashes is None else hashes[index],
                None if self.probabilities is None else self.probabilities[index],
            )
        return groups


@dataclass(frozen=True, eq=False)
class Group:
    """One (model, seed, platform, dataset) group of a PredictionSet as arrays (`PredictionSet.groups`): ids, label
    codes in class order (-1 where missing), logits (n, k) and split per row."""

    model: str
    seed: int
    platform: str
    dataset: str
    ids: np.ndarray
    y: np.ndarray
    logits: np.ndarray
    split: np.ndarray
    positional: bool = False  # no ids in the files: rows keep their file order and pair by position
    text_hash: np.ndarray | None = None  # per row, when the files carried texts
    given_probs: np.ndarray | None = None  # the probabilities the files gave (PredictionSet.probabilities)

    @cached_property
    def probs(self) -> np.ndarray:
        return softmax(self.logits) if self.given_probs is None else self.given_probs

    @cached_property
    def pred(self) -> np.ndarray:
        return self.logits.argmax(axis=1)

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def run(self) -> tuple[str, int]:
        return self.model, self.seed

    def key(self) -> dict:
        return {"model": self.model, "seed": self.seed, "platform": self.platform, "dataset": self.dataset}


def check_predictions(frame: pd.DataFrame, classes: list[str]) -> np.ndarray:
    """The door's checks of a predictions frame (InputError with one sentence naming the column); returns the
    label codes. Statistics downstream trust what passed here."""
    if not classes or len(set(classes)) != len(classes):
        raise InputError(f"the classes must be distinct names, at least one; got {list(classes)}")
    missing = [c for c in KEY_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"the predictions have no '{missing[0]}' column; they need {', '.join(KEY_COLUMNS)}")
    expected = [logit_column(c) for c in classes]
    found = [str(c) for c in frame.columns if str(c).startswith(LOGIT)]
    if found != expected:
        absent, extra = [c for c in expected if c not in found], [c for c in found if c not in expected]
        problem = (
            f"have no '{absent[0]}' column"
            if absent
            else f"have a column '{extra[0]}' of no class"
            if extra
            else f"have their logit columns in the order {', '.join(found)}"
        )
        raise InputError(
            f"the predictions {problem}; expected one logit column per class, in class order: {', '.join(expected)}"
        )
    for column in expected:
        try:
            values = frame[column].to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            raise InputError(f"column '{column}' is not numeric; scores must be finite numbers") from None
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"row {i + 1}: column '{column}' is {values[i]}; scores must be finite numbers")
    codes = label_codes(frame["label"], classes)
    unknown = (codes < 0) & frame["label"].notna().to_numpy()
    if unknown.any():
        i = int(np.argmax(unknown))
        raise InputError(
            f"row {i + 1}: column 'label' holds '{frame['label'].iat[i]}', not one of the classes "
            f"{', '.join(classes)} (or missing)"
        )
    return codes


def sha256_file(path: Path) -> str:
    """A file's SHA-256 (for provenance), hashed once per process while its size and mtime stay (core.pinned)."""
    stat = Path(path).stat()
    return file_sha256(Path(path), stat.st_size, stat.st_mtime_ns)
