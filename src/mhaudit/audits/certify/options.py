"""The inputs and options of certification, checked when they are made: a bad value fails before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import Rule, between, check, one_of, option
from mhaudit.stats.ppi import POPULATIONS

if TYPE_CHECKING:  # imported where used: the command line imports these options for its flags alone
    import pandas as pd

    from mhaudit.tables.predictions import PredictionSet


@dataclass(frozen=True)
class CertifyOptions:
    """The certify audit's options: each field's default, help and rule, shared with its command's flags."""

    task: str = option(
        help="Task name in the labels table (e.g. si, mh).",
        rule=Rule(lambda v: bool(str(v).strip()), "the task's name in the labels table, e.g. si"),
    )
    annotators: tuple[str, ...] | None = option(
        None, help="Human annotator (several, or repeat; default: every labeler of kind human).", flag="annotator"
    )
    reference: str | None = option(
        None, help="Labeler whose labels are the reference (default: adjudicated, else agreed human labels)."
    )
    positive: str | None = option(None, help="The class a label value 1 stands for (default: the second class).")
    tolerance: float = option(0.05, help="Certified when the macro-F1 CI is at most ± this.", rule=between(0, 0.5))
    population: str = option(
        "pool", help="pool (the scored items themselves) or platform (items like them).", rule=one_of(*POPULATIONS)
    )

    def __post_init__(self) -> None:
        check(self)


def design_runs(design: pd.DataFrame) -> int:
    """How many runs the sample was drawn from (a design written before ensembles: one)."""
    return int(design["runs"].iat[0]) if "runs" in design.columns and len(design) else 1


def drawn_run(design: pd.DataFrame, only: tuple[str, int]) -> tuple[str, int]:
    """The run the sample was drawn to certify (a design written before ensembles records none: `only`)."""
    if "certified_seed" in design.columns:
        return str(design["model"].iat[0]), int(design["certified_seed"].iat[0])
    return only


@dataclass(frozen=True)
class CertifyInputs:
    """What `labels sample --strategy estimate` drew and what people then labelled: the labels table, the
    sample and its design (`read_validation_set`, `read_design`), and the model's scores on every pooled item
    (the predictions the sample was drawn from: one model, or every run of the ensemble it was drawn with),
    checked to belong together; `run` (model, seed), the run to certify: by default the one it was drawn for.
    A design drawn for an ensemble holds for each of its runs (docs/validation.md, "One run certified alone").
    `synthetic` marks synthetic data."""

    labels: pd.DataFrame
    sample: pd.DataFrame
    design: pd.DataFrame
    predictions: PredictionSet
    run: tuple[str, int] | None = None
    synthetic: bool = False

    @classmethod
    def from_files(cls, labels, sample, predictions, *, run: str | None = None) -> CertifyInputs:
        """What `mhaudit audit certify` reads: label files (one path or several, joined), the sample (its design
        beside it), the prediction files or globs (unlabelled); `run` names one run of several to certify, as
        MODEL:SEED, MODEL or its run-<k> folder (`models.runs.run_key`)."""
        from mhaudit.models.runs import run_key
        from mhaudit.tables.certification_sample import read_design
        from mhaudit.tables.label_store import read_label_files
        from mhaudit.tables.prediction_files import read_predictions
        from mhaudit.tables.sample_design import certified_run
        from mhaudit.tables.validation_set import read_validation_set

        target = read_predictions(predictions, labelled=False)
        named = None if run is None else certified_run(target.frame, *run_key(run))
        return cls(read_label_files(labels), read_validation_set(sample), read_design(sample), target, named)

    @property
    def drawn(self) -> tuple[str, int]:
        """The run the sample was drawn to certify."""
        return drawn_run(self.design, self.certified)

    @property
    def certified(self) -> tuple[str, int]:
        """The run to certify: `run` as __post_init__ settled it (None before, never after)."""
        assert self.run is not None
        return self.run

    def __post_init__(self) -> None:
        from mhaudit.tables.sample_design import certified_run, predictions_digest

        sample, design, predictions = self.sample, self.design, self.predictions
        if (
            "predictions_digest" not in sample.columns
            or "strategy" not in sample.columns
            or (sample["strategy"] != "estimate").any()
        ):
            raise InputError(
                "the validation set was not drawn with --strategy estimate; certification needs the "
                "sample and design that `mhaudit labels sample --strategy estimate` writes"
            )
        frame, drawn_runs = predictions.frame, design_runs(design)
        run = None if self.run is None else certified_run(frame, *self.run)
        if run is not None and drawn_runs == 1:  # drawn for this run alone: its rows are the predictions
            frame = frame[(frame["model"] == run[0]) & (frame["seed"] == run[1])]
        runs = frame.groupby(["model", "seed"]).ngroups
        if runs != drawn_runs:
            raise InputError(
                "the predictions hold several runs and the sample was drawn for one; name it with --run MODEL:SEED"
                if drawn_runs == 1
                else f"the sample was drawn for an ensemble of "
                f"{drawn_runs} runs; these predictions hold {runs}: give every run the sample was drawn "
                "from (--run then names the one to certify)"
            )
        digest, drawn = predictions_digest(frame, predictions.classes), str(sample["predictions_digest"].iat[0])
        if digest != drawn:
            raise InputError(
                f"the sample was drawn for other predictions (model '{sample['model'].iat[0]}', digest "
                f"{drawn}); these are model '{frame['model'].iat[0]}' with digest {digest}"
            )
        object.__setattr__(
            self, "run", run or drawn_run(design, (str(frame["model"].iat[0]), int(frame["seed"].iat[0])))
        )
        by_id = design.assign(item_id=design["item_id"].astype(str)).set_index("item_id")
        ids = sample["item_id"].astype(str)
        sizes = design["stratum"].value_counts()
        if (
            not ids.isin(by_id.index).all()
            or (by_id.loc[ids, "stratum"].to_numpy() != sample["stratum"].astype(str)).any()
            or (sample["pool_size"].to_numpy() != sizes.reindex(sample["stratum"].astype(str)).to_numpy()).any()
        ):
            raise InputError(
                "the sample and the design file beside it were not drawn together (their strata "
                "differ); draw them again with mhaudit labels sample --strategy estimate"
            )
