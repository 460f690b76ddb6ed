"""The divergence report's sections: each one's text and tables, and the figures drawn from them."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from mhaudit.audits.divergence import tables as T
from mhaudit.audits.divergence.design import Design
from mhaudit.audits.divergence.options import DivergenceOptions
from mhaudit.report import Section

Get = Callable[[str], pd.DataFrame]  # a table by name, empty where the audit made none


def divergence_sections(tables: dict, design: Design, o: DivergenceOptions, n_tests: int) -> list[Section]:
    """The report's sections in order: the scores and the divergence, then the checks on it, with their figures
    where `o.figures`."""
    get: Get = lambda name: tables.get(name, pd.DataFrame())  # noqa: E731
    sections = _divergence_sections(get, o) + _check_sections(get, design, n_tests)
    if o.figures:
        drawn = _figures(get)
        for section in sections:
            section.figures |= drawn.get(section.title, {})
    return sections


def _divergence_sections(get: Get, o: DivergenceOptions) -> list[Section]:
    """Channel scores, lexical interference, the Degree of Divergence and whether it survives without a threshold."""
    return [
        Section(
            "Channel scores",
            f"Macro-F1 (threshold tuned for Macro-F1 on out-of-fold training probabilities) with "
            f"95% instance-bootstrap CIs (B = {o.n_boot:,}); PR-AUC, MCC and balanced accuracy beside it because "
            "prevalence differs between data sets; majority_macro_f1 is the always-majority baseline.",
            {"channel_scores": get("channel_scores"), "weights_kept": get("weights_kept")},
        ),
        Section(
            "Lexical interference",
            "Macro-F1(AC) - Macro-F1(C): what adding the lexical channel to style does, per "
            "label source (mean over its data sets) and per data set; paired instance bootstrap.",
            {"interference": get("interference")},
        ),
        Section(
            "Degree of Divergence",
            "DoD_{X-A} = mean over human data sets of [F1(X) - F1(A)] minus the same over "
            "auto data sets; instance bootstrap within each data set; one-sided p in the stated direction; z = "
            "estimate / bootstrap SE (a z-score, not Cohen's d). The regime permutation recomputes DoD for every "
            "assignment of the data sets to the two sides: with few data sets its smallest attainable p "
            "(permutation_min_p) is large, so it is a diagnostic, not a test. Label source is confounded with "
            "domain: read dod_by_dataset.",
            {
                "dod": get("dod"),
                "dod_by_dataset": get("dod_by_dataset"),
                "dod_platform_stratified": get("dod_platform_stratified"),
            },
        ),
        Section(
            "Label source or threshold?",
            "The same DoD on balanced accuracy (prevalence-free), ROC AUC and "
            "PR-AUC gain over prevalence, (AP - prevalence) / (1 - prevalence) (both threshold-free), beside "
            f"Macro-F1, all on the first {min(o.n_boot, T.N_BOOT_SCORES):,} resamples of the same bootstrap. A "
            "Macro-F1 divergence `survives` when both threshold-free DoDs exclude 0 with its sign; one that does "
            "not may come from the training threshold meeting another prevalence or score scale. "
            "threshold_diagnostic: recall and precision at the training threshold against those at each data "
            "set's own best threshold (chosen on the labels it is scored on: a diagnostic, never the headline).",
            {
                "dod_by_metric": get("dod_by_metric"),
                "dod_threshold_free": get("dod_threshold_free"),
                "threshold_diagnostic": get("threshold_diagnostic"),
            },
        ),
    ]


def _check_sections(get: Get, design: Design, n_tests: int) -> list[Section]:
    """The masking suite, the paired comparisons, the robustness checks and the conflict zone."""
    return [
        Section(
            "Masking suite",
            "Text interventions before featurising (every feature from the masked text), on "
            "human-labelled data; paired bootstrap difference against the unmasked run. random_pos_control: "
            "random POS tags should cost a channel more than its own tags (pos_only) if it reads syntax; "
            "'inconclusive' or 'fails' means the masks' drop is no evidence about syntax.",
            {"masking": get("masking"), "random_pos_control": get("random_pos_control")},
        ),
        Section(
            "Paired comparisons",
            "McNemar (continuity-corrected) on discordant predictions and the paired-bootstrap "
            f"Macro-F1 difference. q: Benjamini-Hochberg across the whole family of {n_tests} tests (interference, "
            "DoD, platform-stratified DoD, masking, McNemar).",
            {"mcnemar": get("mcnemar")},
        ),
        Section(
            "Robustness",
            f"Leave-one-domain-out on {design.train_dataset}'s domains (fit on the other domains' "
            "training rows, score the held-out domain's test rows); K-means (K = 3) phenotypes on channel C with "
            "bootstrap ARI and AMI against data set; Spearman correlation of instance scores between channels; "
            "share of |linear SHAP| carried by the top-10 features.",
            {
                "lodo": get("lodo"),
                "phenotypes": get("phenotypes"),
                "phenotype_sizes": get("phenotype_sizes"),
                "orthogonality": get("orthogonality"),
                "concentration": get("concentration"),
            },
        ),
        Section(
            "Conflict zone",
            "Where channel A and the structural verdict disagree, by who was wrong (counts over "
            "every scored instance; the sample is exported as conflicts.csv/.xlsx).",
            {"conflict_counts": get("conflict_counts")},
        ),
    ]


def _figures(get: Get) -> dict[str, dict[str, bytes]]:
    """Each section's figures by the section's title, each drawn from a table of its section."""
    from mhaudit.audits.divergence import figures

    drawn = {"Channel scores": {"Macro-F1 by channel and data set": figures.channel_heatmap(get("channel_scores"))}}
    if not get("dod").empty:
        drawn["Degree of Divergence"] = {
            "Degree of Divergence with 95% CIs, overall and per platform": figures.dod_forest(
                get("dod"), get("dod_platform_stratified")
            )
        }
    if not get("masking").empty and (get("masking")["mask"] != "none").any():
        drawn["Masking suite"] = {"Masking effects against the unmasked run": figures.masking_effects(get("masking"))}
    return drawn
