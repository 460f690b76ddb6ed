"""A SYNTHETIC labels table for the weak-label validation audit: a latent true 0/1 label per item, a weak
labeler (kind llm) and two human annotators who each flip it with their own error rate, and an adjudicator
who resolves the annotators' disagreements to the truth. Known error rates, so the agreement audit's kappa
and precision/recall can be checked against what was put in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.tables.label_store import COLUMNS

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
    flip_weak = np.where(truth == 1, rng.random(n) < config.weak_false_negative, rng.random(n) < config.weak_false_positive)
    values = {"synthetic-llm": ("llm", truth ^ flip_weak)}
    for i, error in enumerate(config.annotator_error, start=1):
        values[f"annotator-{i}"] = ("human", truth ^ (rng.random(n) < error))
    items = np.array([f"synthetic-{i:05d}" for i in range(n)])
    rows = [pd.DataFrame({"item_id": items, "labeler": name, "kind": kind, "value": value.astype(int)})
            for name, (kind, value) in values.items()]
    disagree = values["annotator-1"][1] != values["annotator-2"][1]
    rows.append(pd.DataFrame({"item_id": items[disagree], "labeler": "adjudicator", "kind": "adjudicated",
                              "value": truth[disagree]}))
    table = pd.concat(rows, ignore_index=True).assign(task=config.task, created_at=CREATED_AT,
                                                      note="SYNTHETIC")
    table = table.reindex(columns=list(COLUMNS))
    table["value"] = table["value"].astype("Int64")
    return table
