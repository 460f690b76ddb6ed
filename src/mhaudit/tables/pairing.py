"""Several runs' predictions on the same rows, aligned by id: what an ensemble estimate reads (the estimate
audit's ensemble, the monitor's per-window agreement line).

Runs pair rows by id (files without ids got `row-<n>` ids in file order, so they pair by position). The rows
come out in id order, so the order of the files' rows changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.predictions import PredictionSet

__all__ = ["aligned_codes", "labels_in_id_order"]


def _run_name(run: Hashable) -> str:
    return f"{run[0]} seed {run[1]}"  # a (model, seed) key, as PredictionSet.groups keys its groups


def aligned_codes(groups: dict[Hashable, PredictionSet], runs: list, where: str,
                  name: Callable[[Hashable], str] = _run_name) -> np.ndarray | None:
    """(runs, rows) predicted class codes (the argmax of each run's scores) with the rows in id order; None when
    a run has no group. `name` says a run's key in words. One sentence when a run repeats an id or covers other
    rows than the first run."""
    if any(run not in groups for run in runs):
        return None
    order = pd.Index(np.sort(groups[runs[0]].frame["id"].astype(str).to_numpy()))
    if not order.is_unique:
        raise InputError(f"the {where} predictions of {name(runs[0])} repeat an id; the ensemble estimate pairs "
                         "runs' rows by id")
    codes = []
    for run in runs:
        group = groups[run]
        ids = group.frame["id"].astype(str)
        at = order.get_indexer(ids)
        if len(ids) != len(order) or (at < 0).any():
            raise InputError(f"the {where} predictions of {name(run)} cover other rows than those of "
                             f"{name(runs[0])} ({len(ids):,} vs {len(order):,} rows); the ensemble estimate needs "
                             "every run scored on the same rows")
        pred = np.empty(len(order), dtype=np.int64)
        pred[at] = group.scores().argmax(axis=1)
        codes.append(pred)
    return np.vstack(codes)


def labels_in_id_order(group: PredictionSet) -> np.ndarray:
    """The group's label codes with its rows in id order (as `aligned_codes` orders them)."""
    return group.codes[np.argsort(group.frame["id"].astype(str).to_numpy(), kind="stable")]
