"""The inputs and options of the agreement audit, checked when they are made: a bad value fails before anything
runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import Rule, at_least, between, check, option

if TYPE_CHECKING:  # an annotation only: the command line imports these options for its flags alone
    import pandas as pd


@dataclass(frozen=True)
class AgreementOptions:
    """What the agreement audit compares. `reference`: see mhaudit.tables.reference_labels for the default
    reference. Bootstraps: `n_boot` resamples of items (of authors, when the items have authors: see
    `audit_agreement`), percentile (1 - alpha) CIs, seeded with `seed`."""

    task: str = option(
        help="Task name in the labels table (e.g. si, mh).",
        rule=Rule(lambda v: bool(str(v).strip()), "the task's name in the labels table, e.g. si"),
    )
    weak_labeler: str | None = option(None, help="Weak labeler (default: the only llm/lexicon one).")
    # e.g. a classifier's predicted labels entered as a labeler (the human validation of a model): one verdict each
    models: tuple[str, ...] = option(
        (),
        help="Labeler holding a model's predicted labels, also scored against the reference (several).",
        flag="model",
    )
    # a labeler of kind combined (mhaudit labels combine): scored beside its sources and their majority vote
    combined: str | None = option(
        None,
        help="Combined labeler (kind combined, from labels combine): scored beside each of its sources and their "
        "majority vote, with each source's accuracy estimated without labels beside the measured one; the weak "
        "labeler unless one is named.",
        rule=Rule(lambda v: v is None or bool(str(v).strip()), "the name of a labeler of kind combined"),
    )
    annotators: tuple[str, ...] | None = option(
        None, help="Human annotator (several, or repeat; default: every labeler of kind human).", flag="annotator"
    )
    reference: str | None = option(
        None, help="Labeler whose labels are the reference (default: adjudicated, else agreed human labels)."
    )
    n_boot: int = option(2000, help="Bootstrap resamples for the CIs.", rule=at_least(0))
    alpha: float = option(0.05, help="1 minus the CIs' level (0.05: 95% CIs).", rule=between(0, 1))
    seed: int = option(0, help="Seed of the bootstraps.")

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class AgreementInputs:
    """What the agreement audit reads: the labels table (mhaudit.tables.label_store) and, when given, the
    validation set the items were drawn in (`sample_for_validation`; adds design-weighted estimates for the
    sampled pool) and the items' authors (a table with `id` or `item_id` and `author`; the bootstraps then resample
    authors). `synthetic` marks synthetic labels; `files`: (file, SHA-256) of the files read, for the provenance."""

    labels: pd.DataFrame
    validation_set: pd.DataFrame | None = None
    items: pd.DataFrame | None = None
    synthetic: bool = False
    files: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.items is not None and (
            not {"id", "item_id"} & set(self.items.columns) or "author" not in self.items.columns
        ):
            raise InputError(
                "the items need an 'id' (or 'item_id') and an 'author' column to cluster the bootstrap by author"
            )

    @classmethod
    def from_files(
        cls, labels, *, validation_set: str | Path | None = None, items: str | Path | None = None
    ) -> AgreementInputs:
        """From labels tables (joined; a label in two files is an InputError), the validation set file and the
        items: a post store (.sqlite, its posts' authors) or a corpus / items table with an author column."""
        from mhaudit.audits.agreement.authors import read_authors
        from mhaudit.tables.label_store import read_label_files
        from mhaudit.tables.predictions import sha256_file
        from mhaudit.tables.validation_set import read_validation_set

        paths = [labels] if isinstance(labels, (str, Path)) else list(labels)
        table = read_label_files(paths)
        sample = read_validation_set(validation_set) if validation_set is not None else None
        authors = read_authors(Path(items)) if items is not None else None
        read = [Path(p) for p in [*paths, validation_set, items] if p is not None]
        digests = tuple((str(p), sha256_file(p)) for p in read if p.is_file())
        return cls(table, sample, authors, files=digests)
