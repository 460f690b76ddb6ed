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

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.authors import bootstrap_unit, cluster_labels, item_authors
from mhaudit.audits.agreement.combined import (
    CombinedComparison,
    combined_sections,
    combined_recipe,
    combined_summary,
    compare_combined,
    with_weak_scores,
)
from mhaudit.audits.agreement.design import design_weighted
from mhaudit.audits.agreement.error_sources import error_section, error_sources
from mhaudit.audits.agreement.human_agreement import human_agreement, human_matrix
from mhaudit.audits.agreement.labels import choose_weak_labeler
from mhaudit.audits.agreement.options import AgreementInputs, AgreementOptions
from mhaudit.audits.agreement.scoring import models_section, models_vs_reference, scored_items
from mhaudit.audits.agreement.verdicts import agreement_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult, Section
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.stats.weak_metrics import weak_vs_reference
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.labeler_names import with_full_labeler_names
from mhaudit.tables.reference_labels import task_labels

__all__ = ["AgreementInputs", "AgreementOptions", "audit_agreement"]


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


# --------------------------------------------------------------------- weak labeler vs reference
def _weak_scores(
    scored: pd.DataFrame, n_boot: int, alpha: float, rng, authors: pd.Series | None
) -> tuple[pd.DataFrame, np.ndarray]:
    """The weak labeler's metrics against the reference on the scored items (an empty reason where defined),
    with bootstrap CIs that resample authors where known, and its 2 x 2 table."""
    metrics, table = weak_vs_reference(
        scored["reference"].to_numpy(),
        scored["weak"].to_numpy(),
        n_boot=n_boot,
        alpha=alpha,
        rng=rng,
        clusters=cluster_labels(scored.index, authors),
    )
    metrics["reason"] = metrics["reason"].fillna("")
    return metrics, table


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
    options = _with_full_names(options, rows)
    task, reference, n_boot, alpha = options.task, options.reference, options.n_boot, options.alpha
    weak = choose_weak_labeler(labels, task, options.weak_labeler or options.combined)
    annotators = _annotators(rows, weak, options.annotators, reference)
    authors = item_authors(rows["item_id"], items=inputs.items, validation_set=validation_set)
    # one stream: the steps below draw from it in order (pairs, alpha, weak, pool)
    rng = np.random.default_rng(options.seed)

    with progress.stage("human-human agreement"):
        matrix, invalid_human = human_matrix(rows, annotators)
        pairs, alpha_table = human_agreement(matrix, annotators, n_boot, alpha, rng, authors)
    with progress.stage("weak labeler against the reference"):
        scored, ref, weak_rows, composition, ref_desc = scored_items(rows, task, weak, annotators, reference)
        metrics, table = _weak_scores(scored, n_boot, alpha, rng, authors)
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
    comparison = _compare_combined(inputs, rows, options, weak, ref, (scored, metrics, weighted), authors, progress)
    errors = error_sources(scored, rows, annotators, reference)

    summary = _summary(task, weak, ref_desc, len(scored), metrics, rates, pairs, alpha_table, annotators, composition)
    if comparison is not None:
        summary += " " + combined_summary(comparison)
    unit = bootstrap_unit(scored.index, authors)
    sections = [
        Section("Reference labels", "", {"reference": composition}),
        _human_section(pairs, alpha_table, invalid_human, n_boot, alpha, unit),
        _weak_section(metrics, _confusion_table(table), rates, n_boot, alpha, unit),
    ]
    _add_figures(sections, pairs, metrics, weak, models)
    if not models.empty:
        sections.append(models_section(models, n_boot, alpha, unit))
    if comparison is not None:
        sections.extend(combined_sections(comparison, n_boot, alpha, unit))
    if not weighted.empty:
        sections.append(_weighted_section(weighted, strata_table, design_note))
    sections.append(error_section(errors))
    used = {
        **asdict(options),
        "weak_labeler": weak,
        "annotators": list(annotators),
        "reference_rule": ref_desc,
        "validation_set": validation_set is not None,
        "bootstrap_unit": unit,
    }
    return AuditResult(
        title=f"Weak-label validation: task {task}, weak labeler {weak}",
        sections=sections,
        summary=summary,
        verdicts=agreement_verdicts(weak, metrics, pairs, models, _combined_row(comparison)),
        options=used,
        synthetic=inputs.synthetic,
        notes=list(comparison.notes) if comparison is not None else [],
        provenance=provenance(_input_digests(inputs), progress.seconds),
    )


def _with_full_names(options: AgreementOptions, rows: pd.DataFrame) -> AgreementOptions:
    """The options with every labeler they name as the labels table writes it (`tables.labeler_names`); a combined
    labeler checked (its kind and recipe) before any work."""
    options = with_full_labeler_names(
        options,
        rows,
        options.task,
        weak_labeler="weak labeler",
        models="model",
        annotators="annotator",
        reference="reference labeler",
        combined="combined labeler",
    )
    if options.combined:
        combined_recipe(rows, options.combined)
    return options


def _compare_combined(inputs, rows, options, weak, ref, weak_scores, authors, progress) -> CombinedComparison | None:
    """The combined labeler beside its sources (None without `options.combined`); where it is the weak labeler too,
    its row shows the weak-labeler section's numbers (`weak_scores`: scored items, metrics, weighted metrics)."""
    if not options.combined:
        return None
    with progress.stage("combined labeler beside its sources"):
        comparison = compare_combined(
            inputs.labels, rows, options.combined, ref, options, authors, inputs.validation_set
        )
    return with_weak_scores(comparison, *weak_scores) if options.combined == weak else comparison


def _combined_row(comparison: CombinedComparison | None) -> pd.Series | None:
    """The combined labeler's row of the side-by-side table (its last), for its verdict."""
    return None if comparison is None else comparison.table.iloc[-1]


def _input_digests(inputs: AgreementInputs) -> dict:
    """The digests of what the audit read, for its provenance: the labels, the files named, the validation set."""
    return {
        "labels": digest_frame(inputs.labels),
        **dict(inputs.files),
        **({} if inputs.validation_set is None else {"validation_set": digest_frame(inputs.validation_set)}),
    }
