"""The inputs and options of the label-free estimate, checked when they are made: a bad value fails before
anything runs. The monitor carries an EstimateOptions for its windows."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError
from mhaudit.stats.pair_estimate import ASSUMPTION_GAP_CUTOFF, DOMAIN_AUC_CUTOFF, PRIOR_GAP_CUTOFF
from mhaudit.tables.predictions import PredictionSet


@dataclass(frozen=True)
class EstimateOptions:
    n_boot: int = 1000
    seed: int = 0
    # The trust rule, fixed before any real-data run (docs/estimate.md): an estimate is trusted when the
    # prior-shift-weighted domain classifier cannot tell reference from target scores (AUC <= cut-off)
    # and the two prior estimators agree (largest |EM - BBSE| <= cut-off).
    domain_auc_cutoff: float = DOMAIN_AUC_CUTOFF
    prior_gap_cutoff: float = PRIOR_GAP_CUTOFF
    # Added after the first real-data run (docs/estimate.md says which rule came when): no class the
    # reference has may vanish from an estimated prior, and the estimate may not hinge on the shift
    # assumption (label-shift-adjusted vs unadjusted CBPE macro-F1 within this).
    assumption_gap_cutoff: float = ASSUMPTION_GAP_CUTOFF
    # Which estimates: CBPE, ATC, DoC and the shift diagnostic for each run, and the agreement line over all
    # runs (ALine-S, ALine-D: accuracy only) where three or more runs are scored on the same rows.
    per_run: bool = True
    ensemble: bool = True
    figures: bool = True

    def __post_init__(self) -> None:
        if not (self.per_run or self.ensemble):
            raise InputError("per_run and ensemble are both off: there is no estimate left to make")
        if self.n_boot < 100:
            raise InputError(f"n_boot must be at least 100 for a 95% interval, got {self.n_boot}")
        if not 0.5 <= self.domain_auc_cutoff <= 1:
            raise InputError(f"domain_auc_cutoff {self.domain_auc_cutoff} must lie between 0.5 and 1")
        for name in ("prior_gap_cutoff", "assumption_gap_cutoff"):
            if not 0 < getattr(self, name) <= 1:
                raise InputError(f"{name} {getattr(self, name)} must lie in (0, 1]")


@dataclass(frozen=True)
class EstimateInputs:
    """The model's scores on a labelled reference (its home test set) and on unlabelled targets (read with
    `read_predictions(..., labelled=False)`; labels there are ignored), with the same classes in order."""

    reference: PredictionSet
    targets: PredictionSet

    def __post_init__(self) -> None:
        reference, targets = self.reference, self.targets
        if reference.classes != targets.classes:
            raise InputError(f"the target's classes ({', '.join(targets.classes)}) differ from the reference's "
                             f"({', '.join(reference.classes)}); both need the same score columns in the same order")
        labels = reference.frame["label"]
        if labels.isna().all():
            raise InputError("the reference has no labels; the estimate calibrates on a labelled reference "
                             "(its 'label' column)")
        absent = [c for c in reference.classes if not (labels == c).any()]
        if absent:
            raise InputError(f"the reference has no row of class(es) {', '.join(absent)}; calibration needs every "
                             "class")
