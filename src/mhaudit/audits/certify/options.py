"""The inputs and options of certification, checked when they are made: a bad value fails before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mhaudit.tables.sample_design import predictions_digest
from mhaudit.core.errors import InputError
from mhaudit.stats.ppi import POPULATIONS
from mhaudit.tables.predictions import PredictionSet


@dataclass(frozen=True)
class CertifyOptions:
    task: str
    annotators: tuple[str, ...] | None = None  # default: every labeler of kind human
    reference: str | None = None  # a labeler whose labels are the truth (default: the agreement rule)
    positive: str | None = None  # the class a label value 1 stands for (default: the second class)
    tolerance: float = 0.05  # certified when the macro-F1 CI is at most ± this
    population: str = "pool"  # "pool": the scored posts themselves; "platform": posts like them

    def __post_init__(self) -> None:
        if not str(self.task).strip():
            raise InputError("task must name the task in the labels table, e.g. si")
        if not 0 < self.tolerance < 0.5:
            raise InputError(f"tolerance {self.tolerance} must lie between 0 and 0.5")
        if self.population not in POPULATIONS:
            raise InputError(f"population '{self.population}' must be one of {', '.join(POPULATIONS)}")


def design_runs(design: pd.DataFrame) -> int:
    """How many runs the sample was drawn from (a design written before ensembles: one)."""
    return int(design["runs"].iat[0]) if "runs" in design.columns and len(design) else 1


@dataclass(frozen=True)
class CertifyInputs:
    """What `labels sample --strategy estimate` drew and what people then labelled: the labels table, the
    sample and its design (`read_validation_set`, `read_design`), and the model's scores on every pooled item
    (the predictions the sample was drawn from: one model, or every run of the ensemble it was drawn with).
    Checked to belong together."""

    labels: pd.DataFrame
    sample: pd.DataFrame
    design: pd.DataFrame
    predictions: PredictionSet

    def __post_init__(self) -> None:
        sample, design, predictions = self.sample, self.design, self.predictions
        if "predictions_digest" not in sample.columns or "strategy" not in sample.columns \
                or (sample["strategy"] != "estimate").any():
            raise InputError("the validation set was not drawn with --strategy estimate; certification needs the "
                             "sample and design that `mhaudit labels sample --strategy estimate` writes")
        frame = predictions.frame
        runs, drawn_runs = frame.groupby(["model", "seed"]).ngroups, int(design_runs(design))
        if runs != drawn_runs:
            raise InputError("the predictions hold several models; give the predictions of the sampled model"
                             if drawn_runs == 1 else f"the sample was drawn for an ensemble of {drawn_runs} runs; "
                             f"these predictions hold {runs}: give every run the sample was drawn from")
        digest, drawn = predictions_digest(frame, predictions.classes), str(sample["predictions_digest"].iat[0])
        if digest != drawn:
            raise InputError(f"the sample was drawn for other predictions (model '{sample['model'].iat[0]}', digest "
                             f"{drawn}); these are model '{frame['model'].iat[0]}' with digest {digest}")
        by_id = design.assign(item_id=design["item_id"].astype(str)).set_index("item_id")
        ids = sample["item_id"].astype(str)
        sizes = design["stratum"].value_counts()
        if not ids.isin(by_id.index).all() \
                or (by_id.loc[ids, "stratum"].to_numpy() != sample["stratum"].astype(str)).any() \
                or (sample["pool_size"].to_numpy() != sizes.reindex(sample["stratum"].astype(str)).to_numpy()).any():
            raise InputError("the sample and the design file beside it were not drawn together (their strata "
                             "differ); draw them again with mhaudit labels sample --strategy estimate")
