"""The audit itself, `audit_cpfe` (the package's docstring says what it does)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from mhaudit.audits.cpfe.calibration import calibration_row, per_class_calibration_rows, temperature_row
from mhaudit.audits.cpfe.discrimination import discrimination_rows, per_class_rows
from mhaudit.audits.cpfe.equity import equity_rows
from mhaudit.audits.cpfe.extras import label_shift_rows, length_rows, sensitivity_rows
from mhaudit.audits.cpfe.groups import identical_seeds, judged_note, make_groups, reference_of
from mhaudit.audits.cpfe.options import CPFEInputs, CPFEOptions
from mhaudit.audits.cpfe.sections import cpfe_sections, seed_note
from mhaudit.audits.cpfe.significance import MacroAucSpread, model_pair_rows, place_bootstraps, platform_pair_rows
from mhaudit.audits.cpfe.summary import flags, home_notes
from mhaudit.audits.cpfe.summary_words import plain_words
from mhaudit.audits.cpfe.verdicts import cpfe_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.predictions import PredictionSet


@dataclass
class Tables:
    rows: dict[str, list] = field(default_factory=dict)

    def add(self, name: str, new) -> None:
        self.rows.setdefault(name, []).extend(new if isinstance(new, list) else [new])

    def frame(self, name: str) -> pd.DataFrame:
        return pd.DataFrame(self.rows.get(name, []))


@quiet_undefined()  # the tables carry each undefined value's reason
def audit_cpfe(inputs: CPFEInputs, options: CPFEOptions, *, progress: Progress | None = None) -> AuditResult:
    """Run the five axes (and the extras) over `inputs.predictions`. Its `texts` (indexed by id) enable the length
    table; its `attributions` (the attributions table) enable axis 5. Stages are timed and told to `progress`."""
    progress = ensure(progress)
    predictions, texts = inputs.predictions, inputs.texts
    classes = predictions.classes
    groups = make_groups(predictions, options.reference)
    references = reference_of(groups, options.reference)
    method = options.macro_auc_method(g.n for g in groups)  # large groups: the macro-AUC's SE by DeLong
    with progress.stage(f"bootstrap resamples ({len(groups)} groups)"):
        n_boot_auc = options.n_boot_significance if method == "bootstrap" else 0
        boot_auc, boot_ece = place_bootstraps(
            groups, len(classes), n_boot_auc, options.n_boot_ece, options.n_bins, np.random.default_rng(options.seed)
        )
        spread = MacroAucSpread(groups, boot_auc, len(classes), method)
    with progress.stage("axes 1-4 per group"):
        t = _group_tables(groups, references, classes, boot_ece, options)
    with progress.stage("significance, sensitivity, label shift, length, attributions"):
        t.add(
            "significance",
            platform_pair_rows(groups, references, spread, len(classes), options.correction, options.alpha),
        )
        t.add("model_comparison", model_pair_rows(groups, spread, classes))
        t.add("sensitivity", sensitivity_rows(groups, references, classes))
        t.add("label_shift", label_shift_rows(groups, references, classes, options.n_bins))
        words = _length_table(t, predictions, groups, texts, options)
        attribution_notes = _attribution_tables(t, inputs.attributions, groups, references, options)
    tables = {name: _mark(t.frame(name), options.non_independent) for name in t.rows}
    flag_table = _mark(
        flags(
            tables["discrimination"],
            tables["significance"],
            tables["calibration"],
            tables.get("equity", pd.DataFrame()),
            tables["temperature_scaling"],
            tables.get("attribution_stability"),
            options.alpha,
        ),
        options.non_independent,
    )
    summary = plain_words(tables["discrimination"], flag_table, tables["temperature_scaling"], options.reference)
    if predictions.score_kind != "logits":
        summary += (
            f" Scores were given as probabilities: temperature scaling used {predictions.score_kind}, "
            "which softmax maps back to the same probabilities."
        )
    if predictions.notes:
        summary += " Inputs: " + "; ".join(predictions.notes) + "."
    one_run = identical_seeds(groups)
    summary += judged_note(predictions, groups, options.reference) + seed_note(one_run)
    with progress.stage("figures"):
        sections = cpfe_sections(tables, options, words, one_run, method)
    return AuditResult(
        title=f"Cross-platform audit (CPFE) — reference platform {options.reference}",
        summary=summary,
        verdicts=cpfe_verdicts(flag_table),
        synthetic=inputs.synthetic,
        options={
            **asdict(options),
            "macro_auc_se": method,
            "classes": classes,
            "score_kind": predictions.score_kind,
            "input_notes": predictions.notes,
        },
        provenance=provenance(
            {"predictions": digest_frame(predictions.frame), **predictions.fingerprints, **dict(inputs.files)},
            progress.seconds,
        ),
        sections=sections,
        notes=home_notes(tables["discrimination"], tables["calibration"], tables["temperature_scaling"])
        + attribution_notes,
    )


def _group_tables(groups, references, classes: list[str], boot_ece, options: CPFEOptions) -> "Tables":
    """Axes 1-4 of every (model, seed, platform, data set) group against its model's home group."""
    t = Tables()
    for g in groups:
        ref = references[(g.model, g.seed)]
        t.add("discrimination", discrimination_rows(g, ref, classes))
        t.add("per_class_auc", per_class_rows(g, classes))
        t.add("calibration", calibration_row(g, options.n_bins, boot_ece[id(g)]))
        t.add("per_class_calibration", per_class_calibration_rows(g, classes, options.n_bins))
        row, curves = temperature_row(
            g, len(classes), options.n_bins, options.calibration_fraction, options.crossfit_folds, options.seed
        )
        t.add("temperature_scaling", row)
        t.add("reliability", curves)
        if g is not ref:
            per_class, worst = equity_rows(g, ref, classes)
            t.add("equity", per_class)
            t.add("equity_summary", worst)
    return t


def _length_table(
    t: "Tables", predictions: PredictionSet, groups, texts: pd.Series | None, options: CPFEOptions
) -> dict[str, np.ndarray]:
    """The length table when texts are given; the words per example of each platform/data set (for the figure)."""
    if texts is None:
        return {}
    missing = pd.Index(predictions.frame["id"].astype(str).unique()).difference(texts.index.astype(str))
    if len(missing):
        raise InputError(
            f"the corpus has no text for {len(missing)} prediction id(s), e.g. '{missing[0]}'; "
            "give the corpus the predictions were made on"
        )
    counts = texts.str.split().str.len()  # once per text, not once per model x seed group
    words_of = {id(g): counts.reindex(g.ids).to_numpy(dtype=np.int64) for g in groups}
    t.add("length", length_rows(groups, words_of, predictions.classes, options.max_tokens))
    return {f"{g.platform}/{g.dataset}": words_of[id(g)] for g in groups}


def _attribution_tables(
    t: "Tables", attributions: pd.DataFrame | None, groups, references, options: CPFEOptions
) -> list[str]:
    """Axis 5's tables, by (platform, data set); notes on rows without a data set and targets without words."""
    if attributions is None or attributions.empty:
        return []
    from mhaudit.attribution.stability import clinical_retention, jaccard_stability, load_proxy_clinical, place_name

    attributions, notes = _with_datasets(attributions, groups)
    try:
        t.add("attribution_stability", jaccard_stability(attributions, ks=options.top_ks).to_dict("records"))
        t.add("clinical_retention", clinical_retention(attributions, load_proxy_clinical(), k=10).to_dict("records"))
    except ValueError as exc:  # a malformed attributions table is the user's input
        raise InputError(f"attributions table: {exc}") from None
    attributed = set(zip(*(attributions[c] for c in ("model", "seed", "platform", "dataset"))))
    lacking = [
        f"{g.model} seed {g.seed} on {place_name(g.platform, g.dataset)}"
        for g in groups
        if g is not references[g.run]
        and not {
            (g.model, g.seed, g.platform, g.dataset),
            (g.model, g.seed, references[g.run].platform, references[g.run].dataset),
        }
        <= attributed
    ]
    if lacking:
        notes.append(
            f'no attribution verdict ("-" on the scorecard) for {len(lacking)} target run(s) without '
            f"attributions of the model and seed on both the target's data set and the reference's: "
            + "; ".join(lacking[:5])
            + (f"; and {len(lacking) - 5} more" if len(lacking) > 5 else "")
        )
    return notes


def _with_datasets(attributions: pd.DataFrame, groups) -> tuple[pd.DataFrame, list[str]]:
    """The attributions with a data set on every row. A row without one (an older or hand-made table) takes its
    platform's one data set in the predictions, or the platform's name where it has several; a note says so."""
    from mhaudit.attribution.stability import with_datasets

    lacking = int(attributions["dataset"].isna().sum()) if "dataset" in attributions else len(attributions)
    if "platform" not in attributions or not lacking:  # no platform: the stability check names the column
        return attributions, []
    datasets: dict = {}
    for g in groups:
        datasets.setdefault(g.platform, set()).add(g.dataset)
    sole = {platform: next(iter(names)) for platform, names in datasets.items() if len(names) == 1}
    note = (
        f"{lacking:,} attribution row(s) name no data set (no dataset column): each was taken as its platform's, "
        "the one data set of that platform in the predictions, or the platform's name where it has several "
        "(which then matches no target)"
    )
    return with_datasets(attributions, sole), [note]


def _mark(table: pd.DataFrame, non_independent: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    """Mark rows where the model saw the platform's source in training (shown with † in the report)."""
    if table.empty or "model" not in table or "platform" not in table:
        return table
    pairs = set(non_independent)
    table = table.copy()
    datasets = table.get("dataset", table["platform"])
    table["non_independent"] = [
        (m, p) in pairs or (m, d) in pairs for m, p, d in zip(table["model"], table["platform"], datasets)
    ]
    return table
