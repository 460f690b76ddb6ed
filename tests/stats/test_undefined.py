"""One convention for undefined statistics (docs/statistics.md), checked on every public function of stats/.

Each function gets the all-negative case: labels all 0 and predictions all 0. Whatever it cannot compute
must come back NaN, never a substituted 0, 0.5 or 1, and say why: an UndefinedStatisticWarning from a
function that returns numbers, a `reason` (or `note`) in a record. What is defined (accuracy 1, ECE)
must come back as a number without a warning. A new public function without a case here fails
`test_every_public_function_has_a_case`.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import warnings

import numpy as np
import pandas as pd
import pytest

import mhaudit.stats
from mhaudit.stats import (
    agreement,
    agreement_line,
    atc,
    auc,
    binary,
    bootstrap,
    calibration,
    cbpe,
    cluster_agreement,
    delong,
    domain_shift,
    drift,
    f1,
    fairness,
    label_model,
    label_model_triplet,
    label_shift,
    label_votes,
    macro_delong,
    pair_estimate,
    ppi,
    proportion,
    sample_size,
    significance,
    threshold_free,
    weak_metrics,
)
from mhaudit.stats.undefined import UndefinedStatisticWarning, check_zero_division, divide

N = 6
Y = np.zeros(N, dtype=int)  # all negative
PRED = np.zeros(N, dtype=int)  # none predicted positive
CONF = np.linspace(0.6, 0.9, N)
PROBS = np.c_[CONF, 1 - CONF]  # every row predicts class 0, with varied confidence
SCORE = PROBS[:, 1]
COUNTS = np.ones((3, N), dtype=int)


def reason_of(result) -> str:
    """The reason a record or table gives ('' when none)."""
    if isinstance(result, dict):
        return str(result.get("reason") or result.get("note") or "")
    if isinstance(result, pd.DataFrame):
        return "; ".join(result["reason"].dropna().astype(str))
    if isinstance(result, list):
        return "; ".join(reason_of(r) for r in result)
    return str(getattr(result, "note", "") or "")


# name -> (call, the outputs that must be NaN: keys of a record, or "value" for a bare number or array).
# Numbers and arrays (and dicts of arrays: WARNS) warn; records say why in `reason`.
UNDEFINED = {
    # macro-F1 of a pool whose labelled sample and predictions are all class 0: class 1's F1 is 0 / 0
    "ppi.pool_estimates": (
        lambda: ppi.pool_estimates(np.ones((1, N)), Y, PRED, PROBS, np.zeros(N, dtype=int)).estimate["macro_f1"],
        ["value"],
    ),
    # the same pool: class 1's F1 is 0 / 0, so macro-F1 has no linearised value to take the SD of
    "sample_size.macro_f1_pool_sd": (
        lambda: sample_size.macro_f1_pool_sd(Y, PRED, np.arange(N) % 2, np.ones(N, bool), 2),
        ["value"],
    ),
    "binary.binary_scores": (
        lambda: binary.binary_scores(Y, PRED, SCORE),
        ["macro_f1", "f1_pos", "precision", "recall", "balanced_accuracy", "mcc", "pr_auc", "roc_auc"],
    ),
    "binary.majority_macro_f1": (lambda: binary.majority_macro_f1(Y), ["value"]),
    "binary.macro_f1_from_counts": (lambda: binary.macro_f1_from_counts(0, 0, 0, N), ["value"]),
    "binary.bootstrap_macro_f1": (lambda: binary.bootstrap_macro_f1(Y, PRED, 20, rng=0), ["value"]),
    "binary.paired_difference": (
        lambda: binary.paired_difference(Y, PRED, PRED, 20, rng=0),
        ["delta", "mf1_x", "mf1_ref", "ci_low", "ci_high", "p_greater"],
    ),
    "auc.delong": (lambda: auc.delong(Y, SCORE), ["value"]),
    "delong.delong": (lambda: delong.delong(Y, SCORE), ["value"]),
    "auc.paired_delong_unchecked": (
        lambda: auc.paired_delong_unchecked(Y == 1, SCORE, SCORE / 2),
        ["auc_a", "auc_b", "diff", "p"],
    ),
    "auc.per_class_auc_unchecked": (lambda: auc.per_class_auc_unchecked(Y, PROBS, 2)[1], ["auc"]),
    # the kernels (QUIET): NaN without a warning
    "auc.macro_auc_unchecked": (lambda: auc.macro_auc_unchecked(Y, PROBS, 2), ["value"]),
    "bootstrap.macro_auc_of_counts": (lambda: bootstrap.macro_auc_of_counts(Y, PROBS, 2)(COUNTS), ["value"]),
    "f1.macro_f1_unchecked": (lambda: f1.macro_f1_unchecked(f1.tallies(Y, PRED, 2)), ["value"]),
    "f1.class_scores_unchecked": (
        lambda: {k: v[1] for k, v in f1.class_scores_unchecked(f1.tallies(Y, PRED, 2)).items()},
        ["precision", "recall", "f1"],
    ),
    "auc.auc_ci": (lambda: auc.auc_ci(Y, SCORE), ["auc", "se", "ci_low", "ci_high"]),
    "auc.paired_delong": (lambda: auc.paired_delong(Y, SCORE, SCORE / 2), ["auc_a", "auc_b", "diff", "p"]),
    "auc.per_class_auc": (lambda: auc.per_class_auc(Y, PROBS, 2)[1], ["auc"]),
    "auc.macro_auc": (lambda: auc.macro_auc(Y, PROBS, 2), ["value"]),
    "macro_delong.macro_auc_delong": (
        lambda: macro_delong.macro_auc_delong(Y, PROBS, 2),
        ["macro_auc", "se", "ci_low", "ci_high"],
    ),
    "macro_delong.paired_macro_auc_delong": (
        lambda: macro_delong.paired_macro_auc_delong(Y, PROBS, PROBS, 2),
        ["auc_a", "auc_b", "diff", "se"],
    ),
    # the share of positives among predicted positives: none predicted, no trials
    "proportion.wilson_interval": (
        lambda: dict(
            zip(["ci_low", "ci_high"], proportion.wilson_interval(int(Y[PRED == 1].sum()), int((PRED == 1).sum())))
        ),
        ["ci_low", "ci_high"],
    ),
    "bootstrap.weighted_auc": (lambda: bootstrap.weighted_auc(Y, SCORE, COUNTS), ["value"]),
    "bootstrap.bootstrap_macro_auc": (lambda: bootstrap.bootstrap_macro_auc(Y, PROBS, 2, COUNTS), ["value"]),
    "agreement.kappa_from_confusion": (lambda: agreement.kappa_from_confusion([[N, 0], [0, 0]]), ["value"]),
    "agreement.cohen_kappa": (lambda: agreement.cohen_kappa(Y, PRED), ["value"]),
    "agreement.bootstrap_kappa": (
        lambda: agreement.bootstrap_kappa(Y, PRED, n_boot=20, rng=0),
        ["estimate", "ci_low", "ci_high"],
    ),
    "agreement.krippendorff_alpha": (lambda: agreement.krippendorff_alpha([Y, PRED]), ["estimate"]),
    "weak_metrics.binary_metrics": (
        lambda: weak_metrics.binary_metrics(0, 0, 0, N),
        ["kappa", "precision", "recall", "f1", "macro_f1"],
    ),
    "weak_metrics.weak_vs_reference": (
        lambda: (
            weak_metrics.weak_vs_reference(Y, PRED, n_boot=20, rng=0)[0].set_index("metric")["estimate"].to_dict()
            | {"reason": "rows"}
        ),
        ["kappa", "precision", "recall", "f1", "macro_f1"],
    ),
    "fairness.di_interval": (lambda: fairness.di_interval(0, N, 0, N), ["value"]),
    "fairness.equity_by_class": (
        lambda: fairness.equity_by_class(Y, PRED, Y, PRED, 2)[1],
        ["disparate_impact", "tpr_ref", "equal_opportunity_gap"],
    ),
    "fairness.summarise_classes": (
        lambda: fairness.summarise_classes(fairness.equity_by_class(Y, PRED, Y, PRED, 2)),
        ["max_equalized_odds_gap"],
    ),
    "label_shift.bbse_priors": (lambda: label_shift.bbse_priors(Y, PRED, PRED, 2), []),  # not identified: noted
    "threshold_free.weighted_average_precision": (
        lambda: threshold_free.weighted_average_precision(Y, SCORE, COUNTS),
        ["value"],
    ),
    "threshold_free.pr_auc_gain": (lambda: threshold_free.pr_auc_gain(0.5, Y.mean()), ["value"]),
    # class 1 neither occurs nor is predicted: its precision, recall and F1 are 0 / 0, and so macro-F1
    "f1.class_scores": (
        lambda: {k: v[1] for k, v in f1.class_scores(f1.tallies(Y, PRED, 2)).items()},
        ["precision", "recall", "f1"],
    ),
    "f1.macro_f1": (lambda: f1.macro_f1(f1.tallies(Y, PRED, 2)), ["value"]),
    "f1.macro_f1 (a confusion matrix)": (lambda: f1.macro_f1(f1.confusion_tallies([[N, 0], [0, 0]])), ["value"]),
    "f1.macro_f1 (binary tallies)": (lambda: f1.macro_f1(f1.binary_tallies(0, 0, 0, N)), ["value"]),
    "pair_estimate.reference_metrics": (
        lambda: pair_estimate.reference_metrics(Y, np.log(PROBS)),
        ["macro_f1", "macro_auc"],
    ),
    "cbpe.expected_macro_auc": (lambda: cbpe.expected_macro_auc(np.eye(2)[Y], PROBS), ["value"]),
    "cbpe.expected_metrics": (lambda: cbpe.expected_metrics(np.eye(2)[Y], PROBS), ["macro_f1", "macro_auc"]),
    "cbpe.draw_metrics": (
        lambda: {k: v[0] for k, v in cbpe.draw_metrics(np.eye(2)[Y][None], PROBS, np.random.default_rng(0)).items()},
        ["macro_f1", "macro_auc"],
    ),
    "atc.thresholded_estimates": (
        lambda: {
            k: v[0]
            for k, v in atc.thresholded_estimates("atc", CONF, Y, PRED, COUNTS[:1], CONF, PRED, COUNTS[:1], 2).items()
            if k != "priors"
        },
        ["macro_f1"],
    ),
    # three runs that all predict class 0 agree on every row alike: no line, so no accuracy (a note says why)
    "agreement_line.agreement_line": (
        lambda: (lambda line: {"slope": line.slope, "note": line.note, "aline_d": line.estimates["aline-d"][0]})(
            agreement_line.agreement_line(np.tile(PRED, (3, 1)), Y, np.tile(PRED, (3, 1)), n_boot=20)
        ),
        ["slope", "aline_d"],
    ),
    "threshold_free.bootstrap_panel": (
        lambda: threshold_free.bootstrap_panel(Y, PRED[None], SCORE[None], 20, rng=0)["auc"],
        ["value"],
    ),
}


# Label models: a source that never votes (its accuracy and conflict NaN, with a note); all abstain.
SILENT = np.array([[0, 0, 1, -1], [1, 1, 1, -1], [0, 1, 0, -1], [1, 1, 0, -1], [0, 0, 0, -1], [1, 0, 1, -1]])
ALL_ABSTAIN = np.full((N, 2), -1)


def fit_record(fit, source: int = -1) -> dict:
    """A label model's fit as a record: one source's accuracy and conflict, and the fit's notes."""
    return {"accuracy": fit.accuracy[source], "conflict": fit.conflict[source], "reason": "; ".join(fit.notes)}


LABEL_MODELS = {
    "label_model.majority_vote": (lambda: fit_record(label_model.majority_vote(SILENT, 2)), ["accuracy", "conflict"]),
    "label_model.majority_vote (all abstain)": (
        lambda: (
            fit_record(label_model.majority_vote(ALL_ABSTAIN, 2))
            | {"p": label_model.majority_vote(ALL_ABSTAIN, 2).probabilities[0, 0]}
        ),
        ["accuracy", "conflict", "p"],
    ),
    "label_model.majority_vote (one source)": (
        lambda: fit_record(label_model.majority_vote(SILENT[:, :1], 2), 0),
        ["accuracy"],
    ),
    "label_model.dawid_skene (one source)": (
        lambda: fit_record(label_model.dawid_skene(SILENT[:, :1], 2), 0),
        ["accuracy"],
    ),
    "label_model.dawid_skene": (lambda: fit_record(label_model.dawid_skene(SILENT, 2)), ["accuracy", "conflict"]),
    "label_model.dawid_skene (all abstain)": (
        lambda: fit_record(label_model.dawid_skene(ALL_ABSTAIN, 2)),
        ["accuracy", "conflict"],
    ),
    "label_model.combine_votes": (
        lambda: fit_record(label_model.combine_votes(SILENT, 2, "label-model")),
        ["accuracy", "conflict"],
    ),
    "label_model.triplet_label_model": (
        lambda: fit_record(label_model.triplet_label_model(SILENT, 2)),
        ["accuracy", "conflict"],
    ),
    "label_model_triplet.triplet_label_model": (
        lambda: fit_record(label_model_triplet.triplet_label_model(SILENT, 2)),
        ["accuracy", "conflict"],
    ),
    # kernels: the silent source's conflict, and a source in no triplet, NaN without a warning
    "label_votes.source_coverage_conflict": (
        lambda: label_votes.source_coverage_conflict(label_votes.vote_patterns(SILENT, 2), len(SILENT))[1][-1],
        ["value"],
    ),
    "label_model_triplet.triplet_accuracies": (
        lambda: label_model_triplet.triplet_accuracies(np.full((3, 3), np.nan)),
        ["value"],
    ),
}
UNDEFINED.update(LABEL_MODELS)

# Defined on the all-negative case: a number, and no warning.
DEFINED = {
    # no votes at all: every item adds log 1 = 0
    "label_model.log_likelihood": lambda: label_model.log_likelihood(ALL_ABSTAIN, [0.5, 0.5], np.full((2, 2, 2), 0.5)),
    "agreement.observed_agreement": lambda: agreement.observed_agreement(Y, PRED),
    "calibration.ece": lambda: calibration.ece(PROBS, Y),
    "calibration.mce": lambda: calibration.mce(PROBS, Y),
    "calibration.classwise_ece": lambda: calibration.classwise_ece(PROBS, Y),
    "calibration.brier": lambda: calibration.brier(PROBS, Y),
    "calibration.nll": lambda: calibration.nll(PROBS, Y),
    "calibration.bootstrap_ece": lambda: calibration.bootstrap_ece(PROBS, Y, COUNTS),
    "calibration.bootstrap_classwise_ece": lambda: calibration.bootstrap_classwise_ece(PROBS, Y, COUNTS),
    "calibration.reliability": lambda: calibration.reliability(PROBS, Y)["accuracy"][-3:],
    "calibration.ece_unchecked": lambda: calibration.ece_unchecked(PROBS, Y, 10),
    "calibration.mce_unchecked": lambda: calibration.mce_unchecked(PROBS, Y, 10),
    "calibration.classwise_ece_unchecked": lambda: calibration.classwise_ece_unchecked(PROBS, Y, 10),
    "calibration.reliability_unchecked": lambda: calibration.reliability_unchecked(PROBS, Y, 10)["accuracy"][-3:],
    "calibration.ece_of_counts": lambda: calibration.ece_of_counts(PROBS, Y, 10)(COUNTS),
    "f1.weighted_f1_unchecked": lambda: f1.weighted_f1_unchecked(f1.tallies(Y, PRED, 2)),
    "fairness.prior_adjusted_rates": lambda: fairness.prior_adjusted_rates(Y, PRED, [1.0, 0.0], 2),
    "label_shift.prior_corrected_probs": lambda: label_shift.prior_corrected_probs(PROBS, [0.5, 0.5], [0.9, 0.1]),
    "label_shift.em_priors": lambda: label_shift.em_priors(PROBS, [0.5, 0.5]).priors,
    "cbpe.expected_confusion": lambda: cbpe.expected_confusion(np.eye(2)[Y], PRED),
    # class 1 has no support, so its undefined F1 weighs 0: class 0's F1, 1
    "f1.weighted_f1": lambda: f1.weighted_f1(f1.tallies(Y, PRED, 2)),
    # the reference and target rows are alike: the domain classifier cannot tell them apart, AUC 0.5
    "domain_shift.domain_auc": lambda: domain_shift.domain_auc(PROBS, np.ones(N), PROBS, n_folds=2),
    "atc.atc_share": lambda: atc.atc_share(CONF, np.ones(N), COUNTS, CONF, COUNTS),
    "atc.doc_share": lambda: atc.doc_share(CONF, np.ones(N), COUNTS, CONF, COUNTS),
    "label_shift.em_priors_resampled": lambda: label_shift.em_priors_resampled(PROBS, [0.5, 0.5], COUNTS),
    "label_shift.bbse_priors_resampled": lambda: label_shift.bbse_priors_resampled(Y, PRED, PRED, 2, COUNTS, COUNTS),
    "significance.mcnemar": lambda: significance.mcnemar(Y, PRED, PRED)["p"],  # no discordant pair: p 1
    "drift.psi": lambda: drift.psi([0.5, 0.5], [0.5, 0.5]),
    "drift.js_distance": lambda: drift.js_distance([0.5, 0.5], [0.5, 0.5]),
    "drift.ks": lambda: drift.ks(SCORE, SCORE)[0],
    # one cluster against one cluster: the same clustering (ARI 1), no information shared (MI 0)
    "cluster_agreement.adjusted_rand_indices": lambda: cluster_agreement.adjusted_rand_indices(Y, Y[None, :]),
    "cluster_agreement.mutual_informations": lambda: cluster_agreement.mutual_informations(Y[None, :], PRED),
}

# Not statistics of labels and predictions: transforms, resamplers, fitters, reason helpers, types.
NOT_METRICS = {
    "label_model.ABSTAIN",
    "label_model.LabelModelFit",
    "label_model.METHODS",
    "label_votes.ABSTAIN",
    "label_votes.LabelModelFit",
    "label_votes.VotePatterns",
    "label_votes.check_votes",
    "label_votes.vote_patterns",
    "label_votes.log_joint",  # the Dawid–Skene joint of each row, finite by construction
    "label_votes.pattern_posteriors",
    "label_votes.finish_fit",
    "threshold_free.PANEL",
    "agreement.confusion_matrix",
    "agreement.kappa_reason",
    "agreement.draw_tables",
    "bootstrap.resample_counts",
    "bootstrap.count_blocks",
    "bootstrap.resample_clusters",
    "bootstrap.summarise",
    "bootstrap.bias_corrected",
    "bootstrap.grouped_count_blocks",
    "binary.bootstrap_p",  # p values of draws: NaN in, out
    "calibration.softmax",
    "calibration.log_softmax",
    "calibration.fit_temperature",
    "calibration.stratified_folds",
    "calibration.cross_fitted_temperature",
    # the same temperature scaling where it lives (stats.calibration re-exports it), and the input checks
    "temperature.softmax",
    "temperature.log_softmax",
    "temperature.fit_temperature",
    "temperature.stratified_folds",
    "temperature.cross_fitted_temperature",
    "calibration_inputs.ROW_SUM_TOL",
    "calibration_inputs.check_matrix",
    "calibration_inputs.check_probs",
    "calibration_inputs.check_labels",
    "calibration_inputs.check_bins",
    "calibration_inputs.check_temperature",
    "divergence.degree_of_divergence",  # refuses a one-class data set (ValueError): DoD compares two classes
    "divergence.regime_permutation",  # takes per-data-set differences, not labels
    "label_shift.EMResult",
    "label_shift.BBSEResult",
    "label_shift.em_batch",
    "cbpe.METRICS",
    "atc.METHODS",
    "bcts.BCTS",
    "cbpe.score_ranks",
    "cbpe_interval.TargetRows",
    "cbpe_interval.target_rows",  # ranks and rows a chunk reads
    "bcts.fit_bcts",
    "bcts.fit_bcts_resampled",  # fitters: refuse a class without a labelled row (ValueError)
    "bcts.BCTSExpansion",
    "bcts.bcts_expansion",
    "bcts.newton_refits",  # the refits' parts: derivatives, a solver
    # a resampler's last step (NaN where no weight survives), a solver's
    "label_shift.bbse_draws",
    "label_shift.em_chord",
    # parts of atc.thresholded_estimates (its case above): the reference's side and the target's, per subset of rows
    "atc.atc_threshold",
    "atc.share_above",
    "atc.ReferenceSide",
    "atc.reference_side",
    "atc.target_side",
    # the estimate's bootstrap draws, split at the reference: resamplers of the estimators above
    "estimate_draws.ReferenceDraws",
    "estimate_draws.reference_draws",
    "estimate_draws.target_draws",
    "cbpe_interval.cbpe_draws",  # a chunk of the interval's draws; its undefined draws are dropped from the interval
    "cbpe_interval.draws_per_chunk",
    "cbpe_interval.MAX_CHUNK_BYTES",
    "domain_shift.bin_thresholds",  # sizes, edges
    "significance.benjamini_hochberg",  # NaN p-values in, NaN out
    "weak_metrics.BINARY_METRICS",
    "weak_metrics.binary_reasons",
    "undefined.UndefinedStatisticWarning",
    "undefined.warn_undefined",
    "undefined.check_zero_division",
    "undefined.divide",
    "undefined.quiet_undefined",
    # the certification's design and its prediction-powered parts: coordinates, gradients, allocation, types
    "ppi.TUNINGS",
    "ppi.POPULATIONS",
    "ppi.PoolEstimate",
    "ppi.label_coordinates",
    "ppi.predicted_coordinates",
    "ppi.macro_f1_gradient",
    "ppi.anticipated_sd",
    "neyman.neyman_allocation",
    "neyman.stratified_variance",
    # labels needed from a half-width or a pool variance, and that variance: sizes, not statistics of labels
    "sample_size.labels_for_tolerance",
    "sample_size.srs_labels_for_tolerance",
    "sample_size.pool_variance",
    "sample_size.srs_half_width",
    # the monitor's binning and its change detector (over window counts, not labels)
    "drift.EPS",
    "drift.decile_edges",
    "drift.binned_shares",
    "drift.category_shares",
    "change.CusumResult",
    "change.self_starting_cusum",
    "cluster_agreement.contingency_tables",  # counts
    "f1.Tallies",
    "f1.tallies",
    "f1.confusion_tallies",
    "f1.binary_tallies",
    "f1.tallies_unchecked",  # counts
    "binary.confusion_counts",  # counts
    "delong.check_binary",
    "delong.check_scores",
    "delong.check_codes_only",
    "delong.check_codes",  # input checks
    # DeLong's kernels need both classes, which their callers check first (auc.delong's case above)
    "delong.placements",
    "delong.auc_and_variance",
    "delong.paired",
    "delong.auc_only",
    "macro_delong.macro_row_terms",
    "macro_delong.stratified_variance",
    "normal.two_sided_p",
    "normal.quantile",
    "brent.bounded_minimum",  # the normal distribution, a minimiser
    # one reference x target pair: composed of the estimators above, each with its case here; it needs every class
    # in the reference, which EstimateInputs and MonitorInputs check first. trust: a rule over its diagnostic, with
    # its cut-offs; MIN_BOOT: the fewest resamples
    "pair_estimate.PairEstimate",
    "pair_estimate.estimate_pair",
    "pair_estimate.trust",
    "pair_estimate.TrustOptions",
    "pair_estimate.MIN_BOOT",
    "trust_rule.TrustOptions",
    "trust_rule.MIN_BOOT",
    "pair_estimate.ReferenceDraws",
    "pair_estimate.reference_draws",
    # the agreement line's record type, its trust rule and the rule's cut-offs
    "agreement_line.AgreementLine",
    "agreement_line.line_trust",
    "agreement_line.MIN_RUNS",
    "agreement_line.MIN_R2",
    "agreement_line.MAX_RESIDUAL_SD",
    "agreement_line.MIN_SPREAD",
    "agreement_line.MAX_AGREEMENT",
    "agreement_line.MAX_METHOD_GAP",
    "agreement_line.distinct_runs",  # which runs are copies: indices, not a statistic
}


# vectorised kernels returning a dict of numbers or arrays: they warn, as bare numbers do
WARNS = {
    "weak_metrics.binary_metrics",
    "cbpe.expected_metrics",
    "pair_estimate.reference_metrics",
    "cbpe.draw_metrics",
    "f1.class_scores",
    "atc.thresholded_estimates",
    "proportion.wilson_interval",
}


# kernels for callers that validated the inputs and record the reason themselves: NaN, never a warning
QUIET = {
    "label_votes.source_coverage_conflict",
    "label_model_triplet.triplet_accuracies",
    "auc.macro_auc_unchecked",
    "bootstrap.macro_auc_of_counts",
    "f1.macro_f1_unchecked",
    "f1.class_scores_unchecked",
}


def public_names() -> set[str]:
    names = set()
    for info in pkgutil.iter_modules(mhaudit.stats.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"mhaudit.stats.{info.name}")
        assert hasattr(module, "__all__"), f"mhaudit.stats.{info.name} has no __all__"
        names |= {f"{info.name}.{name}" for name in module.__all__}
    return names


def test_every_public_function_has_a_case():
    covered = {name.split(" (")[0] for name in UNDEFINED} | set(DEFINED) | NOT_METRICS  # "f (a variant)": f
    assert public_names() - covered == set(), "give each new public function an all-negative case"
    assert covered - public_names() == set()


def _values(result, keys):
    if keys == ["value"]:
        return np.atleast_1d(np.asarray(result, dtype=float)).ravel()
    return np.array([float(result[k]) for k in keys])


@pytest.mark.parametrize("name", sorted(UNDEFINED))
def test_undefined_values_are_nan_and_say_why(name):
    call, keys = UNDEFINED[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    warned = [w for w in caught if issubclass(w.category, UndefinedStatisticWarning)]
    if keys:
        assert np.isnan(_values(result, keys)).all(), f"{name}: an undefined value was substituted"
    if name in QUIET:
        assert not warned, f"{name} is a kernel: it returns NaN without a warning"
    elif keys == ["value"] or name in WARNS:
        assert warned, f"{name} returned NaN without an UndefinedStatisticWarning"
        assert "undefined" in str(warned[0].message) or "lost a class" in str(warned[0].message)
    else:
        assert reason_of(result), f"{name}: a record with undefined values gives no reason"
        assert not warned, f"{name} both warns and gives a reason: a record says it once"


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_defined_values_are_numbers_without_a_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        values = np.atleast_1d(np.asarray(DEFINED[name](), dtype=float))
    assert np.isfinite(values).all(), name


def test_the_substitutes_are_explicit_and_only_zero_or_one():
    for kind in (0, 1, 0.0, 1.0):
        assert check_zero_division(kind) == kind
    assert math.isnan(check_zero_division(math.nan))
    for bad in (0.5, -1, "zero", None):
        with pytest.raises(ValueError, match="zero_division"):
            check_zero_division(bad)
    assert divide([1, 0], [2, 0]).tolist()[0] == 0.5 and math.isnan(divide([1, 0], [2, 0])[1])
    assert divide([1, 0], [2, 0], zero_division=0).tolist() == [0.5, 0.0]
    # The papers' convention, asked for: no warning, the sklearn number.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        assert binary.binary_scores(Y, PRED, zero_division=0)["macro_f1"] == 0.5
        assert binary.majority_macro_f1(Y, zero_division=0) == 0.5
        assert f1.macro_f1(f1.tallies(Y, PRED, 2), zero_division=0) == 0.5
        assert f1.class_scores(f1.tallies(Y, PRED, 2), zero_division=1)["f1"].tolist() == [1.0, 1.0]
