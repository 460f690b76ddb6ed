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
from mhaudit.audits.cpfe.significance import MacroAucSpread, model_pair_rows, place_bootstraps, platform_pair_rows
from mhaudit.audits.cpfe.summary import CORRECTIONS, flags, home_notes, mean_sd, plain_words
from mhaudit.audits.cpfe.verdicts import cpfe_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult, Section
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.predictions import PredictionSet


SEED_KEYS = ["model", "platform", "dataset"]
PAIR = "pair of places"  # the attribution heatmap's rows, each "platform (data set) vs platform (data set)"


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
    summary += judged_note(predictions, groups, options.reference) + _seed_note(one_run)
    with progress.stage("figures"):
        sections = _sections(tables, summary, options, words, one_run, method)
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


def _seed_summary(tables: dict[str, pd.DataFrame], one_run: dict[str, list[int]]) -> pd.DataFrame:
    """Mean and SD over seeds; a model whose seeds gave identical predictions counts as one run (its first seed)."""
    tables = {name: _first_seed_only(t, one_run) for name, t in tables.items()}
    parts = [
        mean_sd(
            tables["discrimination"],
            SEED_KEYS,
            ["accuracy", "macro_f1", "weighted_f1", "macro_auc", "delta_macro_auc", "delta_auc_pct"],
        ),
        mean_sd(tables["calibration"], SEED_KEYS, ["ece", "ece_debiased", "mce", "brier", "nll"]),
        mean_sd(
            tables["temperature_scaling"], SEED_KEYS, ["temperature", "ece_after", "ece_reduction_pct", "delta_auc"]
        ),
    ]
    if "equity" in tables and not tables["equity"].empty:
        parts.append(
            mean_sd(
                tables["equity"],
                [*SEED_KEYS, "class"],
                ["disparate_impact", "disparate_impact_prior_adjusted", "equal_opportunity_gap", "equalized_odds_gap"],
            )
        )
    if "attribution_stability" in tables and not tables["attribution_stability"].empty:
        parts.append(
            mean_sd(
                tables["attribution_stability"].rename(columns={"platform_b": "platform", "dataset_b": "dataset"}),
                ["model", "class", "platform_a", "dataset_a", "platform", "dataset", "k"],
                ["jaccard"],
            )
        )
    return pd.concat([p for p in parts if not p.empty], ignore_index=True)


def _first_seed_only(table: pd.DataFrame, one_run: dict[str, list[int]]) -> pd.DataFrame:
    if table.empty or "seed" not in table or "model" not in table:
        return table
    return table[[m not in one_run or s == one_run[m][0] for m, s in zip(table["model"], table["seed"])]]


def _seed_note(one_run: dict[str, list[int]]) -> str:
    if not one_run:
        return ""
    runs = "; ".join(f"{m} (seeds {', '.join(map(str, s))})" for m, s in one_run.items())
    return (
        f" Identical predictions for every seed, so counted as one run (a deterministic model such as a TF-IDF "
        f"baseline): {runs}."
    )


def _figures(tables: dict[str, pd.DataFrame], words: dict[str, np.ndarray], runs: pd.Series) -> dict[str, dict]:
    """The figures of each section, by section key; a figure of one seed says which, in the scorecard's terms."""
    from mhaudit.attribution.stability import place_name
    from mhaudit.audits.cpfe import figures  # SVG: no plotting library to import

    per_class, curves = tables["per_class_auc"], tables.get("reliability", pd.DataFrame())
    figs = {
        "discrimination": {
            "Macro AUC by model and data set": figures.auc_degradation(tables["discrimination"]),
            "Per-class AUC with DeLong CIs" + _one_seed(f"seed {per_class['seed'].min()}", runs): figures.forest(
                per_class
            ),
        }
    }
    if not curves.empty:
        first = curves.groupby("model")["seed"].min()
        seed = (
            f"seed {first.iat[0]} of each model"
            if first.nunique() == 1
            else "each model's first seed: " + ", ".join(f"{m} {s}" for m, s in first.items())
        )
        figs["calibration"] = {
            "Reliability before and after temperature scaling" + _one_seed(seed, runs): figures.reliability(curves)
        }
    if not tables.get("equity", pd.DataFrame()).empty:
        figs["equity"] = {
            "Disparate impact (target vs reference)": figures.heatmap(
                tables["equity"], "disparate_impact", "disparate impact (1 = parity)"
            ),
            "Equal-opportunity gap": figures.heatmap(tables["equity"], "equal_opportunity_gap", "|TPR gap|"),
        }
    if not tables.get("attribution_stability", pd.DataFrame()).empty:
        stab = tables["attribution_stability"]
        stab = stab[stab["k"] == 10]
        stab = stab.assign(
            **{
                PAIR: [
                    f"{place_name(pa, da)} vs {place_name(pb, db)}"
                    for pa, da, pb, db in zip(
                        stab["platform_a"], stab["dataset_a"], stab["platform_b"], stab["dataset_b"]
                    )
                ]
            }
        )
        figs["attribution"] = {
            "Top-10 attribution Jaccard": figures.heatmap(stab, "jaccard", "Jaccard, K = 10", index=PAIR)
        }
    if words:
        figs["length"] = {"Text length by platform": figures.lengths(words)}
    return figs


def _se_note(method: str, options: CPFEOptions) -> str:
    """How the macro-AUC's SEs were computed, in the significance section's words."""
    if method == "bootstrap":
        return f"bootstrap SE (B = {options.n_boot_significance}, label-stratified)"
    return (
        f"DeLong SE (every platform has at least {options.delong_min_rows:,} rows, so the SE comes from the "
        "placement values, label-stratified, instead of resamples; n_boot is 0; the model pairs' test too)"
    )


def _one_seed(seed: str, runs: pd.Series) -> str:
    """' (seed 42 only; the scorecard averages 5 seeds)' where a model has several runs, else ''."""
    if not (runs > 1).any():
        return ""
    return f" ({seed} only; the scorecard averages " + (
        f"{runs.max()} seeds)" if runs.nunique() == 1 else "each model's seeds)"
    )


def _sections(
    tables: dict[str, pd.DataFrame],
    summary: str,
    options: CPFEOptions,
    words: dict[str, np.ndarray],
    one_run: dict[str, list[int]],
    method: str,
) -> list[Section]:
    get = tables.get
    runs = _first_seed_only(tables["discrimination"], one_run).groupby("model")["seed"].nunique()
    figs = _figures(tables, words, runs) if options.figures else {}
    schemes, lengths = get("sensitivity", pd.DataFrame()), get("length", pd.DataFrame())
    sections = (
        [  # with one run per model there is no SD over seeds to show
            Section(
                "Mean and SD over seeds",
                "Sample SD (ddof = 1) over seeds; n/a with one seed." + _seed_note(one_run),
                {"mean and SD over seeds": _seed_summary(tables, one_run)},
            )
        ]
        if (runs > 1).any()
        else []
    )
    sections += [
        Section(
            "Axis 1: discrimination",
            "Macro one-vs-rest AUC on softmax probabilities; delta_macro_auc is its "
            "change against the reference platform (the verdicts' macro_auc_drop is its opposite), delta_auc_pct "
            "the same change in percent of the reference's. Per-class AUCs carry 95% DeLong CIs (fast algorithm).",
            {"discrimination": tables["discrimination"], "per_class_auc": tables["per_class_auc"]},
            figs.get("discrimination", {}),
        ),
        Section(
            "Axis 2: calibration",
            f"Top-label ECE with {options.n_bins} equal-width bins: `ece` is the "
            "plug-in value papers report, which is biased upward (a calibrated model's is above 0); "
            "`ece_debiased` subtracts the bias a label-stratified bootstrap estimates "
            f"(B = {options.n_boot_ece}), and its CI is that bootstrap's interval shifted by the same "
            "bias. Temperature fitted by NLL on the "
            "calibration split, evaluated on the rest; cross-fitted variant evaluates every row with a "
            "temperature fitted without it. One-vs-rest AUC can change with temperature: delta_auc is measured.",
            {
                "calibration": tables["calibration"],
                "per_class_calibration": tables["per_class_calibration"],
                "temperature_scaling": tables["temperature_scaling"],
                "reliability": tables["reliability"],
            },
            figs.get("calibration", {}),
        ),
        Section(
            "Axis 3: significance",
            "Macro-AUC difference for every pair of data sets within a model and "
            "seed, " + _se_note(method, options) + ", two-sided Z test, "
            f"{CORRECTIONS[options.correction]} correction within a family: the reference-vs-target pairs (what "
            "the verdicts judge), and apart from them the pairs of targets. ci_low/ci_high: the unadjusted 95% "
            "CI; the verdicts give the drop's CI at alpha_adjusted, which excludes 0 exactly when the corrected "
            "test rejects. Paired tests between models on one platform "
            "(paired_by: id, or position for files without ids whose labels, and texts when given, line up).",
            {"significance": tables["significance"], "model_comparison": get("model_comparison", pd.DataFrame())},
        ),
        Section(
            "Axis 4: prediction equity (platform as the group)",
            "Symmetric disparate impact per class; "
            "equal_opportunity_gap = |TPR_ref - TPR_target| (the paper's 'equalized odds difference'); "
            "equalized_odds_gap = max(|ΔTPR|, |ΔFPR|). Undefined values are n/a with the reason.",
            {"equity_summary": get("equity_summary", pd.DataFrame()), "equity": get("equity", pd.DataFrame())},
            figs.get("equity", {}),
        ),
        Section(
            "Axis 5: attribution stability",
            "Jaccard of top-K attributed words per class between every two "
            "places (platform and data set) of a model and seed; the verdicts judge the reference against each "
            'target, and a target without attributions has none ("-" on the scorecard).'
            if "attribution_stability" in tables
            else "No attribution table was given: axis 5 not computed.",
            {
                "attribution_stability": get("attribution_stability", pd.DataFrame()),
                "clinical_retention": get("clinical_retention", pd.DataFrame()),
            },
            figs.get("attribution", {}),
        ),
        # an extra without rows (no corpus for the lengths, other classes than the CPFE four for the schemes)
        # has no text either, so the page leaves it out; report.json keeps its empty table
        Section(
            "Label-mapping sensitivity",
            "Schemes A-E recomputed from the same predictions by summing class "
            "probabilities (CPFE released code); D equals B by construction."
            if len(schemes)
            else "",
            {"sensitivity": schemes},
        ),
        Section(
            "Text length",
            f"Words per example; share beyond {options.max_tokens} whitespace words; macro-AUC by length quartile."
            if len(lengths)
            else "",
            {"length": lengths},
            figs.get("length", {}),
        ),
        Section(
            "Label shift",
            "Class prevalence on each target: true, EM-estimated (Saerens et al. 2002) and "
            "BBSE-estimated (Lipton et al. 2018); metrics after EM prior correction.",
            {"label_shift": get("label_shift", pd.DataFrame())},
        ),
    ]
    return sections
