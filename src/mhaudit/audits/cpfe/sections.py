"""The CPFE report's sections: the mean and SD over seeds, each axis's and extra's text and tables, and their
figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.audits.cpfe.options import CPFEOptions
from mhaudit.audits.cpfe.summary import CORRECTIONS, mean_sd
from mhaudit.report import Section

SEED_KEYS = ["model", "platform", "dataset"]
PAIR = "pair of places"  # the attribution heatmap's rows, each "platform (data set) vs platform (data set)"


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


def seed_note(one_run: dict[str, list[int]]) -> str:
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


def cpfe_sections(
    tables: dict[str, pd.DataFrame],
    options: CPFEOptions,
    words: dict[str, np.ndarray],
    one_run: dict[str, list[int]],
    method: str,
) -> list[Section]:
    """The report's sections: the mean and SD over seeds where a model has several runs, the five axes, then the
    extras."""
    runs = _first_seed_only(tables["discrimination"], one_run).groupby("model")["seed"].nunique()
    figs = _figures(tables, words, runs) if options.figures else {}
    sections = (
        [  # with one run per model there is no SD over seeds to show
            Section(
                "Mean and SD over seeds",
                "Sample SD (ddof = 1) over seeds; n/a with one seed." + seed_note(one_run),
                {"mean and SD over seeds": _seed_summary(tables, one_run)},
            )
        ]
        if (runs > 1).any()
        else []
    )
    return sections + _axis_sections(tables, options, figs, method) + _extra_sections(tables, options, figs)


def _axis_sections(
    tables: dict[str, pd.DataFrame], options: CPFEOptions, figs: dict[str, dict], method: str
) -> list[Section]:
    """Axes 1 to 5, each with its tables and figures."""
    get = tables.get
    return [
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
    ]


def _extra_sections(tables: dict[str, pd.DataFrame], options: CPFEOptions, figs: dict[str, dict]) -> list[Section]:
    """Label-mapping sensitivity, text length and label shift."""
    schemes, lengths = tables.get("sensitivity", pd.DataFrame()), tables.get("length", pd.DataFrame())
    return [
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
            {"label_shift": tables.get("label_shift", pd.DataFrame())},
        ),
    ]
