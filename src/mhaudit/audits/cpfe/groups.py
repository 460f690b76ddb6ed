"""Predictions split into evaluation groups: one (model, seed, platform, data set) each."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.stats.calibration import softmax
from mhaudit.tables.predictions import PredictionSet, scores

KEYS = ("model", "seed", "platform", "dataset")
EVALUATION_SPLITS = ("test", "calibration")


@dataclass
class Group:
    model: str
    seed: int
    platform: str
    dataset: str
    ids: np.ndarray
    y: np.ndarray  # class codes in mapping order
    logits: np.ndarray  # (n, k)
    split: np.ndarray

    @cached_property
    def probs(self) -> np.ndarray:
        return softmax(self.logits)

    @cached_property
    def pred(self) -> np.ndarray:
        return self.logits.argmax(axis=1)

    @property
    def n(self) -> int:
        return len(self.y)

    def key(self) -> dict:
        return {"model": self.model, "seed": self.seed, "platform": self.platform, "dataset": self.dataset}

    def subset(self, mask: np.ndarray) -> Group:
        return Group(self.model, self.seed, self.platform, self.dataset, self.ids[mask], self.y[mask],
                     self.logits[mask], self.split[mask])


def make_groups(predictions: PredictionSet) -> list[Group]:
    frame = predictions.frame[predictions.frame["split"].isin(EVALUATION_SPLITS)]
    if frame.empty:
        raise InputError(f"no prediction rows in split(s) {', '.join(EVALUATION_SPLITS)}; the audit evaluates "
                         "test (and calibration) rows")
    codes = pd.Categorical(frame["label"], categories=predictions.classes).codes
    logits = scores(frame, predictions.classes)
    groups = []
    ids = frame["id"].astype(str).to_numpy()
    for key, index in frame.groupby(list(KEYS), sort=True).indices.items():
        model, seed, platform, dataset = key
        index = index[np.argsort(ids[index], kind="stable")]  # rows in id order: models align row by row
        groups.append(Group(str(model), int(seed), str(platform), str(dataset), ids[index],
                            codes[index].astype(np.int64), logits[index], frame["split"].to_numpy()[index]))
    return groups


def reference_of(groups: list[Group], reference: str) -> dict[tuple[str, int], Group]:
    """The reference group of every (model, seed); `reference` names a platform or a data set."""
    found: dict[tuple[str, int], list[Group]] = {}
    for g in groups:
        if reference in (g.platform, g.dataset):
            found.setdefault((g.model, g.seed), []).append(g)
    if not found:
        names = sorted({g.platform for g in groups} | {g.dataset for g in groups})
        raise InputError(f"reference platform '{reference}' is not in the predictions; found {', '.join(names)}")
    for (model, seed), gs in found.items():
        if len(gs) > 1:
            raise InputError(f"reference '{reference}' holds several data sets for model {model}, seed {seed} "
                             f"({', '.join(g.dataset for g in gs)}); name one data set as the reference")
    missing = {(g.model, g.seed) for g in groups} - set(found)
    if missing:
        model, seed = sorted(missing)[0]
        raise InputError(f"model {model}, seed {seed} has no predictions on the reference platform '{reference}'")
    return {k: v[0] for k, v in found.items()}
