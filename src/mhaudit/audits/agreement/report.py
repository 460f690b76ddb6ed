"""The agreement audit of weak-label validation (Bluesky paper, section on human validation; issue 7).

`audit_agreement` compares the labelers of one task (the labels table, mhaudit.tables.label_store) and
returns a AuditResult for the shared renderer: human-human agreement before adjudication (Cohen's kappa with
a bootstrap CI, observed agreement, Krippendorff's alpha for more than two annotators), the weak labeler
against the reference labels (agreement, kappa, precision, recall, F1, macro-F1, confusion matrix,
positive rates), optional design-weighted estimates for the sampled pool, and the error sources of the
weak labeler's false positives and negatives by the annotators' tags.

The reference labels follow docs/validation.md, "The reference" (mhaudit.tables.reference_labels);
`AgreementOptions(reference=LABELER)` makes one labeler the reference instead.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import bootstrap_unit, cluster_labels, item_authors
from mhaudit.audits.agreement.design import design_weighted
from mhaudit.audits.agreement.labels import choose_weak_labeler
from mhaudit.audits.agreement.options import AgreementInputs, AgreementOptions
from mhaudit.audits.agreement.scoring import models_section, models_vs_reference, scored_items
from mhaudit.audits.agreement.verdicts import agreement_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult, Section
from mhaudit.report.result import provenance
from mhaudit.stats.agreement import bootstrap_kappa, krippendorff_alpha
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.stats.weak_metrics import weak_vs_reference
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.label_store import parse_tags
from mhaudit.tables.labeler_names import with_full_labeler_names
from mhaudit.tables.reference_labels import task_labels

__all__ = ["AgreementInputs", "AgreementOptions", "audit_agreement"]

NO_TAG = "(no tag)"


# -------------------------------------------------------------------------------------- labelers
def _annotators(rows: pd.DataFrame, weak: str, annotators: Sequence[str] | None, reference: str | None) -> list[str]:
    """The annotators to compare (default: every 'human' labeler but the reference), checked with the others."""
    if annotators is None:  # the names given are full names (`with_full_labeler_names`)
        annotators = sorted(rows.loc[(rows["kind"] == "human") & (rows["labeler"] != reference), "labeler"].unique())
    else:
        annotators = list(dict.fromkeys(annotators))
    if weak in annotators or weak == reference:
        raise InputError(f"'{weak}' cannot be both the weak labeler and an annotator or the reference")
    return annotators


# ---------------------------------------------------------------------------- human-human agreement
def _human_matrix(rows: pd.DataFrame, annotators: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    """Items x annotators labels before adjudication (kind 'human' rows are the independent labels) and the
    number of invalid answers per annotator."""
    human = rows[rows["labeler"].isin(annotators)]
    # NaN: not labelled, or an invalid answer
    matrix = human.pivot(index="item_id", columns="labeler", values="value").reindex(columns=annotators).astype(float)
    invalid = human.groupby("labeler")["value"].apply(lambda v: int(v.isna().sum()))
    return matrix, invalid


def _pairwise_kappa(
    matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(annotators, 2):
        both = matrix[[a, b]].dropna()
        if both.empty:
            rows.append(
                {
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
                    "status": "undefined",
                    "reason": "no item labelled by both",
                }
            )
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


def _human_agreement(
    matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kappa per pair of annotators, and Krippendorff's alpha for more than two (else an empty table)."""
    if len(annotators) < 2:
        source = f"'{annotators[0]}'" if annotators else "none"
        pairs = pd.DataFrame(
            [
                {
                    "annotator_a": annotators[0] if annotators else None,
                    "annotator_b": None,
                    "n": 0,
                    "observed_agreement": np.nan,
                    "kappa": np.nan,
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                    "se": np.nan,
                    "n_boot": 0,
                    "n_failed": 0,
                    "status": "unavailable",
                    "reason": f"one human label source only ({source}); human-human agreement needs "
                    "two annotators' independent labels before adjudication",
                }
            ]
        )
        return pairs, pd.DataFrame()
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


# --------------------------------------------------------------------- weak labeler vs reference
def _confusion_table(table: np.ndarray) -> pd.DataFrame:
    counts = np.vstack([table, table.sum(axis=0)]).astype(np.int64)  # the 2 x 2 table and its column totals
    return pd.DataFrame(
        {
            "reference": ["0 (negative)", "1 (positive)", "total"],
            "weak_0": counts[:, 0],
            "weak_1": counts[:, 1],
            "total": counts.sum(axis=1),
        }
    )


def _positive_rates(scored: pd.DataFrame, matrix: pd.DataFrame, weak: str, annotators: list[str]) -> pd.DataFrame:
    """Positive rate on the scored items of the weak labeler, the reference and each annotator, in that order."""
    rates = [
        {
            "labeler": weak,
            "role": "weak labeler",
            "n": len(scored),
            "positives": int(scored["weak"].sum()),
            "positive_rate": scored["weak"].mean(),
        },
        {
            "labeler": "reference",
            "role": "reference",
            "n": len(scored),
            "positives": int(scored["reference"].sum()),
            "positive_rate": scored["reference"].mean(),
        },
    ]
    for a in annotators:
        vals = matrix[a].reindex(scored.index).dropna()
        rates.append(
            {
                "labeler": a,
                "role": "annotator",
                "n": len(vals),
                "positives": int(vals.sum()),
                "positive_rate": vals.mean() if len(vals) else np.nan,
            }
        )
    return pd.DataFrame(rates)


# ---------------------------------------------------------------------------------- error sources
def _item_tags(rows: pd.DataFrame, annotators: list[str], reference: str | None) -> pd.Series:
    """Per item, the sorted tags that the annotators, the reference labeler and the adjudicator gave."""
    taggers = [*annotators, *([reference] if reference else [])]
    tag_rows = rows[rows["labeler"].isin(taggers) | (rows["kind"] == "adjudicated")]
    item_tags = (
        tag_rows["tags"].map(parse_tags)
        if "tags" in tag_rows
        else pd.Series([[]] * len(tag_rows), index=tag_rows.index)
    )
    return (
        tag_rows.assign(_tags=item_tags)
        .groupby("item_id")["_tags"]
        .agg(lambda lists: sorted({t for ts in lists for t in ts}))
    )


def _outcomes(scored: pd.DataFrame) -> pd.Series:
    """The weak label's outcome per scored item: correct, false_positive or false_negative."""
    return pd.Series(
        np.where(
            scored["weak"] == scored["reference"],
            "correct",
            np.where(scored["weak"] == 1, "false_positive", "false_negative"),
        ),
        index=scored.index,
    )


def _error_sources(cells: pd.Series, tags: pd.Series) -> pd.DataFrame:
    """Items per tag within each outcome (false positive, false negative, correct)."""
    rows = []
    for outcome in ("false_positive", "false_negative", "correct"):
        ids = cells.index[cells == outcome]
        if not len(ids):
            continue
        item_tags = tags.reindex(ids).map(lambda t: t if isinstance(t, list) and t else [NO_TAG])
        counts = item_tags.explode().value_counts()
        for tag, count in sorted(counts.items(), key=lambda kv: (kv[0] == NO_TAG, -kv[1], kv[0])):
            rows.append(
                {
                    "outcome": outcome,
                    "tag": tag,
                    "items": int(count),
                    "outcome_items": len(ids),
                    "share": count / len(ids),
                }
            )
    return pd.DataFrame(rows, columns=["outcome", "tag", "items", "outcome_items", "share"])


# ------------------------------------------------------------------------------------------ text
def _fmt_ci(row, estimate: str = "estimate") -> str:
    if not np.isfinite(row[estimate]):
        return f"n/a ({row['reason']})"
    if np.isfinite(row["ci_low"]):
        return f"{row[estimate]:.3f} [95% CI {row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    return f"{row[estimate]:.3f}"


def _summary(
    task: str,
    weak: str,
    ref_desc: str,
    n_scored: int,
    metrics: pd.DataFrame,
    rates: pd.DataFrame,
    pairs: pd.DataFrame,
    alpha_table: pd.DataFrame,
    annotators: list[str],
    composition: pd.DataFrame,
) -> str:
    m = metrics.set_index("metric")
    lines = [
        f"Task '{task}': the weak labeler '{weak}' against {ref_desc}, on {n_scored:,} items.",
        f"Agreement {_fmt_ci(m.loc['observed_agreement'])}; Cohen's kappa {_fmt_ci(m.loc['kappa'])}; "
        f"precision {_fmt_ci(m.loc['precision'])}; recall {_fmt_ci(m.loc['recall'])}; "
        f"F1 {_fmt_ci(m.loc['f1'])}; macro-F1 {_fmt_ci(m.loc['macro_f1'])}.",
        f"The weak labels are positive for {rates.loc[0, 'positive_rate']:.1%} of the items, the reference for "
        f"{rates.loc[1, 'positive_rate']:.1%}.",
    ]
    ok_pairs = pairs[pairs["status"] != "unavailable"]
    if ok_pairs.empty:
        lines.append(f"Human-human agreement: unavailable ({pairs['reason'].iat[0]}).")
    else:
        for _, p in ok_pairs.iterrows():
            identical = f" ({p['reason']})" if p["reason"].startswith("the two label sets are identical") else ""
            lines.append(
                f"Human-human ({p['annotator_a']} vs {p['annotator_b']}, {p['n']} items, before "
                f"adjudication): agreement {p['observed_agreement']:.3f}, Cohen's kappa "
                f"{_fmt_ci(p, 'kappa')}{identical}."
            )
    if not alpha_table.empty:
        lines.append(
            f"Krippendorff's alpha over {len(annotators)} annotators: {_fmt_ci(alpha_table.iloc[0], 'alpha')}."
        )
    unresolved = int(composition.loc[composition["source"].str.startswith("annotators disagree"), "items"].sum())
    if unresolved:
        lines.append(
            f"{unresolved} items on which the annotators disagree have no adjudicated label and are left out "
            "of the reference: the weak-labeler scores then favour the easier, agreed items."
        )
    return " ".join(lines)


def _human_section(
    pairs: pd.DataFrame, alpha_table: pd.DataFrame, invalid_human: pd.Series, n_boot: int, alpha: float, unit: str
) -> Section:
    return Section(
        "Human-human agreement (before adjudication)",
        "Cohen's kappa per pair of annotators on the items both labelled with a valid 0/1 label, with an "
        f"{unit} percentile {1 - alpha:.0%} CI ({n_boot} resamples); observed agreement is the share "
        "of those items with the same label. Krippendorff's alpha (nominal, missing labels allowed) when "
        "there are more than two annotators. Invalid human answers: "
        + (", ".join(f"{k}: {v}" for k, v in invalid_human.items()) or "none")
        + ".",
        {"human_agreement": pairs, **({"krippendorff_alpha": alpha_table} if not alpha_table.empty else {})},
    )


def _weak_section(
    metrics: pd.DataFrame, confusion: pd.DataFrame, rates: pd.DataFrame, n_boot: int, alpha: float, unit: str
) -> Section:
    return Section(
        "Weak labeler against the reference",
        f"Positive class = 1. Precision = weak positives that the reference confirms; recall = reference "
        "positives the weak labeler finds; macro-F1 = mean of the F1 of class 1 and class 0; kappa from the "
        f"2 x 2 table. {1 - alpha:.0%} {unit} percentile CIs ({n_boot} resamples). A metric whose "
        "denominator is zero is undefined (reason given). Estimates describe the scored items as they were "
        "drawn; for a sample that over-represents a stratum see the design-weighted table.",
        {"weak_vs_reference": metrics, "confusion_matrix": confusion, "positive_rates": rates},
    )


def _add_figures(
    sections: list[Section], pairs: pd.DataFrame, metrics: pd.DataFrame, weak: str, models: pd.DataFrame
) -> None:
    from mhaudit.audits.agreement import figures

    shown = pairs[pairs["kappa"].notna()]  # every pairs table has a kappa column, NaN where there is none
    sections[1].figures["Cohen's kappa with bootstrap CIs"] = figures.kappa_forest(shown, metrics, weak, models)
    weak_section = sections[2]
    weak_section.figures["Weak labeler against the reference"] = figures.weak_metrics(metrics, weak)
    weak_section.figures["Confusion matrix"] = figures.confusion(weak_section.tables["confusion_matrix"], weak)


def _weighted_section(weighted: pd.DataFrame, strata_table: pd.DataFrame, design_note: str) -> Section:
    return Section(
        "Design-weighted estimates for the sampled pool",
        "Each scored item counts pool_size / (scored items of its stratum), the stratum being the weak label it "
        "was drawn under, so these estimate the metrics on the whole pool the sample came from; CIs resample "
        "items within strata. Sampled items that could not be scored (no reference label, e.g. an unresolved "
        "disagreement, or no valid weak label) are counted per stratum in `design_strata`; the estimates treat "
        "them as missing at random within their stratum. Precision is the same as unweighted when the strata are "
        "the weak labels." + design_note,
        {"weak_vs_reference_weighted": weighted, "design_strata": strata_table},
    )


def _error_section(errors: pd.DataFrame) -> Section:
    return Section(
        "Error sources of the weak labeler",
        "Error-source tags the annotators and the adjudicator gave to each item, counted for the weak labeler's false "
        "positives, false negatives and correct items (an item counts once per tag; share = items with the tag / "
        "items with that outcome)." + ("" if (errors["tag"] != NO_TAG).any() else " No tags were recorded."),
        {"error_sources": errors},
    )


# ---------------------------------------------------------------------------------------- report
@quiet_undefined()  # the tables carry each undefined value's reason
def audit_agreement(
    inputs: AgreementInputs, options: AgreementOptions, *, progress: Progress | None = None
) -> AuditResult:
    """The agreement report of one task: human-human agreement and the weak labeler against the reference.

    `inputs.labels`: the labels table; `inputs.validation_set` adds design-weighted estimates for the sampled pool.
    When the items have authors (an `author` column in `inputs.items` or the validation set, or post-store ids
    at://<author>/...), every bootstrap resamples authors, not items (`stats.bootstrap.resample_clusters`):
    one author's posts are not independent, and an item bootstrap would make the CIs too narrow.
    """
    progress = ensure(progress)
    labels, validation_set = inputs.labels, inputs.validation_set
    rows = task_labels(labels, options.task)
    options = with_full_labeler_names(
        options,
        rows,
        options.task,
        weak_labeler="weak labeler",
        models="model",
        annotators="annotator",
        reference="reference labeler",
    )
    task, reference, n_boot, alpha = options.task, options.reference, options.n_boot, options.alpha
    weak = choose_weak_labeler(labels, task, options.weak_labeler)
    annotators = _annotators(rows, weak, options.annotators, reference)
    authors = item_authors(rows["item_id"], items=inputs.items, validation_set=validation_set)
    # one stream: the steps below draw from it in order (pairs, alpha, weak, pool)
    rng = np.random.default_rng(options.seed)

    with progress.stage("human-human agreement"):
        matrix, invalid_human = _human_matrix(rows, annotators)
        pairs, alpha_table = _human_agreement(matrix, annotators, n_boot, alpha, rng, authors)
    with progress.stage("weak labeler against the reference"):
        scored, ref, weak_rows, composition, ref_desc = scored_items(rows, task, weak, annotators, reference)
        metrics, table = weak_vs_reference(
            scored["reference"].to_numpy(),
            scored["weak"].to_numpy(),
            n_boot=n_boot,
            alpha=alpha,
            rng=rng,
            clusters=cluster_labels(scored.index, authors),
        )
        metrics["reason"] = metrics["reason"].fillna("")
        rates = _positive_rates(scored, matrix, weak, annotators)
    weighted, strata_table, design_note = pd.DataFrame(), pd.DataFrame(), ""
    if validation_set is not None:  # design-weighted estimates for the pool the sample was drawn from
        with progress.stage("design-weighted estimates for the pool"):
            weighted, strata_table, design_note = design_weighted(
                validation_set, scored, ref, weak_rows, weak, n_boot, alpha, rng, authors
            )
    models = pd.DataFrame()
    if options.models:
        with progress.stage("models against the reference"):
            models = models_vs_reference(rows, task, options, weak, annotators, authors)
    errors = _error_sources(_outcomes(scored), _item_tags(rows, annotators, reference))

    summary = _summary(task, weak, ref_desc, len(scored), metrics, rates, pairs, alpha_table, annotators, composition)
    unit = bootstrap_unit(scored.index, authors)
    sections = [
        Section("Reference labels", "", {"reference": composition}),
        _human_section(pairs, alpha_table, invalid_human, n_boot, alpha, unit),
        _weak_section(metrics, _confusion_table(table), rates, n_boot, alpha, unit),
    ]
    _add_figures(sections, pairs, metrics, weak, models)
    if not models.empty:
        sections.append(models_section(models, n_boot, alpha, unit))
    if not weighted.empty:
        sections.append(_weighted_section(weighted, strata_table, design_note))
    sections.append(_error_section(errors))
    used = {
        **asdict(options),
        "weak_labeler": weak,
        "annotators": list(annotators),
        "reference_rule": ref_desc,
        "validation_set": validation_set is not None,
        "bootstrap_unit": unit,
    }
    digests = {
        "labels": digest_frame(labels),
        **dict(inputs.files),
        **({} if validation_set is None else {"validation_set": digest_frame(validation_set)}),
    }
    return AuditResult(
        title=f"Weak-label validation: task {task}, weak labeler {weak}",
        sections=sections,
        summary=summary,
        verdicts=agreement_verdicts(weak, metrics, pairs, models),
        options=used,
        synthetic=inputs.synthetic,
        provenance=provenance(digests, progress.seconds),
    )
