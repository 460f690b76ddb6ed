"""The inputs and options of the label-free estimate, checked when they are made: a bad value fails before
anything runs. The monitor holds the same trust rule (TrustOptions) for its windows."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError
from mhaudit.core.options import option
from mhaudit.stats.pair_estimate import MIN_BOOT, TrustOptions
from mhaudit.tables.pairing import reference_runs
from mhaudit.tables.predictions import PredictionSet


@dataclass(frozen=True)
class EstimateOptions:
    n_boot: int = 1000
    seed: int = 0
    # The trust rule (docs/estimate.md), the monitor's too
    trust: TrustOptions = option(TrustOptions(), help="The trust rule's cut-offs.")
    # Which estimates: CBPE, ATC, DoC and the shift diagnostic for each run, and the agreement line over all
    # runs (ALine-S, ALine-D: accuracy only) where three or more runs are scored on the same rows.
    per_run: bool = True
    ensemble: bool = True
    figures: bool = True

    def __post_init__(self) -> None:
        if not (self.per_run or self.ensemble):
            raise InputError("per_run and ensemble are both off: there is no estimate left to make")
        if self.n_boot < MIN_BOOT:
            raise InputError(f"n_boot must be at least {MIN_BOOT}, a resample in each tail of a 95% interval; got "
                             f"{self.n_boot}")


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
        # each target run's reference, by the one rule (tables.pairing); every class, since it is calibrated on
        runs = dict.fromkeys(g.run for g in targets.groups().values())
        reference_runs(reference.groups().values(), runs, reference.classes)
