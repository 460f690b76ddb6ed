"""Human-human agreement before adjudication, for the agreement report: the annotators' independent labels as an
items x annotators matrix, Cohen's kappa per pair of annotators with a bootstrap CI, and Krippendorff's alpha
for more than two."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import cluster_labels
from mhaudit.core.errors import InputError
from mhaudit.stats.agreement import bootstrap_kappa, krippendorff_alpha

__all__ = ["human_matrix", "human_agreement"]


def human_matrix(rows: pd.DataFrame, annotators: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    """Items x annotators labels before adjudication (kind 'human' rows are the independent labels) and the
    number of invalid answers per annotator."""
    human = rows[rows["labeler"].isin(annotators)]
    # NaN: not labelled, or an invalid answer
    matrix = human.pivot(index="item_id", columns="labeler", values="value").reindex(columns=annotators).astype(float)
    invalid = human.groupby("labeler")["value"].apply(lambda v: int(v.isna().sum()))
    return matrix, invalid


def human_agreement(
    matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kappa per pair of annotators, and Krippendorff's alpha for more than two (else an empty table)."""
    if len(annotators) < 2:
        source = f"'{annotators[0]}'" if annotators else "none"
        reason = (
            f"one human label source only ({source}); human-human agreement needs "
            "two annotators' independent labels before adjudication"
        )
        only = annotators[0] if annotators else None
        return pd.DataFrame([_no_kappa_row(only, None, "unavailable", reason)]), pd.DataFrame()
    pairs = _pairwise_kappa(matrix, annotators, n_boot, alpha, rng, authors)
    if (pairs["n"] == 0).all():
        who = " and ".join(annotators) if len(annotators) == 2 else "any two of " + ", ".join(annotators)
        raise InputError(
            f"annotators {who} have no labelled item in common; agreement needs items labelled by "
            "both (give them overlapping items)"
        )
    alpha_table = (
        _alpha_table(matrix, annotators, n_boot, alpha, rng, authors) if len(annotators) > 2 else pd.DataFrame()
    )
    return pairs, alpha_table


def _no_kappa_row(a: str | None, b: str | None, status: str, reason: str) -> dict:
    """The pairs table's row of two annotators without a kappa (no shared item, or one annotator only)."""
    return {
        "annotator_a": a,
        "annotator_b": b,
        "n": 0,
        "observed_agreement": np.nan,
        "kappa": np.nan,
        "ci_low": np.nan,
        "ci_high": np.nan,
        "se": np.nan,
        "n_boot": 0,
        "n_failed": 0,
        "status": status,
        "reason": reason,
    }


def _pairwise_kappa(
    matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(annotators, 2):
        both = matrix[[a, b]].dropna()
        if both.empty:
            rows.append(_no_kappa_row(a, b, "undefined", "no item labelled by both"))
            continue
        r = bootstrap_kappa(
            both[a].astype(int).to_numpy(),
            both[b].astype(int).to_numpy(),
            labels=[0, 1],
            n_boot=n_boot,
            alpha=alpha,
            rng=rng,
            clusters=cluster_labels(both.index, authors),
        )
        rows.append(
            {
                "annotator_a": a,
                "annotator_b": b,
                "n": r["n"],
                "observed_agreement": r["observed_agreement"],
                "kappa": r["estimate"],
                "ci_low": r["ci_low"],
                "ci_high": r["ci_high"],
                "se": r["se"],
                "n_boot": r["n_boot"],
                "n_failed": r["n_failed"],
                "status": "ok" if r["reason"] is None else "undefined",
                "reason": "; ".join(filter(None, [r["reason"], _identical_note(both, a, b)])),
            }
        )
    return pd.DataFrame(rows).fillna({"reason": ""})


def _identical_note(both: pd.DataFrame, a: str, b: str) -> str:
    """Where two annotators' labels are identical on every shared item, a warning and the note beside their kappa:
    such a kappa measures no human agreement."""
    if not (both[a] == both[b]).all():
        return ""
    note = (
        f"the two label sets are identical on all {len(both):,} shared items, often the same file given twice "
        "or one annotator copied"
    )
    warnings.warn(f"annotators '{a}' and '{b}': {note}; their kappa says nothing about human agreement", stacklevel=4)
    return note


def _alpha_table(
    matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> pd.DataFrame:
    k = krippendorff_alpha(
        matrix.to_numpy().T, n_boot=n_boot, alpha=alpha, rng=rng, clusters=cluster_labels(matrix.index, authors)
    )
    return pd.DataFrame(
        [
            {
                "annotators": ", ".join(annotators),
                "level": "nominal",
                "alpha": k["estimate"],
                "ci_low": k["ci_low"],
                "ci_high": k["ci_high"],
                "se": k["se"],
                "n_items": k["n_items"],
                "n_values": k["n_values"],
                "n_boot": k["n_boot"],
                "n_failed": k["n_failed"],
                "status": "ok" if k["reason"] is None else "undefined",
                "reason": k["reason"],
            }
        ]
    )
