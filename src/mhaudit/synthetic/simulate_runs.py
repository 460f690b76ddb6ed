"""SYNTHETIC runs of a linear model with a known truth on the target, for the ensemble estimate's tests and demo.

Two Gaussian classes at ±mu (d dimensions, unit noise); run r is the linear rule sign(w_r · x) with
w_r = mu + noise of a size drawn per run, so the runs differ in accuracy. On the target the class means
shrink by `shrink` and the noise grows by `noise`. With `noise` 1 every run's probit accuracy scales by the
same factor, so the truth lies on the agreement line; a strong shrink bends the line (tests/stats/
test_agreement_line.py measures both).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.tables.prediction_files import predictions_from_arrays
from mhaudit.tables.predictions import PredictionSet

__all__ = ["gaussian_runs", "simulate_runs"]


def gaussian_runs(
    *,
    n_runs: int = 10,
    n_ref: int = 4000,
    n_tgt: int = 3000,
    d: int = 20,
    shrink: float = 0.8,
    noise: float = 1.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Arrays: margins (runs, n) on the reference and the target, labels y_ref and y_tgt (0/1), and `truth`, each
    run's accuracy on the target."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=d)
    mu *= 1.5 / np.linalg.norm(mu)
    w = mu + rng.normal(scale=rng.uniform(0.2, 1.5, size=(n_runs, 1)), size=(n_runs, d))

    def rows(n, scale, sd):
        y = rng.integers(0, 2, n)
        return scale * (2 * y - 1)[:, None] * mu + rng.normal(scale=sd, size=(n, d)), y

    (x_ref, y_ref), (x_tgt, y_tgt) = rows(n_ref, 1.0, 1.0), rows(n_tgt, shrink, noise)
    m_ref, m_tgt = (x_ref @ w.T).T, (x_tgt @ w.T).T
    return {
        "margin_ref": m_ref,
        "margin_tgt": m_tgt,
        "y_ref": y_ref,
        "y_tgt": y_tgt,
        "truth": ((m_tgt > 0) == y_tgt[None]).mean(axis=1),
    }


def simulate_runs(*, model: str = "synthetic-linear", **kwargs) -> tuple[PredictionSet, PredictionSet, np.ndarray]:
    """The runs as predictions tables: (reference, labelled; target, labels missing; each run's true target
    accuracy). Seeds 0..runs-1, classes c0 and c1, logits (0, margin), platforms synthetic-home and -away."""
    arrays = gaussian_runs(**kwargs)
    classes = ["c0", "c1"]

    def table(margins, y, platform, labelled):
        labels, ids = np.asarray(classes, dtype=object)[y], [f"{platform}-{i}" for i in range(len(y))]
        frame = pd.concat(
            [
                predictions_from_arrays(
                    labels,
                    np.c_[np.zeros_like(m), m],
                    platform,
                    model=model,
                    seed=run,
                    classes=classes,
                    kind="logits",
                    ids=ids,
                ).frame
                for run, m in enumerate(margins)
            ],
            ignore_index=True,
        )
        return PredictionSet(frame if labelled else frame.assign(label=None), classes)

    return (
        table(arrays["margin_ref"], arrays["y_ref"], "synthetic-home", True),
        table(arrays["margin_tgt"], arrays["y_tgt"], "synthetic-away", False),
        arrays["truth"],
    )
