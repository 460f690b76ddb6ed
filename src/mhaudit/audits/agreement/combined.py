"""A combined labeler (kind `combined`, made by `mhaudit labels combine`) beside its sources and their majority vote
against the reference labels, and each source's accuracy as the label model estimated it without labels beside the
accuracy measured on the reference (docs/validation.md, "A combined labeler beside its sources").

The sources and the recipe come from the combined rows' `note`; the label model is fitted again exactly as
`labels combine` fitted it (`weak_supervision.combine.combine_labels`, the same vote matrix), so its estimates are
the ones that command printed while the sources' labels are unchanged (their `prompt_hash` says so). Every labeler
is scored on the same items: the reference items any source has a label row for; a labeler that abstains on an item
(a lexicon's no-match, no row, a null value, a tie) counts as saying 0 there, and `coverage` is the share it voted on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import cluster_labels
from mhaudit.audits.agreement.design import design_weighted
from mhaudit.core.errors import InputError
from mhaudit.stats.label_model import ABSTAIN, majority_vote
from mhaudit.stats.proportion import wilson_interval
from mhaudit.stats.weak_metrics import weak_vs_reference
from mhaudit.weak_supervision.combine import CombinedLabels, combine_labels
from mhaudit.weak_supervision.combine_options import CombineOptions

__all__ = [
    "CombinedComparison",
    "combined_recipe",
    "compare_combined",
    "refit_combined",
    "majority_labels",
    "SHOWN_METRICS",
]

SHOWN_METRICS = ("kappa", "precision", "recall")


@dataclass(frozen=True)
class CombinedComparison:
    """`table`: one row per labeler (each source, their majority vote, the combined labeler) with kappa, precision
    and recall and their CIs; `weighted`: the same, design-weighted (empty without a validation set); `accuracy`:
    one row per source, estimated vs measured; `n_items`: the items every labeler is scored on; `notes`: what the
    reader must know (a stale recipe); `design`: the sampled items the weighted table scores and the pool they
    stand for."""

    name: str
    method: str
    n_items: int
    table: pd.DataFrame
    weighted: pd.DataFrame
    accuracy: pd.DataFrame
    notes: tuple[str, ...]
    design: tuple[int, float] | None = None


def combined_recipe(rows: pd.DataFrame, name: str) -> tuple[dict, str]:
    """The combined labeler's recipe (its rows' `note`) and `prompt_hash`; one sentence when it is not one."""
    mine = rows[rows["labeler"] == name]
    kind = str(mine["kind"].iat[0])
    if kind != "combined":
        raise InputError(f"--combined '{name}' is a {kind} labeler; name one of kind combined (mhaudit labels combine)")
    notes, hashes = mine["note"].dropna().unique(), mine["prompt_hash"].dropna().unique()
    if len(notes) != 1 or len(hashes) != 1:
        raise InputError(
            f"--combined '{name}' has {len(notes)} recipes (note) and {len(hashes)} prompt hashes in its rows; "
            "expected the one recipe labels combine writes (make it anew with labels combine --replace)"
        )
    try:
        recipe = json.loads(notes[0])
        recipe["sources"] = [(s["labeler"], bool(s["zero_votes"])) for s in recipe["sources"]]
        return recipe, str(hashes[0])
    except (ValueError, KeyError, TypeError):
        raise InputError(f"--combined '{name}': its note is not the recipe labels combine writes") from None


def refit_combined(labels: pd.DataFrame, task: str, name: str, rows: pd.DataFrame) -> tuple[CombinedLabels, str]:
    """The label model of `name` fitted again on the labels table as `labels combine` fitted it, and a note when
    the sources' labels changed since (the recipe's hash differs from the stored `prompt_hash`; '' otherwise)."""
    recipe, stored_hash = combined_recipe(rows, name)
    options = CombineOptions(
        labelers=tuple(labeler for labeler, _ in recipe["sources"]),
        method=recipe["method"],
        name=name,
        zero_votes=tuple(labeler for labeler, zero in recipe["sources"] if zero),
        max_iter=int(recipe["max_iter"]),
        tol=float(recipe["tol"]),
    )
    refit = combine_labels(labels, task, options)
    stale = ""
    if refit.labels["prompt_hash"].iat[0] != stored_hash:
        stale = (
            f"The sources' labels (or the recipe) changed since '{name}' was made: its stored labels are scored as "
            "they are, but the estimated accuracies are those of the label model fitted again on today's labels, "
            "not the ones labels combine printed; run labels combine --replace to make them one."
        )
    return refit, stale


def majority_labels(votes: pd.DataFrame) -> pd.Series:
    """Majority vote of the vote matrix (`stats.label_model.majority_vote`), as `labels combine --method majority`
    labels: 1 where more votes say 1, 0 where more say 0, NA at a tie."""
    share = majority_vote(votes.to_numpy(), 2).probabilities[:, 1]
    value = pd.array(np.where(share > 0.5, 1, 0), dtype="Int64")
    value[share == 0.5] = pd.NA
    return pd.Series(value, index=votes.index, name="majority")


def _labelers(combined: CombinedLabels, stored: pd.Series, items: pd.Index) -> list[tuple[str, str, pd.Series]]:
    """(name, role, hard label or NA per item of `items`) for each source (its votes), the majority, the combined."""
    votes = combined.votes.reindex(items, fill_value=ABSTAIN)
    out = []
    for source in combined.sources:
        reading = "0 = vote" if source.zero_votes else "0 = no vote"
        label = votes[source.labeler].astype("Int64").mask(votes[source.labeler] == ABSTAIN)
        out.append((source.labeler, f"{source.kind} ({reading})", label))
    majority = majority_labels(combined.votes).reindex(items)
    out.append((f"majority-vote({len(combined.sources)} sources)", "majority of the votes", majority))
    out.append((combined.name, f"combined: {combined.method}", stored.reindex(items).astype("Int64")))
    return out


def _wide(metrics: pd.DataFrame) -> dict:
    """kappa, precision and recall with their CIs from one `weak_vs_reference` table, and why any is undefined."""
    m = metrics.set_index("metric")
    row: dict = {}
    for metric in SHOWN_METRICS:
        row |= {metric: m.at[metric, "estimate"], f"{metric}_lo": m.at[metric, "ci_low"]}
        row[f"{metric}_hi"] = m.at[metric, "ci_high"]
    reasons = [f"{metric}: {m.at[metric, 'reason']}" for metric in SHOWN_METRICS if m.at[metric, "reason"]]
    return row | {"reason": "; ".join(reasons)}


def _scores(reference: pd.Series, label: pd.Series, seed: list[int], options, authors) -> dict:
    """One labeler's row: its label read as 0 where it abstains, against the reference."""
    said = label.fillna(0).astype(int)
    metrics = weak_vs_reference(
        reference.to_numpy(),
        said.to_numpy(),
        n_boot=options.n_boot,
        alpha=options.alpha,
        rng=np.random.default_rng(seed),
        clusters=cluster_labels(said.index, authors),
    )[0]
    metrics["reason"] = metrics["reason"].fillna("")
    return _wide(metrics)


def _weighted_scores(reference: pd.Series, label: pd.Series, seed: list[int], options, authors, sample) -> dict:
    """One labeler's row design-weighted for the pool the validation set `sample` was drawn from: its metrics and
    its coverage as the weighted share of the pool it labels, with the items scored (`_n`) and the pool (`_pool`)."""
    said = label.fillna(0).astype(int)
    scored = pd.DataFrame({"reference": reference, "weak": said})
    rng = np.random.default_rng(seed)
    metrics, strata, _ = design_weighted(
        sample, scored, reference, said, "", options.n_boot, options.alpha, rng, authors
    )
    drawn = sample.assign(item_id=sample["item_id"].astype(str)).set_index("item_id")["stratum"]
    inside = said.index[said.index.isin(drawn.index)]
    weight = drawn.loc[inside].map(strata.set_index("stratum")["weight"])
    coverage = float(weight[label.reindex(inside).notna().to_numpy()].sum() / weight.sum())
    return {"coverage": coverage} | _wide(metrics) | {"_n": len(inside), "_pool": float(metrics["pool"].iat[0])}


def _side_by_side(labelers, reference: pd.Series, options, authors, validation_set):
    """The κ / precision / recall table of every labeler on the same items, its design-weighted twin, and the
    items that one scores and the pool they stand for (None without a validation set)."""
    rows, weighted = [], []
    for i, (name, role, label) in enumerate(labelers, start=1):
        head = {"labeler": name, "role": role, "coverage": float(label.notna().mean())}
        rows.append(head | _scores(reference, label, [options.seed, 1000 + i], options, authors))
        if validation_set is not None:
            seed = [options.seed, 2000 + i]
            weighted.append(head | _weighted_scores(reference, label, seed, options, authors, validation_set))
    table, design = pd.DataFrame(weighted), None
    if not table.empty:
        design = (int(table.pop("_n").iat[0]), float(table.pop("_pool").iat[0]))
    return _without_empty_reason(pd.DataFrame(rows)), _without_empty_reason(table), design


def _source_accuracy(combined: CombinedLabels, labelers, reference: pd.Series, alpha: float) -> pd.DataFrame:
    """Per source: the label model's accuracy (estimated without labels, on all its votes) beside the share of its
    votes on the reference items that the reference confirms, with a Wilson interval."""
    estimates = combined.estimates.set_index("labeler")
    rows = []
    for name, role, label in labelers[: len(combined.sources)]:
        voted = label.dropna().astype(int)
        n, right = len(voted), int((voted == reference.reindex(voted.index)).sum())
        low, high = wilson_interval(right, n, 1 - alpha) if n else (np.nan, np.nan)
        estimated = float(estimates.at[name, "accuracy"])
        reasons = []
        if not np.isfinite(estimated):
            reasons.append("estimated: the label model could not estimate it (see the notes of labels combine)")
        if not n:
            reasons.append("measured: it votes on no reference item")
        rows.append(
            {
                "source": name,
                "reading": role,
                "votes": int(estimates.at[name, "n_votes"]),
                "estimated": estimated,
                "votes_on_reference": n,
                "measured": right / n if n else np.nan,
                "measured_lo": low,
                "measured_hi": high,
                "difference": estimated - right / n if n else np.nan,
                "reason": "; ".join(reasons),
            }
        )
    return _without_empty_reason(pd.DataFrame(rows))


def _without_empty_reason(table: pd.DataFrame) -> pd.DataFrame:
    """The table without its `reason` column when every value is defined (a page's width is precious)."""
    return table.drop(columns="reason") if "reason" in table and not table["reason"].astype(bool).any() else table


def compare_combined(
    labels: pd.DataFrame,
    rows: pd.DataFrame,
    name: str,
    reference: pd.Series,
    options,
    authors: pd.Series | None = None,
    validation_set: pd.DataFrame | None = None,
) -> CombinedComparison:
    """The combined labeler `name` (a full name in `rows`, one task's labels) beside its sources and their majority
    vote against `reference` (item id -> 0/1), and the sources' estimated vs measured accuracy. `options`: the
    audit's (task, n_boot, alpha, seed). Each labeler's bootstrap has its own stream (seed, 1000 + i)."""
    combined, stale = refit_combined(labels, options.task, name, rows)
    sourced = rows.loc[rows["labeler"].isin([s.labeler for s in combined.sources]), "item_id"].unique()
    items = reference.index[reference.index.isin(sourced)].sort_values()
    if items.empty:
        raise InputError(f"no reference item has a label from any source of '{name}'")
    stored = rows[rows["labeler"] == name].set_index("item_id")["value"]
    labelers = _labelers(combined, stored, items)
    ref = reference.reindex(items).astype(int)
    table, weighted, design = _side_by_side(labelers, ref, options, authors, validation_set)
    accuracy = _source_accuracy(combined, labelers, ref, options.alpha)
    notes = tuple(filter(None, [stale]))
    return CombinedComparison(name, combined.method, len(items), table, weighted, accuracy, notes, design)


def combined_sections(comparison: CombinedComparison, n_boot: int, alpha: float, unit: str) -> list:
    """The report's two sections: the labelers side by side (and design-weighted), the sources' accuracy."""
    from mhaudit.report import Section

    level = f"{1 - alpha:.0%}"
    n = comparison.n_items
    side = Section(
        f"Combined labeler {comparison.name} beside its sources and their majority vote",
        f"Every labeler on the same {n:,} reference items (those any source has a label row for), positive class 1. "
        "A labeler that abstains on an item counts as saying 0 there: a lexicon whose 0 is no vote (no term "
        "matched), a source without a row, a null value, a tie of the majority vote or a combined probability "
        "of exactly 0.5; `coverage` is the share of these items it did give a label. The sources' votes are read "
        "as labels combine read them (`role`: 0 = vote, or 0 = no vote); the majority vote is of "
        "those same votes (stats.label_model.majority_vote, ties give no label); the combined labeler's labels are "
        f"its stored ones. Each row: the estimate and its {level} {unit} percentile CI ({n_boot} resamples, a "
        "stream per row) in `_lo` and `_hi`; a metric with a zero denominator is n/a, its reason in a `reason` "
        "column."
        + (
            f" `combined_vs_reference_weighted`: the same rows on the {comparison.design[0]:,} "
            "items of the validation sample, each counting its stratum's weight (as in the design-weighted estimates "
            f"below), so they estimate the pool of {comparison.design[1]:,.0f} items the sample "
            "was drawn from; `coverage` there is the weighted share of that pool the labeler labels."
            if comparison.design is not None
            else ""
        ),
        {
            "combined_vs_reference": comparison.table,
            **({"combined_vs_reference_weighted": comparison.weighted} if not comparison.weighted.empty else {}),
        },
    )
    accuracy = Section(
        "Source accuracy: estimated without labels vs measured on the human sample",
        f"estimated: the {comparison.method} label model's estimate, made without any reference label, "
        "of the share of the source's votes that are right, over all its `votes` (as labels combine printed it). "
        "measured: the share of its votes on the reference items that the reference confirms "
        f"(`votes_on_reference` of them; an abstention is no vote here), with a {level} Wilson interval in "
        "`measured_lo` and `measured_hi` (items taken as independent); difference = estimated - measured. A "
        "source whose 0 is no vote only says 1, so its accuracy is its precision.",
        {"source_accuracy": comparison.accuracy},
    )
    from mhaudit.audits.agreement import figures

    side.figures["Cohen's kappa of each labeler"] = figures.combined_kappa(comparison.table)
    accuracy.figures["Source accuracy: estimated vs measured"] = figures.source_accuracy(comparison.accuracy)
    return [side, accuracy]


def combined_summary(comparison: CombinedComparison) -> str:
    """One sentence: the combined labeler's kappa beside the majority vote's and the best source's."""
    table = comparison.table
    sources, majority, combined = table.iloc[:-2], table.iloc[-2], table.iloc[-1]

    def kappa(row) -> str:
        if not np.isfinite(row["kappa"]):
            return "n/a"
        ci = f" [{row['kappa_lo']:.3f}, {row['kappa_hi']:.3f}]" if np.isfinite(row["kappa_lo"]) else ""
        return f"{row['kappa']:.3f}{ci}"

    best = sources.loc[sources["kappa"].idxmax()] if sources["kappa"].notna().any() else None
    return (
        f"Combined labeler '{comparison.name}' ({comparison.method} of {len(sources)} sources, abstentions read as "
        f"0, on {comparison.n_items:,} items): Cohen's kappa {kappa(combined)}; the majority vote of the same sources "
        f"{kappa(majority)}"
        + (f"; the best single source, '{best['labeler']}', {kappa(best)}." if best is not None else ".")
    )


def with_weak_scores(
    comparison: CombinedComparison, scored: pd.DataFrame, metrics: pd.DataFrame, weighted: pd.DataFrame
) -> CombinedComparison:
    """`comparison` with the combined labeler's rows taken from the weak-labeler section (`metrics`, `weighted`)
    when the combined labeler is the weak one and labels every item here: both then score the same labels on the
    same items, and one labeler gets one set of numbers and CIs on the page, not two bootstraps' worth."""
    if not (comparison.table.iloc[-1]["coverage"] == 1 and comparison.n_items == len(scored)):
        return comparison

    def last_row_from(table: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
        if table.empty or source.empty:
            return table
        wide = _wide(source)
        table = table.assign(reason=table["reason"] if "reason" in table else "")
        table.loc[table.index[-1], list(wide)] = pd.Series(wide)
        return _without_empty_reason(table)

    return replace(
        comparison,
        table=last_row_from(comparison.table, metrics),
        weighted=last_row_from(comparison.weighted, weighted),
    )
