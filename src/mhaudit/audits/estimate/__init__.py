"""Label-free performance estimation: how good is the model on a platform nobody has labelled yet?

From a model's scores on a labelled reference (its home test set) and on unlabelled targets, estimate each
target's class priors (EM, BBSE), accuracy, macro-F1 and macro-AUC by confidence-based performance
estimation (CBPE), average thresholded confidence (ATC) and difference of confidences (DoC), with bootstrap
CIs, and mark each target trusted or untrusted by a shift diagnostic fixed in advance. docs/estimate.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.audits.estimate.verdicts import estimate_verdicts, summarise
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult, Section
from mhaudit.report.result import digest_frame, provenance
from mhaudit.stats.pair_estimate import estimate_pair, reference_metrics, trust
from mhaudit.tables.predictions import PredictionSet, scores

__all__ = ["EstimateOptions", "estimate_performance"]


@dataclass(frozen=True)
class EstimateOptions:
    n_boot: int = 1000
    seed: int = 0
    # The trust rule, fixed before any real-data run (docs/estimate.md): an estimate is trusted when the
    # prior-shift-weighted domain classifier cannot tell reference from target scores (AUC <= cut-off)
    # and the two prior estimators agree (largest |EM - BBSE| <= cut-off).
    domain_auc_cutoff: float = 0.60
    prior_gap_cutoff: float = 0.10
    # Added after the first real-data run (docs/estimate.md says which rule came when): no class the
    # reference has may vanish from an estimated prior, and the estimate may not hinge on the shift
    # assumption (label-shift-adjusted vs unadjusted CBPE macro-F1 within this).
    assumption_gap_cutoff: float = 0.05
    figures: bool = True


def _groups(preds: PredictionSet) -> dict[tuple, pd.DataFrame]:
    return {key: frame for key, frame in preds.frame.groupby(["model", "seed", "platform", "dataset"], sort=True)}


def _pairs(reference: PredictionSet, targets: PredictionSet) -> list[tuple[tuple, pd.DataFrame, tuple, pd.DataFrame]]:
    """Each target group with the reference group of its model and seed; a lone reference model serves all."""
    refs = _groups(reference)
    by_model = {(m, s): (key, frame) for key, frame in refs.items() for m, s in [key[:2]]}
    if len(by_model) < len(refs):
        raise InputError("the reference holds one model and seed on several platforms; give one reference "
                         "platform per model and seed")
    pairs = []
    for key, frame in _groups(targets).items():
        match = by_model.get(key[:2]) or (next(iter(by_model.values())) if len(by_model) == 1 else None)
        if match is None:
            raise InputError(f"target predictions of model {key[0]}, seed {key[1]} have no reference predictions of "
                             f"that model and seed (the reference has {', '.join(f'{m} seed {s}' for m, s in by_model)})")
        pairs.append((match[0], match[1], key, frame))
    return pairs


def _check(reference: PredictionSet, targets: PredictionSet, options: EstimateOptions) -> None:
    if reference.classes != targets.classes:
        raise InputError(f"the target's classes ({', '.join(targets.classes)}) differ from the reference's "
                         f"({', '.join(reference.classes)}); both need the same score columns in the same order")
    labels = reference.frame["label"]
    if labels.isna().all():
        raise InputError("the reference has no labels; the estimate calibrates on a labelled reference "
                         "(its 'label' column)")
    absent = [c for c in reference.classes if not (labels == c).any()]
    if absent:
        raise InputError(f"the reference has no row of class(es) {', '.join(absent)}; calibration needs every class")
    if options.n_boot < 100:
        raise InputError(f"n_boot must be at least 100 for a 95% interval, got {options.n_boot}")


def estimate_performance(reference: PredictionSet, targets: PredictionSet, options: EstimateOptions = EstimateOptions(),
                         *, synthetic: bool = False, progress: Progress | None = None) -> AuditResult:
    """Estimate each target's priors and metrics without its labels, and say whether to trust the estimate.

    `reference`: the model's scores on a labelled held-out set from its home platform. `targets`: its scores
    on unlabelled rows (read with `read_predictions(..., labelled=False)`; labels there are ignored).
    """
    progress = ensure(progress)
    _check(reference, targets, options)
    classes = reference.classes
    rng = np.random.default_rng(options.seed)
    estimates, priors, shift = [], [], []
    for ref_key, ref_frame, key, frame in _pairs(reference, targets):
        keys = {"model": ref_key[0], "seed": ref_key[1], "reference": ref_key[3], "platform": key[2], "dataset": key[3]}
        with progress.stage(f"estimate {key[0]} on {key[3]}"):
            y_ref = pd.Categorical(ref_frame["label"], categories=classes).codes.astype(np.int64)
            pair = estimate_pair(y_ref, scores(ref_frame, classes), scores(frame, classes), n_boot=options.n_boot,
                                 rng=rng, seed=options.seed, domain_auc_cutoff=options.domain_auc_cutoff,
                                 prior_gap_cutoff=options.prior_gap_cutoff)
        truth = reference_metrics(y_ref, scores(ref_frame, classes))
        for row in pair.estimates:
            estimates.append({**keys, **row, "reference_value": truth[row["metric"]]})
        priors += [{**keys, "class": classes[r.pop("class_index")], **r} for r in pair.priors]
        vanished = pair.shift["vanishing_class"]
        pair.shift["vanishing_class"] = classes[vanished] if vanished >= 0 else ""
        shift.append({**keys, **pair.shift, **trust(pair.shift, options)})
    tables = {"estimates": pd.DataFrame(estimates), "priors": pd.DataFrame(priors), "shift": pd.DataFrame(shift)}
    tables["estimates"] = tables["estimates"].merge(tables["shift"][["model", "seed", "platform", "dataset",
                                                                     "trusted"]], how="left")
    verdicts = estimate_verdicts(tables, options)
    return AuditResult(
        title="Label-free performance estimate" + (" (SYNTHETIC data)" if synthetic else ""),
        sections=_sections(tables, options),
        summary=summarise(tables, synthetic),
        verdicts=verdicts, synthetic=synthetic,
        options={"n_boot": options.n_boot, "seed": options.seed, "domain_auc_cutoff": options.domain_auc_cutoff,
                 "prior_gap_cutoff": options.prior_gap_cutoff, "assumption_gap_cutoff": options.assumption_gap_cutoff,
                 "classes": classes},
        provenance=provenance({"reference": digest_frame(reference.frame), "targets": digest_frame(targets.frame),
                               **{f"reference {k}": v for k, v in reference.fingerprints.items()},
                               **{f"target {k}": v for k, v in targets.fingerprints.items()}}, progress.seconds),
    )


def _sections(tables: dict, options: EstimateOptions) -> list[Section]:
    from mhaudit.audits.estimate.figures import estimate_forest

    figures = {"estimated_macro_f1": estimate_forest(tables["estimates"])} if options.figures else {}
    return [
        Section("Expected on the target, before labels",
                "Each method's estimate with its 95% CI, beside the metric on the labelled reference. An "
                "untrusted target's estimates are printed but not relied on (the shift table says why).",
                {"estimates": tables["estimates"]}, figures),
        Section("Shift diagnostic and trust",
                f"Trusted when the prior-shift-weighted domain classifier's AUC is at most {options.domain_auc_cutoff:.2f}, "
                f"EM and BBSE priors differ by at most {options.prior_gap_cutoff:.2f}, no class of the reference "
                "vanishes from an estimated prior (below 0.02), and the label-shift-adjusted and unadjusted CBPE "
                f"macro-F1 differ by at most {options.assumption_gap_cutoff:.2f}.",
                {"shift": tables["shift"]}),
        Section("Estimated class priors", "EM (Saerens et al. 2002) and BBSE (Lipton et al. 2018), 95% bootstrap CIs.",
                {"priors": tables["priors"]}),
    ]
