"""The sampling design that certifies a model on a target: strata, Neyman allocation, the drawn sample.

The pool is one model's scored target items; docs/certify.md ("The sample") gives the posteriors, the strata
(predicted class x confidence bin), the allocation (Neyman, each S_h shrunk halfway to its pool-wide mean, at
least two items per stratum) and why the shrinkage. An ensemble (several runs scored on the same items) only
changes the posteriors, to the mean of every run's calibrated posteriors: the design stays a stratified simple
random sample and the estimator is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import softmax

from mhaudit.core.errors import InputError
from mhaudit.stats.bcts import fit_bcts
from mhaudit.stats.neyman import neyman_allocation
from mhaudit.stats.ppi import anticipated_sd
from mhaudit.tables.corpus.schema import label_codes
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.pairing import check_reference_labels
from mhaudit.tables.predictions import PredictionSet, logit_column, scores

__all__ = [
    "Pool",
    "pool_of",
    "certified_run",
    "confidence_strata",
    "bins_for",
    "allocate",
    "predictions_digest",
    "SHRINK",
    "LABELS_PER_STRATUM",
]

SHRINK = 0.5  # weight of the pool-wide mean SD in each stratum's anticipated SD
LABELS_PER_STRATUM = 10  # the fewest labels a stratum should expect, when the budget decides the bins


@dataclass
class Pool:
    """The certified model's target items: ids, predicted class, the posteriors that predict the labels (the
    model's own, or an ensemble's mean), and which run is certified among how many."""

    ids: np.ndarray
    pred: np.ndarray
    probs: np.ndarray
    classes: list[str]
    model: str
    digest: str
    calibration: str  # how the posteriors were made, in words
    seed: int | None = None  # the certified run's seed
    runs: list[tuple[str, int]] = field(default_factory=list)  # every run scored on the pool, the certified first

    @property
    def predictor(self) -> str:
        """What predicts the labels and sets the strata, in words."""
        if len(self.runs) <= 1:
            return "the certified model's posteriors"
        by_model: dict[str, list[str]] = {}
        for model, seed in sorted(self.runs):
            by_model.setdefault(model, []).append(str(seed))
        listing = "; ".join(f"{m} seed{'s' if len(s) > 1 else ''} {', '.join(s)}" for m, s in by_model.items())
        return f"the mean posterior of an ensemble of {len(self.runs)} runs ({listing})"


def _runs(frame: pd.DataFrame) -> list[tuple[str, int]]:
    return sorted(frame.groupby(["model", "seed"], sort=True).groups)


def predictions_digest(frame: pd.DataFrame, classes: list[str]) -> str:
    """What identifies the scores on a pool: ids and score columns in id order (and, for several runs, the model
    and seed of each row, ordered by run)."""
    columns, order = ["id", *[logit_column(c) for c in classes]], ["id"]
    if len(_runs(frame)) > 1:
        columns, order = ["model", "seed", *columns], ["model", "seed", "id"]
    return digest_frame(frame[columns].sort_values(order, kind="stable"))[:16]


def certified_run(frame: pd.DataFrame, model: str | None = None, seed: int | None = None) -> tuple[str, int]:
    """The (model, seed) to certify: the only run, or the one named (a model with one run needs no seed)."""
    runs = _runs(frame)
    named = [r for r in runs if (model is None or r[0] == model) and (seed is None or int(r[1]) == int(seed))]
    listing = ", ".join(f"{m} seed {s}" for m, s in runs)
    if not named:
        raise InputError(
            f"no run of {model or 'any model'}"
            + (f" seed {seed}" if seed is not None else "")
            + f" in the predictions; they hold {listing}"
        )
    if len(named) > 1:
        raise InputError(
            f"the predictions hold several runs ({listing}); name the one to certify as MODEL:SEED "
            "or by its run-<k> folder"
        )
    return named[0][0], int(named[0][1])


def _reference_rows(reference: PredictionSet, key: tuple[str, int], ensemble: bool) -> pd.DataFrame:
    """The reference rows of a run: those of its model and seed in an ensemble; one model's own reference is
    the whole set (its file may carry another name)."""
    frame = reference.frame
    if not ensemble:
        if len(_runs(frame)) != 1:
            names = ", ".join(f"{m} seed {s}" for m, s in _runs(frame))
            raise InputError(
                f"the reference predictions hold several models ({names}); give the predictions of one model"
            )
        return frame
    rows = frame[(frame["model"] == key[0]) & (frame["seed"] == key[1])]
    if rows.empty:
        raise InputError(
            f"the reference predictions hold no run {key[0]} seed {key[1]}; give every run's scores "
            "on the labelled home test set, or none"
        )
    return rows


def _calibrated(
    run: pd.DataFrame, reference: PredictionSet | None, classes: list[str], key, ensemble: bool
) -> np.ndarray:
    z = scores(run, classes)
    if reference is None:
        return softmax(z, axis=1)
    ref = _reference_rows(reference, key, ensemble)
    y = label_codes(ref["label"], classes)
    check_reference_labels(
        y, classes, "the reference predictions" + (f" of model {key[0]}, seed {key[1]}" if ensemble else "")
    )
    return fit_bcts(scores(ref, classes), y).probs(z)


def _posteriors(runs: dict, reference: PredictionSet | None, classes: list[str]) -> tuple[np.ndarray, str]:
    """The mean of the runs' posteriors (one run: its own), each calibrated on its reference rows."""
    if reference is not None and reference.classes != classes:
        raise InputError(
            f"the reference's classes ({', '.join(reference.classes)}) differ from the target's ({', '.join(classes)})"
        )
    ensemble = len(runs) > 1
    probs = np.mean([_calibrated(run, reference, classes, key, ensemble) for key, run in runs.items()], axis=0)
    if reference is None:
        return probs, "the scores' softmax (no reference to calibrate on)"
    rows = min(len(_reference_rows(reference, key, ensemble)) for key in runs)
    return probs, (
        f"calibrated on {rows:,} labelled reference rows"
        + (" per run" if ensemble else "")
        + " (bias-corrected temperature scaling)"
    )


def confidence_strata(
    probs: np.ndarray, pred: np.ndarray, classes: list[str], n_bins: int, whose: str = "model"
) -> tuple[np.ndarray, list[str]]:
    """Stratum code per item and the names: predicted class x quantile bin of the predicted class's posterior
    (fewer bins for a class with few items: at least 4 items per bin). The name says whose posterior it is
    ("predicted x, ensemble P(x) bin 1 of 4 (0.303-0.790)"): an ensemble's can fall under 0.5."""
    conf = probs[np.arange(pred.size), pred]  # the posterior of the predicted class
    codes, names = np.empty(pred.size, dtype=np.int64), list[str]()
    for c, name in enumerate(classes):
        rows = np.flatnonzero(pred == c)
        if rows.size == 0:
            continue
        bins = max(1, min(n_bins, rows.size // 4))
        ranks = np.argsort(np.argsort(conf[rows], kind="stable"), kind="stable")
        within = ranks * bins // rows.size  # equal-count bins by confidence rank
        for b in range(bins):
            part = rows[within == b]
            codes[part] = len(names)
            names.append(
                f"predicted {name}, {whose} P({name}) bin {b + 1} of {bins} "
                f"({conf[part].min():.3f}-{conf[part].max():.3f})"
            )  # the bin makes the name unique
    return codes, names


def bins_for(budget: int, n_classes: int, max_bins: int) -> int:
    """Confidence bins per predicted class: at most max_bins, and about LABELS_PER_STRATUM labels per stratum."""
    return int(np.clip(budget // (LABELS_PER_STRATUM * n_classes), 1, max_bins))


def pool_of(
    target: PredictionSet, reference: PredictionSet | None = None, *, model: str | None = None, seed: int | None = None
) -> Pool:
    """The pool of the certified model's target predictions, with its posteriors. Predictions of several runs
    on the same items (an ensemble): `model` and `seed` name the certified run (needed unless it is the only
    one), and the posteriors are the mean over every run, each calibrated on its own reference rows."""
    if target.positional:
        raise InputError("the target predictions have no ids; certification hands items out to people by id")
    frame, classes = target.frame, target.classes
    key = certified_run(frame, model, seed)
    runs = {
        k: frame[(frame["model"] == k[0]) & (frame["seed"] == k[1])].assign(id=lambda f: f["id"].astype(str))
        for k in [key, *[r for r in _runs(frame) if (r[0], int(r[1])) != key]]
    }
    first = runs[key]
    ids = first["id"].to_numpy()
    if len(set(ids)) != len(ids):
        raise InputError("the target predictions repeat an id; each pooled item needs its own")
    for (name, run_seed), run in runs.items():
        if len(run) != len(ids) or set(run["id"]) != set(ids):
            raise InputError(
                f"run {name} seed {run_seed} scores {len(run):,} items, the certified run {len(ids):,} "
                "others; every run of an ensemble must score the same items"
            )
    runs = {k: run.set_index("id").loc[ids].reset_index() for k, run in runs.items()}  # one row order
    probs, calibration = _posteriors(runs, reference, classes)
    pred = scores(first, classes).argmax(axis=1)
    return Pool(
        ids,
        pred,
        probs,
        classes,
        key[0],
        predictions_digest(frame, classes),
        calibration,
        key[1],
        [(m, int(s)) for m, s in runs],
    )


def allocate(probs: np.ndarray, pred: np.ndarray, strata: np.ndarray, budget: int) -> np.ndarray:
    """Items per stratum: Neyman allocation by the shrunk anticipated macro-F1 residual SD, at least 2 each."""
    sizes = np.bincount(strata)
    try:
        return neyman_allocation(sizes, anticipated_sd(probs, pred, strata), budget, shrink=SHRINK)
    except ValueError:
        raise InputError(
            f"a budget of {budget} cannot give each of the {len(sizes)} strata 2 labels "
            f"(at least {int(np.minimum(sizes, 2).sum())} needed); "
            "raise the budget or lower --bins"
        ) from None
