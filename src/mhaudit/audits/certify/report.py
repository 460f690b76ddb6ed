"""`mhaudit audit certify`: human labels on the certification sample + the model's scores on the pool.

The reference label of a sampled item follows the agreement report's rule (adjudicated, else agreed human
labels); sampled items without one drop out and their stratum's pool is spread over its labelled items,
which assumes they are missing at random within the stratum (the note says how many). Estimates: PPI++
(λ tuned), PPI (λ = 1) and labels only (λ = 0, design-weighted), each with a Student-t 95% CI
(Satterthwaite df; stats.ppi).
The verdict certifies when the PPI++ macro-F1 CI is at most ± `tolerance` wide.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit.attribution.stability import place_name
from mhaudit.audits.certify.options import CertifyInputs, CertifyOptions, design_runs
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report.result import AuditResult, Section, provenance, verdict, verdict_table
from mhaudit.stats.ppi import pool_estimates
from mhaudit.stats.sample_size import labels_for_tolerance, macro_f1_pool_sd, srs_half_width, srs_labels_for_tolerance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.corpus.schema import label_codes
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.labeler_names import with_full_labeler_names
from mhaudit.tables.predictions import scores
from mhaudit.tables.reference_labels import reference_labels, task_labels

__all__ = ["AXIS", "ESTIMATORS", "CertifyInputs", "CertifyOptions", "audit_certify"]

AXIS = "certified on the target with human labels"
ESTIMATORS = {
    "power": "prediction-powered (PPI++, tuned λ)",
    "ppi": "prediction-powered (PPI, λ = 1)",
    "labels": "labels only (design-weighted)",
}
COLUMNS = ("estimate", "se", "ci_low", "ci_high", "half_width")  # of each estimate in the `certified` table


def _human_reference(rows: pd.DataFrame, options: CertifyOptions, sample_ids: set[str], pool_ids: set[str]):
    human = (
        rows[rows["kind"].isin(["human", "adjudicated"])]
        if options.reference is None
        else rows[rows["labeler"] == options.reference]
    )
    if human.empty:
        raise InputError(f"no human label for task '{options.task}' in the labels")
    outside = sorted(set(human["item_id"].astype(str)) & (pool_ids - sample_ids))
    if outside:
        raise InputError(
            f"{len(outside)} items have human labels for task '{options.task}' but are not in the "
            f"sample (e.g. '{outside[0]}'); only items the design drew can be used"
        )
    elsewhere = len(set(human["item_id"].astype(str)) - pool_ids)
    annotators = list(options.annotators or sorted(human.loc[human["kind"] == "human", "labeler"].unique()))
    ref, _, description = reference_labels(
        human[human["item_id"].astype(str).isin(sample_ids)], annotators, options.reference
    )
    return ref.rename(index=str), description, elsewhere


def _classes_of_values(classes: list[str], positive: str | None) -> list[int]:
    """Class index of label value 0 and 1 (the label store holds 0/1 only)."""
    if len(classes) != 2:
        raise InputError(
            f"human labels are 0/1, so certification needs a two-class model; these predictions have "
            f"{len(classes)} classes ({', '.join(classes)})"
        )
    if positive is None:
        return [0, 1]
    if positive not in classes:
        raise InputError(f"--positive '{positive}' is not a class of the predictions ({', '.join(classes)})")
    return [1 - classes.index(positive), classes.index(positive)]


def audit_certify(inputs: CertifyInputs, options: CertifyOptions, *, progress: Progress | None = None) -> AuditResult:
    """The target's prevalence, accuracy and macro-F1 of the certified run (`inputs.run`) from the sample's
    human labels and the scores on the pool (`CertifyInputs`: the labels, the sample and its design, the
    predictions)."""
    progress = ensure(progress)
    labels, sample, design, predictions = inputs.labels, inputs.sample, inputs.design, inputs.predictions
    frame, classes, synthetic = predictions.frame, predictions.classes, inputs.synthetic
    design = design.assign(item_id=design["item_id"].astype(str)).reset_index(drop=True)
    sample_ids, pool_ids = set(sample["item_id"].astype(str)), set(design["item_id"])
    rows = task_labels(labels, options.task)
    options = with_full_labeler_names(
        options, rows, options.task, annotators="annotator", reference="reference labeler"
    )
    ref, description, elsewhere = _human_reference(rows, options, sample_ids, pool_ids)
    value_class = _classes_of_values(classes, options.positive)
    pred = _predicted(inputs, design)
    probs = design[[f"posterior_{c}" for c in classes]].to_numpy(dtype=float)
    names = list(dict.fromkeys(design["stratum"]))
    strata = design["stratum"].map({n: i for i, n in enumerate(names)}).to_numpy()
    labelled, y, per_stratum = _labels_on_design(design, ref, value_class, strata, names)
    if not design["item_id"].isin(frame["id"].astype(str)).all():
        raise InputError("the sampling design holds items the predictions do not score")
    membership = labelled[None, :].astype(float)
    n_labels = int(labelled.sum())
    subject, drawn = (f"{model} seed {seed}" for model, seed in (inputs.certified, inputs.drawn))
    with progress.stage(f"certify {subject} on {n_labels} labels"):
        estimates = {
            t: pool_estimates(membership, y, pred, probs, strata, tuning=t, population=options.population)
            for t in ESTIMATORS
        }
    table = _estimates_table(estimates, classes, n_labels)
    strata_table = _strata_table(names, strata, sample, per_stratum)
    needed = _labels_needed(table, y, pred, strata, labelled, len(classes), options)
    target = place_name(str(frame["platform"].iat[0]), str(frame["dataset"].iat[0]))
    verdicts = _verdicts(table, needed, subject, target, n_labels, options)
    note = _reference_note(description, n_labels, len(sample_ids), elsewhere)
    summary = _summary(table, target, n_labels, options, synthetic)
    return AuditResult(
        title=f"Certified on {target} with {n_labels} human labels" + (" (SYNTHETIC data)" if synthetic else ""),
        sections=[
            Section(
                "Estimates from the human labels and the model's scores",
                note + " Posteriors: "
                f"{design['calibration'].iat[0]}. Population: {options.population} (the pool of "
                f"{len(design):,} scored items"
                + (" itself)." if options.population == "pool" else " as a sample of its platform).")
                + " "
                + _design_text(design, subject, drawn)
                + " "
                + _needed_text(needed, options),
                {"certified": table, "strata": strata_table, "labels_needed": needed},
            )
        ],
        summary=summary,
        verdicts=verdicts,
        synthetic=synthetic,
        options={
            **asdict(options),
            "classes": classes,
            "n_labels": n_labels,
            "certified": subject,
            "drawn_for": drawn,
            "runs": design_runs(design),
            "predictor": _predictor(design),
        },
        provenance=provenance(
            {"predictions": digest_frame(frame), "sample": digest_frame(sample), "labels": digest_frame(labels)},
            progress.seconds,
        ),
    )


def _labels_on_design(
    design: pd.DataFrame, ref: pd.Series, value_class: list[int], strata: np.ndarray, names: list
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which pooled items (design order) have a human reference label, their class codes (-1 where unlabelled)
    and the labelled items per stratum; a stratum without one is refused, as no estimate can cover it."""
    labelled = design["item_id"].isin(ref.index).to_numpy()
    y = np.full(len(design), -1)
    y[labelled] = [value_class[int(v)] for v in ref.reindex(design["item_id"][labelled])]
    per_stratum = np.bincount(strata[labelled], minlength=len(names))
    if (per_stratum == 0).any():
        empty = names[int(np.flatnonzero(per_stratum == 0)[0])]
        raise InputError(
            f"stratum '{empty}' has no sampled item with a human label; label at least one (two for "
            "its variance) before estimating"
        )
    return labelled, y, per_stratum


def _estimates_table(estimates: dict, classes: list[str], n_labels: int) -> pd.DataFrame:
    """The `certified` table: one row per estimator and metric (the prevalence once per class), COLUMNS each."""
    rows = []
    for tuning, name in ESTIMATORS.items():
        est = estimates[tuning]
        for metric in ("prevalence", "accuracy", "macro_f1"):  # one value per class for the prevalence
            values = (est.estimate[metric], est.se[metric], *est.interval(metric), est.half_width(metric))
            metric_names = [f"prevalence of {c}" for c in classes] if metric == "prevalence" else [metric]
            rows += [
                dict(
                    estimator=name,
                    metric=m,
                    **{k: float(np.ravel(v)[i]) for k, v in zip(COLUMNS, values)},
                    n_labels=n_labels,
                )
                for i, m in enumerate(metric_names)
            ]
    return pd.DataFrame(rows)


def _strata_table(names: list, strata: np.ndarray, sample: pd.DataFrame, per_stratum: np.ndarray) -> pd.DataFrame:
    """Per stratum: its pooled, sampled and labelled items, and the weight of each labelled one."""
    table = pd.DataFrame(
        {
            "stratum": names,
            "pool_size": np.bincount(strata, minlength=len(names)),
            "sampled": [int((sample["stratum"] == n).sum()) for n in names],
            "labelled": per_stratum,
        }
    )
    table["weight"] = table["pool_size"] / table["labelled"]
    return table


def _reference_note(description: str, n_labels: int, n_sampled: int, elsewhere: int) -> str:
    """Where the human reference came from, how many sampled items have one, and what was left out."""
    dropped = n_sampled - n_labels
    return (
        f"Human reference: {description}. {n_labels} of the {n_sampled} sampled items have a reference "
        f"label"
        + (f"; {dropped} dropped out, assumed missing at random within their stratum" if dropped else "")
        + (f". {elsewhere} human-labelled items outside the pool were ignored" if elsewhere else "")
        + "."
    )


def _predicted(inputs: CertifyInputs, design: pd.DataFrame) -> np.ndarray:
    """The certified run's predicted class code per pooled item (design order): the design's, or for another
    run of the ensemble the sample was drawn with, the argmax of its own scores."""
    if inputs.run == inputs.drawn:
        return label_codes(design["predicted"], inputs.predictions.classes)
    frame = inputs.predictions.frame
    rows = frame[(frame["model"] == inputs.certified[0]) & (frame["seed"] == inputs.certified[1])]
    rows = rows.assign(id=rows["id"].astype(str)).set_index("id").loc[design["item_id"]]
    return scores(rows, inputs.predictions.classes).argmax(axis=1)


def _predictor(design: pd.DataFrame) -> str:
    return str(design["predictor"].iat[0]) if "predictor" in design.columns else "the certified model's posteriors"


def _design_text(design: pd.DataFrame, subject: str, drawn: str) -> str:
    runs = design_runs(design)
    scope = f"Certified run: {subject}" + (f", one of {runs} runs scored on the pool" if runs > 1 else "")
    if subject != drawn:
        scope += (
            f". The sample was drawn for {drawn}: its strata, weights and posteriors were fixed before any "
            f"label was seen, so they hold for {subject} too, but its allocation was tuned to {drawn}, so "
            "the interval can be wider than with a sample drawn for this run"
        )
    whose = "the ensemble's" if runs > 1 else "the model's"
    return (
        f"{scope}. The strata ({drawn}'s predicted class x bins of {whose} probability of that class) and "
        f"PPI++'s predictor use {_predictor(design)}."
    )


def _labels_needed(table: pd.DataFrame, y, pred, strata, labelled, k: int, options: CertifyOptions) -> pd.DataFrame:
    """Per estimator, and for a simple random sample of the pool with its labels alone (its pool SD estimated
    from these labels): the macro-F1 half-width at hand and the labels that reach ± tolerance, with the
    finite-population correction when the population is the pool (stats.sample_size)."""
    fpc, n, pool_size, tol = options.population == "pool", int(labelled.sum()), int(strata.size), options.tolerance
    rows = []
    for tuning in ("power", "labels"):
        hw = float(
            table.loc[(table["estimator"] == ESTIMATORS[tuning]) & (table["metric"] == "macro_f1"), "half_width"].iat[0]
        )
        with quiet_undefined():  # an undefined macro-F1 is the verdict's reason already
            rows.append(
                {
                    "design": "this sample's design",
                    "estimator": ESTIMATORS[tuning],
                    "n_labels": n,
                    "half_width": hw,
                    "labels_needed": labels_for_tolerance(hw, n, pool_size, tol, fpc=fpc),
                    "reason": "" if np.isfinite(hw) else "macro-F1 undefined",
                }
            )
    with quiet_undefined():  # the row says why instead
        sd = macro_f1_pool_sd(y, pred, strata, labelled, k)
        rows.append(
            {
                "design": "simple random sample, labels only",
                "estimator": "labels only (the sample's shares)",
                "n_labels": n,
                "half_width": srs_half_width(sd, n, pool_size, fpc=fpc) if n >= 2 else math.nan,
                "labels_needed": srs_labels_for_tolerance(sd, pool_size, tol, fpc=fpc),
                "reason": ""
                if np.isfinite(sd)
                else "its pool variance needs 2 labels in every stratum and a defined macro-F1",
            }
        )
    table = pd.DataFrame(rows).assign(tolerance=tol, pool_size=pool_size, fpc=fpc)
    return table.astype({"labels_needed": "Int64"})  # a count: 325, not 325.000 (missing where undefined)


def _needed_text(needed: pd.DataFrame, options: CertifyOptions) -> str:
    ours, srs = (float(v) if pd.notna(v) else math.nan for v in needed["labels_needed"].iloc[[0, -1]])
    if not np.isfinite(ours):
        return ""
    text = f"For ± {options.tolerance:.2f} on macro-F1 this design needs about {ours:,.0f} labels (PPI++)"
    if np.isfinite(srs):
        text += (
            f"; a simple random sample of the pool, its labels alone, about {srs:,.0f} (its variance estimated "
            f"from these labels)"
        )
    correction = (
        "with the finite-population correction"
        if options.population == "pool"
        else "without a finite-population correction (the pool stands for its platform)"
    )
    return text + f", both {correction}."


def _row(table: pd.DataFrame, estimator: str, metric: str = "macro_f1") -> pd.Series:
    """The estimates table's row of one estimator (a key of ESTIMATORS) and metric."""
    return table[(table["estimator"] == ESTIMATORS[estimator]) & (table["metric"] == metric)].iloc[0]


def _verdicts(
    table: pd.DataFrame, needed: pd.DataFrame, subject: str, target: str, n_labels: int, options: CertifyOptions
) -> pd.DataFrame:
    head = _row(table, "power")
    hw, tol = head["half_width"], options.tolerance
    if not np.isfinite(hw):
        severity, reason = (
            "undefined",
            (
                f"macro-F1 undefined with {n_labels} human labels: a class has no true and "
                "no predicted post in the estimate"
            ),
        )
    elif hw <= tol:
        severity, reason = "pass", f"certified on the target with {n_labels} human labels: macro-F1 ± {hw:.3f}"
    else:
        severity = "warn"
        reason = (
            f"not certified yet: macro-F1 ± {hw:.3f} with {n_labels} human labels; about "
            f"{needed['labels_needed'].iat[0]:,.0f} labels in all for ± {tol:.2f} (this design, "
            f"{needed['pool_size'].iat[0]:,} pooled items)"
        )
    rows = [
        verdict(
            "certify",
            AXIS,
            subject,
            target,
            "certified_macro_f1",
            head["estimate"],
            f"95% CI at most ± {tol:.2f}",
            severity,
            reason,
            ci_low=head["ci_low"],
            ci_high=head["ci_high"],
        ),
        verdict("certify", AXIS, subject, target, "n_human_labels", n_labels, "", "pass", f"{n_labels} human labels"),
    ]
    return verdict_table(rows)


def _summary(table: pd.DataFrame, target: str, n_labels: int, options: CertifyOptions, synthetic: bool) -> str:
    def line(estimator: str, metric: str = "macro_f1") -> str:
        r = _row(table, estimator, metric)
        return f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"

    status = "Certified" if _row(table, "power")["half_width"] <= options.tolerance else "Not certified yet"
    return (
        ("SYNTHETIC data. " if synthetic else "")
        + f"{status} on {target} with {n_labels} human labels: macro-F1 {line('power')} with the model's scores "
        f"(PPI++), {line('labels')} from the labels alone; accuracy {line('power', 'accuracy')}."
    )
