"""Design-weighted estimates of the weak labeler's metrics for the pool a validation sample was drawn from.

Each scored item of a stratum (the weak label it was drawn under) stands for pool_size / n_scored items
of the pool; the bootstrap resamples items within strata (mhaudit.stats.weak_metrics.weak_vs_reference).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import cluster_labels
from mhaudit.core.errors import InputError
from mhaudit.stats.weak_metrics import weak_vs_reference

__all__ = ["design_weighted"]


def design_weighted(
    validation_set: pd.DataFrame,
    scored: pd.DataFrame,
    ref: pd.Series,
    weak_rows: pd.Series,
    weak: str,
    n_boot: int,
    alpha: float,
    rng,
    authors: pd.Series | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Design-weighted estimates for the sampled pool, the per-stratum design table, and a note (the bootstrap
    draws authors within strata when `authors` is given).

    A stratum's pool is its `pool_size` column, or else the sum of its sampled items' design weights
    (pool_size / sample_size each); it is spread over the stratum's *scored* items: weight = pool_size /
    n_scored. Sampled items that drop out of scoring then no longer shrink their stratum's share of the pool.
    """
    vs = validation_set.assign(item_id=validation_set["item_id"].astype(str)).set_index("item_id")
    inside = scored.index.isin(vs.index)
    if not inside.any():
        raise InputError("none of the scored items is in the validation set; is it the sample of this task?")
    sub = scored[inside]
    strata = _strata_table(vs, sub, ref, weak_rows)
    item_strata = vs.loc[sub.index, "stratum"]
    weights = item_strata.map(strata.set_index("stratum")["weight"]).to_numpy(dtype=float)
    metrics_w, _ = weak_vs_reference(
        sub["reference"].to_numpy(),
        sub["weak"].to_numpy(),
        n_boot=n_boot,
        alpha=alpha,
        rng=rng,
        weights=weights,
        strata=item_strata.to_numpy(),
        clusters=cluster_labels(sub.index, authors),
    )
    weighted = metrics_w.assign(pool=float(weights.sum()), reason=metrics_w["reason"].fillna(""))
    return weighted, strata, _design_note(vs, inside, strata, weak)


def _strata_table(vs: pd.DataFrame, sub: pd.DataFrame, ref: pd.Series, weak_rows: pd.Series) -> pd.DataFrame:
    """Per stratum of the validation set (`vs`, indexed by item id): its pool, the items sampled and scored (`sub`),
    those dropped for want of a reference or a valid weak label, and the weight of each scored item."""
    has_weak = vs.index.isin(weak_rows.index[weak_rows.notna()])
    design = pd.DataFrame(
        {
            "stratum": vs["stratum"],
            "weight": vs["weight"],
            "scored": vs.index.isin(sub.index),
            "no_reference": ~vs.index.isin(ref.index),
            "no_weak": vs.index.isin(ref.index) & ~has_weak,
        }
    )
    strata = design.groupby("stratum", sort=True).agg(
        pool_size=("weight", "sum"),
        design_weight=("weight", "first"),
        sampled=("weight", "size"),
        scored=("scored", "sum"),
        no_reference=("no_reference", "sum"),
        no_valid_weak_label=("no_weak", "sum"),
    )
    pool_column = pd.to_numeric(vs["pool_size"], errors="coerce") if "pool_size" in vs.columns else None
    if pool_column is not None and pool_column.notna().all():  # the pool sizes as drawn (exact)
        strata["pool_size"] = pool_column.groupby(vs["stratum"]).first()
    strata["pool_size"] = strata["pool_size"].round(6)
    strata["dropped"] = strata["sampled"] - strata["scored"]
    strata["weight"] = (strata["pool_size"] / strata["scored"]).where(strata["scored"] > 0)
    return strata.reset_index()[
        [
            "stratum",
            "pool_size",
            "sampled",
            "scored",
            "dropped",
            "no_reference",
            "no_valid_weak_label",
            "design_weight",
            "weight",
        ]
    ]


def _design_note(vs: pd.DataFrame, inside: np.ndarray, strata: pd.DataFrame, weak: str) -> str:
    """What the weighted estimates leave out or assume: scored items outside the sample, sampled items not
    scored, strata with no scored item, a sample stratified by another weak labeler."""
    notes = []
    if (~inside).any():
        notes.append(
            f" {int((~inside).sum())} scored items are not in the validation set and are left out of the "
            "weighted estimates."
        )
    dropped = int(strata["dropped"].sum())
    if dropped:
        notes.append(
            f" {dropped} of the {len(vs)} sampled items were not scored; their strata's pools are spread over "
            "the scored items of the same stratum (see design_strata)."
        )
    empty = strata[strata["scored"] == 0]
    notes.extend(
        f" Stratum {row.stratum} has no scored item: its pool of {row.pool_size:g} items is not covered by "
        "the weighted estimates."
        for row in empty.itertuples()
    )
    if "weak_labeler" in vs.columns and (vs["weak_labeler"].astype(str) != weak).any():
        notes.append(
            f" The sample was stratified by '{vs['weak_labeler'].iloc[0]}', not by '{weak}'; the weights "
            "still follow the sampling design."
        )
    return "".join(notes)
