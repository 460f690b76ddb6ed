"""Predictions split into evaluation groups: one (model, seed, platform, data set) each."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mhaudit.core.errors import InputError
from mhaudit.stats.calibration import softmax
from mhaudit.tables.predictions import TEXT_HASH, PredictionSet
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
    positional: bool = False  # no ids in the files: rows keep their file order and pair by position
    text_hash: np.ndarray | None = None  # per row, when the files carried texts

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
                     self.logits[mask], self.split[mask], self.positional,
                     None if self.text_hash is None else self.text_hash[mask])


def make_groups(predictions: PredictionSet) -> list[Group]:
    found = predictions.group_rows(EVALUATION_SPLITS)
    if not found:
        raise InputError(f"no prediction rows in split(s) {', '.join(EVALUATION_SPLITS)}; the audit evaluates "
                         "test (and calibration) rows")
    evaluated = np.concatenate(list(found.values()))
    unlabelled = evaluated[predictions.codes[evaluated] < 0]
    if unlabelled.size:  # the statistics below trust the codes: this is their check
        raise InputError(f"row {unlabelled.min() + 1} of the predictions has no label; the audit compares each "
                         "evaluated row's prediction with its label")
    frame, logits = predictions.frame, predictions.scores()
    groups = []
    ids = frame["id"].astype(str).to_numpy()
    hashes = frame[TEXT_HASH].to_numpy() if TEXT_HASH in frame else None
    for key, index in found.items():
        model, seed, platform, dataset = key
        positional = (model, seed, platform, dataset) in predictions.positional
        if not positional:
            index = index[np.argsort(ids[index], kind="stable")]  # rows in id order: models align row by row
        groups.append(Group(str(model), int(seed), str(platform), str(dataset), ids[index],
                            predictions.codes[index], logits[index], frame["split"].to_numpy()[index],
                            positional, None if hashes is None else hashes[index]))
    return groups


def identical_seeds(groups: list[Group]) -> dict[str, list[int]]:
    """Models with several seeds whose predictions are the same for every seed on every platform (a
    deterministic model, e.g. TF-IDF): model -> its seeds. Their spread over seeds says nothing."""
    by_model: dict[str, dict[int, list[Group]]] = {}
    for g in groups:
        by_model.setdefault(g.model, {}).setdefault(g.seed, []).append(g)
    out = {}
    for model, seeds in by_model.items():
        runs = [sorted(gs, key=lambda g: (g.platform, g.dataset)) for _, gs in sorted(seeds.items())]
        first = runs[0]
        if len(runs) > 1 and all(len(r) == len(first) and all(
                (a.platform, a.dataset) == (b.platform, b.dataset) and np.array_equal(a.ids, b.ids)
                and np.array_equal(a.logits, b.logits) for a, b in zip(first, r)) for r in runs[1:]):
            out[model] = sorted(seeds)
    return out


def pairing(a: Group, b: Group) -> tuple[str, str]:
    """How two models' groups on one platform pair row by row ("id" or "position"), or '' and why not."""
    if a.positional != b.positional:
        return "", "one model's file has ids and the other's has none: no paired test"
    if a.n != b.n or (not a.positional and not np.array_equal(a.ids, b.ids)):
        return "", f"the two models were scored on different examples ({a.n} and {b.n} rows): no paired test"
    differ = np.flatnonzero(a.y != b.y)
    if a.text_hash is not None and b.text_hash is not None:
        differ = np.union1d(differ, np.flatnonzero(a.text_hash != b.text_hash))
    if differ.size:
        what = "rows without ids do not line up" if a.positional else "the labels differ for the same ids"
        return "", f"{what} (first at row {differ[0] + 1}): no paired test"
    return ("position" if a.positional else "id"), ""


def reference_of(groups: list[Group], reference: str) -> dict[tuple[str, int], Group]:
    """The reference group of every (model, seed); `reference` names a platform or a data set."""
    found: dict[tuple[str, int], list[Group]] = {}
    for g in groups:
        if reference in (g.platform, g.dataset):
            found.setdefault((g.model, g.seed), []).append(g)
    if not found:
        names = sorted({g.platform for g in groups} | {g.dataset for g in groups})
        raise InputError(f"reference platform '{reference}' is not in the predictions; found {', '.join(names)} "
                         "(platforms come from a platform column, --name-pattern or --platform; without them each "
                         "file's name is its platform)")
    for (model, seed), gs in found.items():
        if len(gs) > 1:
            raise InputError(f"reference '{reference}' holds several data sets for model {model}, seed {seed} "
                             f"({', '.join(g.dataset for g in gs)}); name one data set as the reference")
    missing = {(g.model, g.seed) for g in groups} - set(found)
    if missing:
        model, seed = sorted(missing)[0]
        raise InputError(f"model {model}, seed {seed} has no predictions on the reference platform '{reference}' "
                         "(model, seed and platform come from columns, --name-pattern or --model / --model-seed / "
                         "--platform; without them each file's name is its model)")
    return {k: v[0] for k, v in found.items()}
