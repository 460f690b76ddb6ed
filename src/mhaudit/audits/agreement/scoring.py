"""Labelers against the reference labels: the items one labeler and the reference both label, and each model's
metrics (a classifier's predicted labels entered as a labeler, the human validation of a model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import cluster_labels
from mhaudit.audits.agreement.labels import describe_labelers
from mhaudit.core.errors import InputError
from mhaudit.report import Section
from mhaudit.stats.weak_metrics import weak_vs_reference
from mhaudit.tables.reference_labels import reference_labels

if TYPE_CHECKING:
    from mhaudit.audits.agreement.options import AgreementOptions

__all__ = ["scored_items", "models_vs_reference", "models_section"]


def scored_items(
    rows: pd.DataFrame, task: str, weak: str, annotators: list[str], reference: str | None
) -> tuple[pd.DataFrame, pd.Series, pd.Series, pd.DataFrame, str]:
    """The items with a reference and a valid weak label (columns reference, weak), the reference labels, the
    weak labeler's values, the composition table (where the reference came from, what was left out) and the
    reference's one-line description."""
    ref, composition, ref_desc = reference_labels(rows, annotators, reference)
    if ref.empty:
        raise InputError(
            f"no reference labels for task '{task}': no adjudicated label, no agreed human label"
            + (f" and no valid label from '{reference}'" if reference else "")
            + f" (labelers: {describe_labelers(rows)})"
        )
    weak_rows = rows[rows["labeler"] == weak].set_index("item_id")["value"]
    joined = pd.DataFrame({"reference": ref}).join(weak_rows.rename("weak"), how="left")
    no_weak = int((~joined.index.isin(weak_rows.index)).sum())
    invalid_weak = int(joined.index.isin(weak_rows.index[weak_rows.isna()]).sum())
    scored = joined.dropna(subset=["weak"]).astype(int)
    if scored.empty:
        raise InputError(f"the weak labeler '{weak}' has no valid label on any of the {len(ref)} reference items")
    composition = pd.concat(
        [
            composition,
            pd.DataFrame(
                [
                    {"source": f"reference items without a label from {weak}: left out", "items": no_weak},
                    {"source": f"reference items with an invalid label from {weak}: left out", "items": invalid_weak},
                    {"source": "items scored (reference and weak label)", "items": len(scored)},
                ]
            ),
        ],
        ignore_index=True,
    )
    return scored, ref, weak_rows, composition, ref_desc


def models_vs_reference(
    rows: pd.DataFrame,
    task: str,
    options: AgreementOptions,
    weak: str,
    annotators: list[str],
    authors: pd.Series | None = None,
) -> pd.DataFrame:
    """Each of options.models against the reference, one row per model and metric. Each model's bootstrap
    has its own stream (seed, i), so adding a model moves no other number."""
    parts = []
    for i, model in enumerate(options.models, start=1):
        if model == weak or model in annotators:
            raise InputError(f"'{model}' cannot be both a model under validation and the weak labeler or an annotator")
        scored = scored_items(rows, task, model, annotators, options.reference)[0]
        metrics, _ = weak_vs_reference(
            scored["reference"].to_numpy(),
            scored["weak"].to_numpy(),
            n_boot=options.n_boot,
            alpha=options.alpha,
            rng=np.random.default_rng([options.seed, i]),
            clusters=cluster_labels(scored.index, authors),
        )
        parts.append(metrics.assign(labeler=model, reason=metrics["reason"].fillna("")))
    table = pd.concat(parts, ignore_index=True)
    return table[["labeler", *[c for c in table.columns if c != "labeler"]]]


def models_section(models: pd.DataFrame, n_boot: int, alpha: float, unit: str = "item-bootstrap") -> Section:
    return Section(
        "Models against the reference (human validation)",
        "Each model's predicted labels on the same items, scored against the same reference labels as the weak "
        f"labeler, with the same metrics and {1 - alpha:.0%} {unit} percentile CIs ({n_boot} resamples).",
        {"models_vs_reference": models},
    )
