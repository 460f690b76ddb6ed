"""Axis 4, prediction equity with platform as the group: per class, symmetric disparate impact (raw and
adjusted to the reference's class prevalences), the equal-opportunity gap (what the CPFE paper calls
the equalized odds difference) and the full equalized-odds gap."""

from __future__ import annotations

from mhaudit.stats.fairness import equity_by_class, summarise_classes
from mhaudit.tables.predictions import Group


def equity_rows(group: Group, reference: Group, classes: list[str]) -> tuple[list[dict], dict]:
    """Per-class rows, and the group's worst class of each measure (max gaps, min DI) with its class."""
    rows = equity_by_class(reference.y, reference.pred, group.y, group.pred, len(classes), adjust_priors=True)
    rows = [
        {**group.key(), "n": group.n, "reference": reference.platform, **row, "class": classes[row["class"]]}
        for row in rows
    ]
    return rows, {**group.key(), "n": group.n, "reference": reference.platform, **summarise_classes(rows)}
