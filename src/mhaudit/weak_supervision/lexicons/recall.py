"""Recall of a collection filter on a labelled set: how much of the target a lexicon lets the stream show.

`filter_recall(kept, positive)` takes, for each post of a labelled set, whether the filter keeps it and whether
it is a positive, and returns the counts with four proportions (recall, keep share, precision, base rate), each
with its Wilson 95% interval (docs/collect.md, "Recall of the collection"). A proportion of nothing (precision
when nothing is kept) is NaN with the reason in `reason` (docs/statistics.md). A filter is one or more lexicons
joined by "+" ("si+mh"): a post is kept when any of them matches, as the collector's `PostFilter` keeps it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mhaudit.core.errors import InputError
from mhaudit.stats.proportion import wilson_interval
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.weak_supervision.lexicons import Lexicon

__all__ = ["FilterRecall", "filter_name", "filter_recall", "kept_by", "load_filter"]


@dataclass(frozen=True)
class FilterRecall:
    """Counts of one filter on one labelled set, and the proportions they give (`row()`)."""

    n_posts: int
    n_positive: int
    n_kept: int
    n_kept_positive: int

    def proportions(self) -> dict[str, tuple[int, int]]:
        """name -> (numerator, denominator)."""
        return {
            "recall": (self.n_kept_positive, self.n_positive),
            "keep_share": (self.n_kept, self.n_posts),
            "precision": (self.n_kept_positive, self.n_kept),
            "base_rate": (self.n_positive, self.n_posts),
        }

    def row(self) -> dict[str, object]:
        """The counts, each proportion with ci_low / ci_high, and why any is NaN."""
        row: dict[str, object] = {
            "n_posts": self.n_posts,
            "n_positive": self.n_positive,
            "n_kept": self.n_kept,
            "n_kept_positive": self.n_kept_positive,
        }
        reasons = []
        for name, (k, n) in self.proportions().items():
            with quiet_undefined():  # why a proportion is NaN goes into the row's reason
                low, high = wilson_interval(k, n)
            row |= {name: k / n if n else math.nan, f"{name}_ci_low": low, f"{name}_ci_high": high}
            if not n:
                reasons.append(
                    f"{name} is undefined: "
                    + (
                        "the filter keeps no post"
                        if name == "precision"
                        else "there is no positive post"
                        if name == "recall"
                        else "there is no post"
                    )
                )
        row["reason"] = "; ".join(reasons)
        return row


def filter_recall(kept: Sequence[bool] | np.ndarray, positive: Sequence[bool] | np.ndarray) -> FilterRecall:
    """Counts of a filter's decisions (`kept`) against the labels (`positive`), one pair per post."""
    kept_arr, pos_arr = np.asarray(kept, dtype=bool), np.asarray(positive, dtype=bool)
    if kept_arr.shape != pos_arr.shape or kept_arr.ndim != 1:
        raise InputError(
            f"the filter's decisions ({kept_arr.shape}) and the labels ({pos_arr.shape}) must be "
            "two sequences of the same length"
        )
    return FilterRecall(int(kept_arr.size), int(pos_arr.sum()), int(kept_arr.sum()), int((kept_arr & pos_arr).sum()))


def load_filter(spec: str) -> tuple[Lexicon, ...]:
    """The lexicons of a filter named "si", "mh+wide" or "path/to/lexicon.toml" (one lexicon per "+" part)."""
    parts = [part.strip() for part in spec.split("+")]
    if not spec.strip() or not all(parts):
        raise InputError(f"the filter {spec!r} names no lexicon; use e.g. 'mh', 'si+mh' or 'wide'")
    return tuple(Lexicon.load(part) for part in parts)


def filter_name(lexicons: Iterable[Lexicon]) -> str:
    """The filter's name: its lexicons' names in order, joined by "+"."""
    return "+".join(lex.name for lex in lexicons)


def kept_by(lexicons: Sequence[Lexicon], texts: Iterable[str]) -> np.ndarray:
    """Whether each text matches any of the lexicons (what the collector keeps, languages and replies aside)."""
    return np.fromiter((any(lex.matches_any(text) for lex in lexicons) for text in texts), dtype=bool)
