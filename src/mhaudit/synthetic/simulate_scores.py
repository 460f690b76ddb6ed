"""SYNTHETIC model scores with a known truth, for the label-free estimate's tests and demo.

Logits z = separation * e_y + noise: p(z | y) is fixed, so moving the class priors is pure label shift,
under which every estimator's assumptions hold. `concept_shift` moves a share of the rows of class 0 into a
region of low confidence where the model's logits no longer follow p(z | y), the kind of change a new
platform brings (shorter, vaguer posts): the estimate is outside its assumptions there.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mhaudit.tables.prediction_files import predictions_from_arrays
from mhaudit.tables.predictions import PredictionSet

__all__ = ["simulate_scores"]


def simulate_scores(
    n: int,
    priors,
    *,
    platform: str,
    seed: int,
    separation: float = 1.6,
    concept_shift: float = 0.0,
    model: str = "synthetic-model",
    labelled: bool = True,
) -> PredictionSet:
    """n rows of a k-class model's logits (k = len(priors)), labels drawn from `priors`; labels are
    missing when not `labelled`. Class names c0..c{k-1}."""
    rng = np.random.default_rng(seed)
    priors = np.asarray(priors, dtype=float) / np.sum(priors)
    k = len(priors)
    y = rng.choice(k, size=n, p=priors)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += separation
    moved = (y == 0) & (rng.random(n) < concept_shift)
    z[moved] = 0.3 * rng.normal(size=(int(moved.sum()), k)) + separation * np.eye(k)[1]
    classes = [f"c{i}" for i in range(k)]
    labels = np.asarray(classes, dtype=object)[y]
    preds = predictions_from_arrays(
        labels,
        z,
        platform,
        model=model,
        seed=0,
        classes=classes,
        kind="logits",
        ids=[f"{platform}-{i}" for i in range(n)],
    )
    return preds if labelled else replace(preds, frame=preds.frame.assign(label=None))
