"""The inputs and options of the label-source audit, checked when they are made: a bad value fails before
anything runs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import at_least, check, each, one_of, option
from mhaudit.text.masks import MASKS

if TYPE_CHECKING:  # imported where used: the command line imports these options for its flags alone
    import pandas as pd

    from mhaudit.tables.corpus.schema import Corpus

BLOCKS = ("A", "B", "C")  # lexical, morpho-syntax, style
CHANNELS = ("A", "B", "C", "AB", "AC", "BC", "ABC")


def parse_channel(name: str) -> tuple[str, ...]:
    """'BC' -> ('B', 'C'); letters from A, B, C, each once, in canonical order."""
    letters = tuple(name.upper())
    if not letters or any(c not in BLOCKS for c in letters) or len(set(letters)) != len(letters):
        raise ValueError(f"channel '{name}' must combine the letters A, B, C (each at most once), e.g. BC")
    return tuple(c for c in BLOCKS if c in letters)


def canonical(names) -> list[str]:
    """Channel names in canonical spelling ('CB' -> 'BC'), each once, in the order given."""
    return list(dict.fromkeys("".join(parse_channel(n)) for n in names))


def _checked(field: str, names) -> list[str]:
    try:
        return canonical(names)
    except ValueError as exc:
        raise InputError(f"{field}: {exc}") from None


@dataclass(frozen=True)
class DivergenceOptions:
    """The label-source audit's options: each field's default, help and rule, shared with its command's flags."""

    human: tuple[str, ...] = option(help="Human-labelled data set(s), by `dataset` name.")
    auto: tuple[str, ...] = option(help="Auto-labelled data set(s), by `dataset` name.")
    train_dataset: str | None = option(
        None, help="Data set whose train split fits every channel (default: the first human one with a train split)."
    )
    positive: str | None = option(None, help="Positive class (default: the corpus's second class).")
    channels: tuple[str, ...] = option(CHANNELS, help="Channels and combinations to fit.")
    lexical: str = option(
        "char", help="Channel A: char (3-5-grams, the paper) or word (uni+bigrams).", rule=one_of("char", "word")
    )
    masks: tuple[str, ...] = option(
        MASKS, help="Masks the masked channels are refitted under.", rule=each(one_of(*MASKS))
    )
    mask_channels: tuple[str, ...] = option(("C", "BC"), help="Channels refitted under each mask.")
    lodo_channels: tuple[str, ...] = option(("A", "C", "BC"), help="Channels for leave-one-domain-out ('' = skip).")
    n_boot: int = option(10_000, help="Instance-bootstrap resamples per data set.", rule=at_least(100))
    n_folds: int = option(5, help="Cross-fitting and threshold folds.", rule=at_least(2))
    repeats: int = option(
        1, help="Repeated cross-fitting runs: training variance joins the bootstrap.", rule=at_least(1)
    )
    compare_lexical: bool = option(True, help="Also score channel A with the other n-gram kind (word vs char).")
    n_boot_clusters: int = option(100, help="Bootstrap resamples of the phenotype clusters.", rule=at_least(1))
    conflicts_per_dataset: int = option(200, help="Conflict-zone rows exported per data set.", rule=at_least(0))
    include_text: bool = option(False, help="Put post text in the conflict export.")
    seed: int = option(0, help="Seed of folds, bootstraps and clusters.")
    # None leaves an F1 with no true and no predicted instance undefined (NaN, the row's reason says so; a bootstrap
    # resample with one is left out); 0 is scikit-learn's default, with which the TSS paper computed Macro-F1.
    zero_division: float | None = option(
        None,
        help="Count an F1 with no true and no predicted instance as this "
        "(0: scikit-learn's default) instead of leaving it undefined.",
        rule=one_of(0, 1),
    )
    figures: bool = option(True, help="Draw the DoD forest, the channel x data set heatmap and the masking effects.")

    def __post_init__(self) -> None:
        check(self)
        both = sorted(set(self.human) & set(self.auto))
        if both:
            raise InputError(
                f"data set(s) {', '.join(both)} named both human and auto; a data set has one label source"
            )
        if not self.human or not self.auto:
            raise InputError(
                f"{'human' if not self.human else 'auto'} names no data set; the Degree of Divergence "
                "compares label sources, so name at least one on each side"
            )
        if not self.channels:
            raise InputError("channels is empty; name at least one channel to fit, e.g. A, C, BC")
        fitted = set(_checked("channels", self.channels))
        unfitted = [c for c in _checked("mask_channels", self.mask_channels) if c not in fitted]
        _checked("lodo_channels", self.lodo_channels)
        if unfitted and any(m != "none" for m in self.masks):
            raise InputError(
                f"mask_channels {', '.join(unfitted)} are not among channels {', '.join(sorted(fitted))}; "
                "a masked run is compared with the unmasked one"
            )
        if self.train_dataset and self.train_dataset in self.auto:
            raise InputError(
                f"train_dataset {self.train_dataset} is auto-labelled; the channels are fitted on human labels"
            )

    @property
    def undefined_f1(self) -> float:
        """zero_division as the stats functions take it (NaN for None)."""
        return math.nan if self.zero_division is None else float(self.zero_division)


@dataclass(frozen=True)
class DivergenceInputs:
    """A binary corpus with both label sources (its `synthetic` mark carries into the result) and, optionally, other
    models as baselines beside the channels: name -> frame with columns id, score (probability of the positive
    class) and pred (0/1), joined to the scored rows by id (`baselines_from_predictions`)."""

    corpus: Corpus
    baselines: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def synthetic(self) -> bool:
        return self.corpus.synthetic

    @classmethod
    def from_files(cls, corpora, *, baselines=(), positive: str | None = None) -> DivergenceInputs:
        """From corpus files (merged) and prediction files of other models (paths or globs), each model's first
        seed scored on `positive` (default: the corpus's last class)."""
        from mhaudit.audits.divergence.baselines import baselines_from_predictions
        from mhaudit.tables.corpus.schema import merge_corpora
        from mhaudit.tables.prediction_files import read_predictions

        corpus = merge_corpora(corpora)
        found = (
            baselines_from_predictions(read_predictions(baselines), positive or corpus.classes[-1]) if baselines else {}
        )
        return cls(corpus, found)
