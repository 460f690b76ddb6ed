"""A SYNTHETIC labels table for the weak-label validation audit: a latent true 0/1 label per item, a weak
labeler (kind llm) and two human annotators who each flip it with their own error rate, and an adjudicator
who resolves the annotators' disagreements to the truth. Known error rates, so the agreement audit's kappa
and precision/recall can be checked against what was put in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.tables.label_store import labels_frame

CREATED_AT = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class LabelsConfig:
    n_items: int = 300
    positive_rate: float = 0.3
    weak_false_negative: float = 0.35  # P(weak = 0 | true = 1): a cautious weak labeler (high precision)
    weak_false_positive: float = 0.03  # P(weak = 1 | true = 0)
    annotator_error: tuple[float, float] = (0.05, 0.08)  # each annotator's P(flip)
    task: str = "si"
    seed: int = 0


def simulate_labels(config: LabelsConfig = LabelsConfig()) -> pd.DataFrame:
    """The labels table (label_store COLUMNS): labelers 'synthetic-llm', 'annotator-1', 'annotator-2' and
    'adjudicator' (only where the two annotators disagree)."""
    rng = np.random.default_rng(config.seed)
    n = config.n_items
    truth = (rng.random(n) < config.positive_rate).astype(int)
    flip_weak = np.where(
        truth == 1, rng.random(n) < config.weak_false_negative, rng.random(n) < config.weak_false_positive
    )
    items = np.array([f"synthetic-{i:05d}" for i in range(n)])
    weak = labels_rows(items, {"synthetic-llm": ("llm", truth ^ flip_weak)}, config.task)
    return pd.concat(
        [weak, simulate_annotators(items, truth, config.annotator_error, config.task, rng)], ignore_index=True
    )


def simulate_annotators(items, truth, errors: tuple[float, ...], task: str, rng: np.random.Generator) -> pd.DataFrame:
    """Labels rows of human annotators 'annotator-1', ... who each flip the true 0/1 label with their own error
    rate, and of an 'adjudicator' who resolves the first two annotators' disagreements to the truth."""
    truth = np.asarray(truth, dtype=int)
    values: dict[str, tuple] = {
        f"annotator-{i}": ("human", truth ^ (rng.random(len(truth)) < error)) for i, error in enumerate(errors, start=1)
    }
    disagree = values["annotator-1"][1] != values["annotator-2"][1]
    values["adjudicator"] = ("adjudicated", truth, disagree)
    return labels_rows(np.asarray(items), values, task)


def labels_rows(items: np.ndarray, values: dict[str, tuple], task: str) -> pd.DataFrame:
    """`label_store.labels_frame` marked SYNTHETIC, with a fixed creation time (reproducible tables)."""
    return labels_frame(items, values, task, note="SYNTHETIC", created_at=CREATED_AT)
