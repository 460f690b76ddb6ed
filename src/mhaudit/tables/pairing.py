"""How runs' predictions pair: each run (a model and seed) with its reference, by one rule for the cross-platform
audit, the estimate and the monitor; and several runs scored on the same rows, aligned by id (the ensemble
estimate's rows, for the estimate audit and the monitor).

Runs pair rows by id (files without ids got `row-<n>` ids in file order, so they pair by position). The aligned
rows come out in id order, so the order of the files' rows changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.predictions import Group

__all__ = ["aligned_codes", "check_reference_labels", "labels_in_id_order", "reference_runs"]


def check_reference_labels(y: np.ndarray, classes: Sequence[str], what: str) -> None:
    """The rule for a reference's labels (`y`: codes, -1 where missing): a label on every row and, where the
    reference is calibrated on (`classes` given), a row of every class. One sentence about `what` otherwise."""
    missing = int((y < 0).sum())
    if missing:
        rows = "no labels" if missing == len(y) else f"{missing:,} of its {len(y):,} rows without a label"
        raise InputError(f"{what} have {rows}; a reference is labelled data, a label on every row")
    absent = [c for i, c in enumerate(classes) if not (y == i).any()]
    if absent:
        raise InputError(f"{what} have no row of class(es) {', '.join(absent)}; calibration needs every class")


def reference_runs(
    references: Iterable[Group], runs: Iterable[tuple[str, int]], classes: Sequence[str] = ()
) -> dict[tuple[str, int], Group]:
    """Each run's (model, seed) reference group: the reference's group of the same model and seed or, where the
    reference holds one run only, that run (one labelled home set for every seed, or model names that differ
    between files). One sentence when a run has several reference groups or none, or when a reference breaks
    `check_reference_labels` (`classes`: every class it must hold, where it is calibrated on)."""
    by_run: dict[tuple[str, int], list[Group]] = {}
    for group in references:
        by_run.setdefault(group.run, []).append(group)
    for (model, seed), groups in by_run.items():
        if len(groups) > 1:
            raise InputError(
                f"the reference holds model {model}, seed {seed} on {len(groups)} data sets "
                f"({', '.join(g.dataset for g in groups)}); a run needs one reference: name one data "
                "set, or give one platform per model and seed"
            )
        check_reference_labels(groups[0].y, classes, f"the reference predictions of model {model}, seed {seed}")
    found = {}
    for model, seed in runs:
        match = by_run.get((model, seed)) or (next(iter(by_run.values())) if len(by_run) == 1 else None)
        if match is None:
            held = ", ".join(f"{m} seed {s}" for m, s in by_run) or "none"
            raise InputError(
                f"model {model}, seed {seed} has no reference predictions of that model and seed, and "
                f"the reference holds several runs ({held}), not one for all; model and seed come from "
                "columns, --name-pattern or --model (without them each file's name is its model)"
            )
        found[(model, seed)] = match[0]
    return found


def _run_name(run: tuple) -> str:
    return f"{run[0]} seed {run[1]}"  # a (model, seed) key, as Group.run


def aligned_codes(groups: dict, runs: list, where: str, name: Callable[..., str] = _run_name) -> np.ndarray | None:
    """(runs, rows) predicted class codes (the argmax of each run's scores) with the rows in id order; None when
    a run has no group. `name` says a run's key in words. One sentence when a run repeats an id or covers other
    rows than the first run."""
    if any(run not in groups for run in runs):
        return None
    order = pd.Index(np.sort(groups[runs[0]].ids))
    if not order.is_unique:
        raise InputError(
            f"the {where} predictions of {name(runs[0])} repeat an id; the ensemble estimate pairs runs' rows by id"
        )
    codes = np.empty((len(runs), len(order)), dtype=np.int64)
    for k, run in enumerate(runs):
        group = groups[run]
        at = order.get_indexer(group.ids)
        if group.n != len(order) or (at < 0).any():
            raise InputError(
                f"the {where} predictions of {name(run)} cover other rows than those of "
                f"{name(runs[0])} ({group.n:,} vs {len(order):,} rows); the ensemble estimate needs "
                "every run scored on the same rows"
            )
        codes[k, at] = group.pred
    return codes


def labels_in_id_order(group: Group) -> np.ndarray:
    """The group's label codes with its rows in id order (as `aligned_codes` orders them)."""
    return group.y[np.argsort(group.ids, kind="stable")]
