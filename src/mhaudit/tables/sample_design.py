"""The sampling design that certifies a model on a target: strata, Neyman allocation, the drawn sample.

The pool is one model's scored target items. Its posteriors are the scores calibrated on the labelled
reference (bias-corrected temperature scaling, as the label-free estimate) or, without a reference, the
scores' softmax. Strata: predicted class x confidence (equal-count bins of the top posterior within the
class; at most `max_bins`, fewer when the budget would give a stratum fewer than ~10 labels). The budget is
shared by Neyman allocation, n_h ∝ N_h S_h, with S_h the SD of the macro-F1 residual the posteriors
anticipate (stats.ppi.anticipated_sd) shrunk halfway to its pool-wide mean, at least two items per stratum.
The shrinkage is the guard against posteriors that are wrong on the target: measured on the real transfers
(docs/benchmarks.md), plain Neyman starved strata the model was confidently wrong about.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import softmax

from mhaudit.core.errors import InputError
from mhaudit.stats.bcts import fit_bcts
from mhaudit.stats.neyman import neyman_allocation
from mhaudit.stats.ppi import anticipated_sd
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.predictions import PredictionSet, logit_column, scores

__all__ = ["Pool", "pool_of", "confidence_strata", "bins_for", "allocate", "predictions_digest", "SHRINK",
           "LABELS_PER_STRATUM"]

SHRINK = 0.5  # weight of the pool-wide mean SD in each stratum's anticipated SD
LABELS_PER_STRATUM = 10  # the fewest labels a stratum should expect, when the budget decides the bins


@dataclass
class Pool:
    """One model's target items: ids, predicted class, posteriors."""

    ids: np.ndarray
    pred: np.ndarray
    probs: np.ndarray
    classes: list[str]
    model: str
    digest: str
    calibration: str  # how the posteriors were made, in words


def predictions_digest(frame: pd.DataFrame, classes: list[str]) -> str:
    """What identifies a model's scores on a pool: ids and score columns, in id order."""
    columns = ["id", *[logit_column(c) for c in classes]]
    return digest_frame(frame[columns].sort_values("id", kind="stable"))[:16]


def _one_model(preds: PredictionSet, what: str) -> pd.DataFrame:
    groups = preds.frame.groupby(["model", "seed"], sort=True)
    if groups.ngroups != 1:
        names = ", ".join(f"{m} seed {s}" for m, s in groups.groups)
        raise InputError(f"the {what} hold several models ({names}); give the predictions of one model")
    return preds.frame


def _posteriors(target: pd.DataFrame, reference: PredictionSet | None, classes: list[str]) -> tuple[np.ndarray, str]:
    z = scores(target, classes)
    if reference is None:
        return softmax(z, axis=1), "the scores' softmax (no reference to calibrate on)"
    if reference.classes != classes:
        raise InputError(f"the reference's classes ({', '.join(reference.classes)}) differ from the target's "
                         f"({', '.join(classes)})")
    ref = _one_model(reference, "reference predictions")
    labels = ref["label"]
    if labels.isna().any() or not all((labels == c).any() for c in classes):
        raise InputError("the reference needs a label on every row and every class present, to calibrate on")
    fit = fit_bcts(scores(ref, classes), reference.codes)  # one model: its frame is the whole set
    return fit.probs(z), f"calibrated on {len(ref):,} labelled reference rows (bias-corrected temperature scaling)"


def confidence_strata(probs: np.ndarray, pred: np.ndarray, classes: list[str], n_bins: int
                      ) -> tuple[np.ndarray, list[str]]:
    """Stratum code per item and the names: predicted class x quantile bin of the predicted class's posterior
    (fewer bins for a class with few items: at least 4 items per bin)."""
    conf = probs[np.arange(pred.size), pred]  # the posterior of the predicted class
    codes, names = np.empty(pred.size, dtype=np.int64), []
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
            names.append(f"predicted {name}, confidence bin {b + 1} of {bins} "
                         f"({conf[part].min():.3f}-{conf[part].max():.3f})")  # the bin makes the name unique
    return codes, names


def bins_for(budget: int, n_classes: int, max_bins: int) -> int:
    """Confidence bins per predicted class: at most max_bins, and about LABELS_PER_STRATUM labels per stratum."""
    return int(np.clip(budget // (LABELS_PER_STRATUM * n_classes), 1, max_bins))


def pool_of(target: PredictionSet, reference: PredictionSet | None = None) -> Pool:
    """The pool of one model's target predictions, with its posteriors."""
    frame = _one_model(target, "target predictions")
    if target.positional:
        raise InputError("the target predictions have no ids; certification hands items out to people by id")
    ids = frame["id"].astype(str).to_numpy()
    if len(set(ids)) != len(ids):
        raise InputError("the target predictions repeat an id; each pooled item needs its own")
    classes = target.classes
    probs, calibration = _posteriors(frame, reference, classes)
    pred = scores(frame, classes).argmax(axis=1)
    return Pool(ids, pred, probs, classes, str(frame["model"].iat[0]), predictions_digest(frame, classes), calibration)


def allocate(probs: np.ndarray, pred: np.ndarray, strata: np.ndarray, budget: int) -> np.ndarray:
    """Items per stratum: Neyman allocation by the shrunk anticipated macro-F1 residual SD, at least 2 each."""
    sizes = np.bincount(strata)
    try:
        return neyman_allocation(sizes, anticipated_sd(probs, pred, strata), budget, shrink=SHRINK)
    except ValueError:
        raise InputError(f"a budget of {budget} cannot give each of the {len(sizes)} strata 2 labels "
                         f"(at least {int(np.minimum(sizes, 2).sum())} needed); raise the budget or lower --bins") from None
