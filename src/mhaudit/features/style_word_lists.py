"""Channel C's word lists: the lexicon names, loading their entries, and which word types each lexicon matches.

Word lists live in `features/word_lists/` (written for this project; LIWC's dictionaries are proprietary).
An entry is a word, a stem ending in `*`, or a multi-word phrase; phrases are matched on token sequences
by `style_tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import sparse

from mhaudit.features import word_lists

__all__ = [
    "EMOTIONS",
    "COGNITIVE",
    "LIWC_CATEGORIES",
    "LEXICONS",
    "PRONOUNS",
    "Lexicon",
    "load_lexicon",
    "type_matrix",
    "LexiconHits",
]

EMOTIONS = (
    "anger",
    "anxiety",
    "sadness",
    "joy",
    "disgust",
    "shame",
    "loneliness",
    "hopelessness",
    "stress",
    "fatigue",
    "affection",
    "calm",
    "gratitude",
)
COGNITIVE = (
    "absolutist",
    "first_singular",
    "first_plural",
    "second_person",
    "third_singular",
    "third_plural",
    "impersonal_pronoun",
    "negation",
    "hedge",
    "certainty",
    "should",
    "catastrophizing",
    "self_criticism",
    "rumination",
)
LIWC_CATEGORIES = (
    "family",
    "friends",
    "romance",
    "work",
    "school",
    "money",
    "health",
    "body",
    "sleep",
    "food",
    "death",
    "home",
    "leisure",
    "religion",
    "time",
    "swear",
    "social",
    "insight",
    "causation",
    "tentative",
    "see",
    "hear",
    "feel",
    "motion",
    "achievement",
    "risk",
    "netspeak",
    "filler",
    "differentiation",
    "future",
)
LEXICONS = ("positive", "negative", *EMOTIONS, "intensifier", *COGNITIVE, *LIWC_CATEGORIES)
PRONOUNS = ("first_singular", "first_plural", "second_person", "third_singular", "third_plural")  # personal


@dataclass(frozen=True)
class Lexicon:
    names: tuple[str, ...]
    exact: dict  # word -> tuple of lexicon indices
    prefix: dict  # stem length -> {stem: tuple of lexicon indices}  (entries "stem*")
    phrases: dict  # n -> {"w1 ... wn": tuple of lexicon indices}


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    exact, prefix, phrases = dict[str, tuple](), dict[int, dict](), dict[int, dict]()  # as Lexicon's fields
    for k, name in enumerate(LEXICONS):
        for entry in word_lists.load(name):
            words = entry.split()
            if len(words) > 1:
                table, key = phrases.setdefault(len(words), {}), " ".join(words)
            elif entry.endswith("*"):
                table, key = prefix.setdefault(len(entry) - 1, {}), entry[:-1]
            else:
                table, key = exact, entry
            table[key] = (*table.get(key, ()), k)
    return Lexicon(LEXICONS, exact, prefix, phrases)


_TYPE_CACHE: dict[str, tuple[int, ...]] = {}


def _categories(word: str, lex: Lexicon) -> tuple[int, ...]:
    hit = _TYPE_CACHE.get(word)
    if hit is None:
        if len(_TYPE_CACHE) > 1_000_000:  # bounded: a long session over many corpora
            _TYPE_CACHE.clear()
        found = set(lex.exact.get(word, ()))
        for length, stems in lex.prefix.items():
            if len(word) >= length and word[:length] in stems:
                found.update(stems[word[:length]])
        hit = _TYPE_CACHE[word] = tuple(sorted(found))
    return hit


def type_matrix(uniques, lex: Lexicon) -> sparse.csr_matrix:
    """Types x lexicons membership (single-word and stem entries)."""
    pairs = np.array([(j, k) for j, word in enumerate(uniques) for k in _categories(word, lex)], dtype=np.int64)
    pairs = pairs.reshape(-1, 2)  # (0, 2) when no type is in a lexicon
    return sparse.csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(uniques), len(lex.names)))


@dataclass(frozen=True)
class LexiconHits:
    """Per-document lexicon counts (words, stems and phrases) and the types x lexicons membership."""

    total: np.ndarray  # documents x LEXICONS counts
    member: sparse.csr_matrix  # types x LEXICONS membership (single-word and stem entries)
    member_by_lexicon: sparse.csc_matrix

    def count(self, name: str) -> np.ndarray:
        return self.total[:, LEXICONS.index(name)]

    def columns(self, names) -> list[int]:
        return [LEXICONS.index(name) for name in names]

    def types_in(self, name: str) -> np.ndarray:
        """Per type: the type is a single-word or stem entry of lexicon `name`."""
        return self.member_by_lexicon[:, LEXICONS.index(name)].toarray().ravel() > 0
