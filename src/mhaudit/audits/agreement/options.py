"""The options of the agreement audit, checked when they are made: a bad value fails before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError


@dataclass(frozen=True)
class AgreementOptions:
    """What the agreement audit compares. `annotators`: the human labelers whose independent labels are
    compared (default: every labeler of kind 'human' for the task). `reference`: a labeler whose labels are
    the reference (default: the adjudicated labels, else the annotators' agreed labels; see
    mhaudit.tables.reference_labels). Bootstraps: `n_boot` resamples of items (of authors, when the items
    have authors: see `audit_agreement`), percentile (1 - alpha) CIs, seeded with `seed`."""

    task: str
    weak_labeler: str | None = None  # default: the task's only llm or lexicon labeler
    # Labelers also scored against the same reference, e.g. a classifier's predictions entered as a labeler
    # (the human validation of a model): one verdict each, axis "human validation".
    models: tuple[str, ...] = ()
    annotators: tuple[str, ...] | None = None
    reference: str | None = None
    n_boot: int = 2000
    alpha: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if not str(self.task).strip():
            raise InputError("task must name the task in the labels table, e.g. si")
        if self.n_boot < 0:
            raise InputError(f"n_boot (bootstrap resamples) must be non-negative, got {self.n_boot}")
        if not 0 < self.alpha < 1:
            raise InputError(f"alpha {self.alpha} must lie strictly between 0 and 1")
