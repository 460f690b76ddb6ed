"""The inputs and options of the label-free estimate, checked when they are made: a bad value fails before
anything runs. The monitor holds the same trust rule (TrustOptions) for its windows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import Rule, at_least, check, option
from mhaudit.stats.trust_rule import MIN_BOOT, TrustOptions

if TYPE_CHECKING:  # imported where used: the command line imports these options for its flags alone
    from mhaudit.tables.prediction_files import PredictionColumns
    from mhaudit.tables.predictions import PredictionSet


@dataclass(frozen=True)
class EstimateOptions:
    """Which estimates: CBPE, ATC, DoC and the shift diagnostic for each run (`per_run`), and the agreement line over
    all runs (`ensemble`: ALine-S, ALine-D, accuracy only) where three or more runs are scored on the same rows."""

    n_boot: int = option(
        1000,
        help="Bootstrap resamples for the CIs.",
        rule=Rule(lambda v: v >= MIN_BOOT, f"at least {MIN_BOOT}, a resample in each tail of a 95% interval"),
    )
    seed: int = option(0, help="Seed for the bootstrap and the domain classifier.", rule=at_least(0))
    # The trust rule (docs/estimate.md), the monitor's too
    trust: TrustOptions = option(TrustOptions(), help="The trust rule's cut-offs.")
    per_run: bool = option(True, help="CBPE, ATC, DoC and the shift diagnostic for each run.")
    ensemble: bool = option(
        True,
        help="The agreement line over all runs (three or more on the same rows): each "
        "run's accuracy by ALine-S and ALine-D.",
    )
    figures: bool = option(True, help="Draw the figures.")

    def __post_init__(self) -> None:
        check(self)
        if not (self.per_run or self.ensemble):
            raise InputError("per_run and ensemble are both off: there is no estimate left to make")


@dataclass(frozen=True)
class EstimateInputs:
    """The model's scores on a labelled reference (its home test set) and on unlabelled targets (read with
    `read_predictions(..., labelled=False)`; labels there are ignored), with the same classes in order.
    `synthetic` marks synthetic scores."""

    reference: PredictionSet
    targets: PredictionSet
    synthetic: bool = False

    def __post_init__(self) -> None:
        from mhaudit.tables.pairing import reference_runs

        reference, targets = self.reference, self.targets
        if reference.classes != targets.classes:
            raise InputError(
                f"the target's classes ({', '.join(targets.classes)}) differ from the reference's "
                f"({', '.join(reference.classes)}); both need the same score columns in the same order"
            )
        # each target run's reference, by the one rule (tables.pairing); every class, since it is calibrated on
        runs = dict.fromkeys(g.run for g in targets.groups().values())
        reference_runs(reference.groups().values(), runs, reference.classes)

    @classmethod
    def from_files(
        cls,
        reference,
        targets,
        *,
        classes: list[str] | None = None,
        columns: PredictionColumns | None = None,
        model: str | None = None,
        name_pattern: str | None = None,
    ) -> EstimateInputs:
        """From prediction files or globs: the reference's (labelled) and the targets' (read unlabelled, in the
        reference's class order; `targets.notes` says when a label column there is ignored). `classes`, `columns`,
        `model`, `name_pattern`: read_predictions' keywords, for both."""
        from mhaudit.tables.prediction_files import PredictionColumns, read_predictions

        read: dict = dict(columns=columns or PredictionColumns(), model=model, name_pattern=name_pattern)
        ref = read_predictions(reference, classes=classes, **read)
        return cls(ref, read_predictions(targets, classes=ref.classes, labelled=False, **read))
