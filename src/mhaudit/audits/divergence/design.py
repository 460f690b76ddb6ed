"""Which rows train the channels and which rows each data set is scored on, checked before any work.

Every channel is fitted on the `train` split of one human-labelled data set (Dreaddit in the paper).
That data set is scored on its `test` split; every other named data set is evaluation-only and is
scored whole (all its splits), as the paper does.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import require_columns

__all__ = ["Design", "build_design"]


@dataclass
class Design:
    train_dataset: str
    positive: str
    train: pd.DataFrame  # rows that fit every channel
    evaluation: dict[str, pd.DataFrame]  # data set -> its scored rows
    side: dict[str, str]  # data set -> "human" | "auto"

    @property
    def y_train(self) -> np.ndarray:
        return (self.train["label"].to_numpy() == self.positive).astype(np.int8)

    def y(self, dataset: str) -> np.ndarray:
        return (self.evaluation[dataset]["label"].to_numpy() == self.positive).astype(np.int8)

    @property
    def human(self) -> list[str]:
        return [d for d, s in self.side.items() if s == "human"]

    @property
    def auto(self) -> list[str]:
        return [d for d, s in self.side.items() if s == "auto"]


def build_design(
    frame: pd.DataFrame,
    classes: list[str],
    human: list[str],
    auto: list[str],
    *,
    train_dataset: str | None = None,
    positive: str | None = None,
) -> Design:
    """Check the data-set names and classes and split the rows, or raise InputError with the reason."""
    require_columns(frame, ("id", "text", "label", "dataset", "split"), argument="frame")
    human, auto = list(dict.fromkeys(human)), list(dict.fromkeys(auto))
    both = sorted(set(human) & set(auto))
    if both:
        raise InputError(
            f"data set(s) {', '.join(both)} named both --human and --auto; a data set has one label source"
        )
    if not human or not auto:
        missing = "--human" if not human else "--auto"
        raise InputError(f"the Degree of Divergence compares label sources: name at least one data set with {missing}")
    known = sorted(set(frame["dataset"].astype(str)))
    _check_names(known, {"--human": human, "--auto": auto, "--train-dataset": [train_dataset] if train_dataset else []})
    if len(classes) != 2:
        raise InputError(
            f"the divergence audit needs a binary corpus (two classes); this one has {len(classes)}: "
            f"{', '.join(classes)}; import with a binary mapping such as stress-binary"
        )
    positive = positive or classes[-1]
    if positive not in classes:
        raise InputError(f"positive class '{positive}' is not one of the corpus classes {', '.join(classes)}")
    train_dataset = train_dataset or next((d for d in human if _has_split(frame, d, "train")), None)
    if train_dataset is None or not _has_split(frame, train_dataset, "train"):
        with_train = [d for d in known if _has_split(frame, d, "train")]
        raise InputError(
            "no data set to fit the channels on: name one with --train-dataset whose rows include a "
            "'train' split (the paper fits on Dreaddit train); data sets with one: "
            f"{', '.join(with_train) or 'none'}"
        )
    in_train = frame["dataset"].astype(str) == train_dataset
    train = frame[in_train & (frame["split"] == "train")].reset_index(drop=True)
    evaluation = {}
    for name in human + auto:
        rows = frame[frame["dataset"].astype(str) == name]
        if name == train_dataset:
            rows = rows[rows["split"] == "test"]
            if rows.empty:
                raise InputError(f"data set '{name}' fits the channels and is also scored, but it has no 'test' split")
        evaluation[name] = rows.reset_index(drop=True)
    for name, rows in [(f"{train_dataset} (train split)", train), *evaluation.items()]:
        present = set(rows["label"].astype(str))
        if len(present) < 2:
            raise InputError(
                f"data set {name} has only class '{next(iter(present))}' ({len(rows)} rows); "
                "Macro-F1 and the divergence need both classes"
            )
    side = {d: "human" for d in human} | {d: "auto" for d in auto}
    return Design(train_dataset, positive, train, evaluation, side)


def _check_names(known: list[str], named: dict[str, list[str]]) -> None:
    """Every data-set name given to a flag is in the corpus, else one sentence naming the flag, the bad value(s),
    the closest known name where one is close (a typo), and the corpus's data sets."""
    for flag, names in named.items():
        bad = [d for d in names if d not in known]
        if not bad:
            continue
        close = {name: difflib.get_close_matches(name, known, n=1) for name in bad}
        shown = [f"'{name}'" + (f" (did you mean '{c[0]}'?)" if c else "") for name, c in close.items()]
        what = f"data set {shown[0]} is" if len(shown) == 1 else f"data sets {', '.join(shown)} are"
        raise InputError(f"{flag} {what} not in the corpus; its data sets are {', '.join(known)}")


def _has_split(frame: pd.DataFrame, dataset: str, split: str) -> bool:
    return bool(((frame["dataset"].astype(str) == dataset) & (frame["split"] == split)).any())
