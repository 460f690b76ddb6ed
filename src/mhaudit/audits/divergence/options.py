"""The options of the label-source audit, checked when they are made: a bad value fails before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mhaudit.core.errors import InputError
from mhaudit.text.masks import MASKS

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
    human: tuple[str, ...]
    auto: tuple[str, ...]
    train_dataset: str | None = None  # fits every channel (its train split); default: first human data set with one
    positive: str | None = None  # default: the corpus's second class
    channels: tuple[str, ...] = CHANNELS
    lexical: str = "char"  # channel A: "char" (3-5-grams, the paper) or "word" (uni+bigrams)
    masks: tuple[str, ...] = MASKS
    mask_channels: tuple[str, ...] = ("C", "BC")
    lodo_channels: tuple[str, ...] = ("A", "C", "BC")
    n_boot: int = 10_000
    n_folds: int = 5
    repeats: int = 1  # repeated cross-fitting: training variance joins the bootstrap
    compare_lexical: bool = True  # also score channel A with the other n-gram kind (word vs char)
    n_boot_clusters: int = 100
    conflicts_per_dataset: int = 200
    include_text: bool = False
    seed: int = 0
    # An F1 with no true and no predicted instance of its class: None leaves it undefined (NaN, the row's
    # reason says so; a bootstrap resample with one is left out); 0 counts it as 0, scikit-learn's default,
    # with which the TSS paper computed Macro-F1 (docs/statistics.md).
    zero_division: float | None = None
    figures: bool = True  # DoD forest, channel x data set heatmap, masking effects

    def __post_init__(self) -> None:
        both = sorted(set(self.human) & set(self.auto))
        if both:
            raise InputError(f"data set(s) {', '.join(both)} named both human and auto; a data set has one label "
                             "source")
        if not self.human or not self.auto:
            raise InputError(f"{'human' if not self.human else 'auto'} names no data set; the Degree of Divergence "
                             "compares label sources, so name at least one on each side")
        if not self.channels:
            raise InputError("channels is empty; name at least one channel to fit, e.g. A, C, BC")
        fitted = set(_checked("channels", self.channels))
        unfitted = [c for c in _checked("mask_channels", self.mask_channels) if c not in fitted]
        _checked("lodo_channels", self.lodo_channels)
        bad = [m for m in self.masks if m not in MASKS]
        if bad:
            raise InputError(f"masks holds unknown mask(s) {', '.join(bad)}; choose from {', '.join(MASKS)}")
        if unfitted and any(m != "none" for m in self.masks):
            raise InputError(f"mask_channels {', '.join(unfitted)} are not among channels {', '.join(sorted(fitted))}; "
                             "a masked run is compared with the unmasked one")
        if self.lexical not in ("char", "word"):
            raise InputError(f"lexical must be 'char' or 'word', got '{self.lexical}'")
        if self.train_dataset and self.train_dataset in self.auto:
            raise InputError(f"train_dataset {self.train_dataset} is auto-labelled; the channels are fitted on human "
                             "labels")
        if self.zero_division not in (None, 0, 1):
            raise InputError(f"zero_division must be None, 0 or 1, got {self.zero_division!r}")
        for name, value, least in (("n_boot", self.n_boot, 100), ("n_folds", self.n_folds, 2),
                                   ("repeats", self.repeats, 1), ("n_boot_clusters", self.n_boot_clusters, 1),
                                   ("conflicts_per_dataset", self.conflicts_per_dataset, 0)):
            if value < least:
                raise InputError(f"{name} must be at least {least}, got {value}")

    @property
    def undefined_f1(self) -> float:
        """zero_division as the stats functions take it (NaN for None)."""
        return math.nan if self.zero_division is None else float(self.zero_division)
