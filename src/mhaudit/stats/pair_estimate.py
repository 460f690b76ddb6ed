"""One reference x target pair of scores: calibrate on the reference, estimate the target's priors and metrics by
each method with bootstrap CIs, run the shift diagnostic, and find which checks of the trust rule it fails
(docs/estimate.md).

Arrays in, estimates out: the label-free estimate audit runs it per model and target, the monitor per window; each
says in its own words why an estimate is not trusted (report.trust).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from mhaudit.core.threads import thread_budget
from mhaudit.stats.atc import thresholded_estimates
from mhaudit.stats.cbpe import expected_metrics
from mhaudit.stats.domain_shift import domain_auc
from mhaudit.stats.estimate_draws import ReferenceDraws, reference_draws, target_draws
from mhaudit.stats.f1 import macro_f1, tallies
from mhaudit.stats.label_shift import bbse_priors, em_priors, prior_corrected_probs
from mhaudit.stats.trust_rule import MIN_BOOT, TrustOptions

__all__ = [
    "MIN_BOOT",
    "PairEstimate",
    "ReferenceDraws",
    "TrustOptions",
    "estimate_pair",
    "reference_draws",
    "reference_metrics",
    "trust",
]


@dataclass
class PairEstimate:
    """One reference × target pair: label-free estimates, prior estimates, shift diagnostic, failed trust checks."""

    estimates: list[dict]  # method x metric: estimate, ci_low, ci_high
    priors: list[dict]  # per class: reference, predicted share, EM and BBSE with CIs
    shift: dict  # domain AUC, prior gap, the vanishing class's index (-1: none), n
    failed: dict  # the trust rule's failed checks (`trust`): empty when the estimate is trusted


def reference_metrics(y: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    """The metrics on the labelled reference, by the same formulas as the estimates."""
    k = logits.shape[1]
    pred = logits.argmax(axis=1)
    onehot = np.eye(k)[y]
    return {
        "accuracy": float((pred == y).mean()),
        "macro_f1": float(macro_f1(tallies(y, pred, k))),
        "macro_auc": expected_metrics(onehot, softmax(logits, axis=1))["macro_auc"],
    }


VANISHED, PRESENT = 0.02, 0.05


def _vanishing(pi: np.ndarray, *estimates: np.ndarray) -> int:
    """The first class the reference has (prior >= PRESENT) that an estimate puts below VANISHED, else -1.

    The maximum-likelihood prior sits on that boundary when no mixture of the reference's class-conditional
    scores explains the target's: the label-shift model does not fit."""
    for q in estimates:
        hit = np.flatnonzero((pi >= PRESENT) & (np.nan_to_num(q, nan=1.0) < VANISHED))
        if len(hit):
            return int(hit[0])
    return -1


def _interval(draws: np.ndarray) -> tuple[float, float]:
    finite = draws[np.isfinite(draws)]
    return (float(np.quantile(finite, 0.025)), float(np.quantile(finite, 0.975))) if len(finite) else (np.nan, np.nan)


def estimate_pair(
    reference: ReferenceDraws,
    z_tgt: np.ndarray,
    *,
    rng: np.random.Generator,
    seed: int,
    cutoffs: TrustOptions = TrustOptions(),
) -> PairEstimate:
    """The estimates, priors, shift diagnostic and failed trust checks of one target (the model's scores z_tgt)
    against a reference and its side of the bootstrap draws (`reference_draws`, shared by every target of that
    reference); `rng` draws the target's side, `seed` seeds the domain classifier."""
    # Every step works on a few thousand rows (the bootstrap's batched products: draws x rows x classes; the
    # domain classifier's small trees): BLAS and OpenMP threads cost more than they save, and on a busy machine
    # they oversubscribe it (issue 33). One thread for the whole pair, set once.
    with thread_budget(1):
        return _estimate_pair(reference, np.asarray(z_tgt, dtype=float), rng=rng, seed=seed, cutoffs=cutoffs)


def _estimate_pair(reference, z_tgt, *, rng, seed, cutoffs: TrustOptions) -> PairEstimate:
    y_ref, z_ref, calibration = reference.y, reference.logits, reference.calibration
    k, n_ref, n_tgt = z_ref.shape[1], len(z_ref), len(z_tgt)
    p_ref, p_tgt = calibration.probs(z_ref), calibration.probs(z_tgt)
    pi = np.bincount(y_ref, minlength=k) / n_ref
    pred_ref, pred_tgt = z_ref.argmax(axis=1), z_tgt.argmax(axis=1)
    em = em_priors(p_tgt, pi).priors
    bbse = bbse_priors(y_ref, pred_ref, pred_tgt, k)

    log_ref, log_tgt = (np.log(np.clip(p, 1e-12, None)) for p in (p_ref, p_tgt))
    shift = {
        "n_reference": n_ref,
        "n_target": n_tgt,
        "domain_auc": domain_auc(log_ref, (em / pi)[y_ref], log_tgt, seed=seed),
        "prior_gap": float(np.nanmax(np.abs(em - bbse.priors))) if np.isfinite(bbse.priors).any() else np.nan,
        "vanishing_class": _vanishing(pi, em, bbse.priors),
        "bbse_note": bbse.note,
        "temperature": 1 / calibration.slope,
    }
    # Adjust for the prior shift only where the label-shift model fits the target; elsewhere EM's priors are
    # an artefact (seen on real transfers: a class driven to 0) and p(y | x) is carried over as it is.
    shift["prior_adjusted"] = bool(
        shift["domain_auc"] <= cutoffs.domain_auc_cutoff
        and shift["prior_gap"] <= cutoffs.prior_gap_cutoff
        and shift["vanishing_class"] < 0
    )
    scores = softmax(z_tgt, axis=1)
    adjusted = expected_metrics(prior_corrected_probs(p_tgt, pi, em), scores)
    unadjusted = expected_metrics(p_tgt, scores)
    shift |= {
        "cbpe_f1_prior_adjusted": adjusted["macro_f1"],
        "cbpe_f1_unadjusted": unadjusted["macro_f1"],
        "assumption_gap": abs(adjusted["macro_f1"] - unadjusted["macro_f1"]),
    }
    point = adjusted if shift["prior_adjusted"] else unadjusted
    draws = target_draws(reference, z_tgt, em, rng, adjust_priors=shift["prior_adjusted"])
    estimates = [
        {
            "method": "cbpe",
            "metric": m,
            "estimate": point[m],
            **dict(zip(("ci_low", "ci_high"), _interval(draws["cbpe", m]))),
        }
        for m in point
    ]
    estimates += _thresholded(p_ref, y_ref, pred_ref, p_tgt, pred_tgt, draws)
    predicted = np.bincount(pred_tgt, minlength=k) / n_tgt
    priors = []
    for c in range(k):
        em_low, em_high = _interval(draws["em"][:, c])
        bb_low, bb_high = _interval(draws["bbse"][:, c])
        priors.append(
            {
                "class_index": c,
                "prevalence_reference": float(pi[c]),
                "predicted_share": float(predicted[c]),
                "prevalence_em": float(em[c]),
                "em_ci_low": em_low,
                "em_ci_high": em_high,
                "prevalence_bbse": float(bbse.priors[c]),
                "bbse_ci_low": bb_low,
                "bbse_ci_high": bb_high,
            }
        )
    return PairEstimate(estimates, priors, shift, trust(shift, cutoffs))


def _thresholded(p_ref, y_ref, pred_ref, p_tgt, pred_tgt, draws) -> list[dict]:
    """ATC and DoC rows: accuracy and macro-F1 with bootstrap CIs; no AUC (they do not rank)."""
    k = p_ref.shape[1]
    conf_ref, conf_tgt = p_ref.max(axis=1), p_tgt.max(axis=1)
    ones_ref, ones_tgt = np.ones((1, len(p_ref))), np.ones((1, len(p_tgt)))
    rows = []
    for method in ("atc", "doc"):
        at_point = thresholded_estimates(method, conf_ref, y_ref, pred_ref, ones_ref, conf_tgt, pred_tgt, ones_tgt, k)
        for m in ("accuracy", "macro_f1"):
            low, high = _interval(draws[method, m])
            rows.append(
                {"method": method, "metric": m, "estimate": float(at_point[m][0]), "ci_low": low, "ci_high": high}
            )
        rows.append(
            {
                "method": method,
                "metric": "macro_auc",
                "estimate": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "note": f"{method.upper()} thresholds confidence and cannot rank: no AUC",
            }
        )
    return rows


def trust(shift: dict, cutoffs: TrustOptions) -> dict:
    """The checks of the trust rule that the shift diagnostic (`estimate_pair`'s shift) fails, in the order the
    reasons are given, each with its value: domain_auc, prior_gap (NaN, BBSE undefined, fails) and assumption_gap
    above their cut-offs, and vanishing_class, the index of a class the reference has that an estimated prior drives
    near 0. Empty: the estimate is trusted."""
    fails = {
        "domain_auc": not shift["domain_auc"] <= cutoffs.domain_auc_cutoff,
        "prior_gap": not shift["prior_gap"] <= cutoffs.prior_gap_cutoff,
        "vanishing_class": shift["vanishing_class"] >= 0,
        "assumption_gap": not shift["assumption_gap"] <= cutoffs.assumption_gap_cutoff,
    }
    return {name: shift[name] for name, failed in fails.items() if failed}
