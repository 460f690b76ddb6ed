"""Predictions split into evaluation groups: one (model, seed, platform, data set) each."""

from __future__ import annotations

import numpy as np

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.names import check_place
from mhaudit.tables.corpus.splits import judged_rows
from mhaudit.tables.pairing import reference_runs
from mhaudit.tables.predictions import Group, PredictionSet


def make_groups(predictions: PredictionSet, reference: str) -> list[Group]:
    """The judged rows' groups (`judged_rows`: every row but the reference's train and val rows), in id order so
    that models align row by row (PredictionSet.groups)."""
    judged = predictions.subset(np.flatnonzero(judged_rows(predictions.frame, reference)))
    groups = list(judged.groups(id_order=True).values())
    if not groups:
        raise InputError(
            f"every prediction row is a training row (split train or val) of the reference '{reference}'; "
            "the audit judges the other rows"
        )
    return groups


def judged_note(predictions: PredictionSet, groups: list[Group], reference: str) -> str:
    """One sentence: which rows were judged, how many per place (its first run's) and why."""
    frame = predictions.frame
    left_out = int((~judged_rows(frame, reference)).sum())
    counts: dict[tuple[str, str], int] = {}
    for g in groups:
        counts.setdefault((g.platform, g.dataset), g.n)
    home = [f"{p} ({d}): {n:,}" for (p, d), n in counts.items() if reference in (p, d)]
    away = [f"{p} ({d}): {n:,}" for (p, d), n in counts.items() if reference not in (p, d)]
    return (
        f" Rows judged, each row the model did not train on: at home its rows outside train and val "
        f"({', '.join(home)}{f'; {left_out:,} training rows in the predictions left out' if left_out else ''}), "
        f"elsewhere every scored row ({', '.join(away) or 'none'})."
    )


def check_labelled(predictions: PredictionSet) -> None:
    """Every row has a label: the statistics trust the codes, and this is their one check."""
    unlabelled = np.flatnonzero(predictions.codes < 0)
    if unlabelled.size:
        raise InputError(
            f"row {unlabelled.min() + 1} of the predictions has no label; the audit compares each "
            "judged row's prediction with its label"
        )


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
        if len(runs) > 1 and all(
            len(r) == len(first)
            and all(
                (a.platform, a.dataset) == (b.platform, b.dataset)
                and np.array_equal(a.ids, b.ids)
                and np.array_equal(a.logits, b.logits)
                for a, b in zip(first, r)
            )
            for r in runs[1:]
        ):
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
    """The reference group of every (model, seed), by the one rule (tables.pairing.reference_runs); `reference`
    names a platform or a data set."""
    check_place(
        reference,
        (g.platform for g in groups),
        (g.dataset for g in groups),
        what="reference platform",
        where="in the predictions",
        hint=" (platforms come from a platform column, --name-pattern or "
        "--platform; without them each file's name is its platform)",
    )
    found = [g for g in groups if reference in (g.platform, g.dataset)]
    return reference_runs(found, dict.fromkeys(g.run for g in groups))
