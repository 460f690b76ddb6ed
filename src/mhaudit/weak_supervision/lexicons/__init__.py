"""Lexicon filter for stream collection: which SI / MH terms a post contains, in one regex pass.

A lexicon is a TOML file (`[lexicon]` name, version, description, language; `[categories.<name>]` description,
terms): the built-in `si.toml`, `mh.toml`, `wide.toml`, or one given by path. The matching rules (docs/collect.md,
"Matching rules"): case-insensitive, every apostrophe-like character read as "'", on word boundaries, a space in a
term matching any run of whitespace, no stemming; the whole lexicon is ONE compiled alternation, longest terms
first, so a text is scanned once and of overlapping candidates the leftmost, then the longest, wins.

`Lexicon.sha256` is the SHA-256 of the file's bytes, so a stored post can record exactly which
lexicon matched it (together with `name` and `version`).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mhaudit.core.errors import InputError

__all__ = ["BUILTIN", "Lexicon", "Match", "normalise_apostrophes"]

BUILTIN = ("si", "mh", "wide")

# Every apostrophe-like character maps to ASCII "'" (one character to one, so spans stay valid).
_APOSTROPHES = "\u2019\u2018\u02bc\u201b\u2032`\uff07"
_APOS_TABLE = str.maketrans({c: "'" for c in _APOSTROPHES})
_WS = re.compile(r"\s+")
_WORDCHAR = re.compile(r"\w")


def normalise_apostrophes(text: str) -> str:
    """`text` with every apostrophe-like character replaced by ASCII "'" (same length)."""
    return text.translate(_APOS_TABLE)


def _key(text: str) -> str:
    """Canonical form of a term or of matched text: apostrophes unified, casefolded, single spaces."""
    return _WS.sub(" ", normalise_apostrophes(text).casefold().strip())


def _term_pattern(term: str) -> str:
    return r"\s+".join(re.escape(word) for word in term.split(" "))


@dataclass(frozen=True, slots=True)
class Match:
    """One occurrence of a lexicon term: the term as listed, its category, and (start, end) in the text."""

    term: str
    category: str
    span: tuple[int, int]


class Lexicon:
    """A categorised term list compiled into a single case-insensitive, word-bounded regex."""

    def __init__(
        self,
        name: str,
        version: str,
        categories: dict[str, list[str]],
        *,
        description: str = "",
        sha256: str = "",
        source: str = "<memory>",
    ):
        self.name, self.version, self.description, self.sha256, self.source = name, version, description, sha256, source
        if not categories:
            raise InputError("the lexicon has no categories", path=source)
        self._category_of: dict[str, str] = {}
        cats: dict[str, tuple[str, ...]] = {}
        for category, terms in categories.items():
            if not isinstance(terms, list) or not terms:
                raise InputError(f"category {category!r} has no terms (need a non-empty list)", path=source)
            canon = []
            for raw in terms:
                if not isinstance(raw, str) or not raw.strip():
                    raise InputError(
                        f"category {category!r}: terms must be non-empty strings, got {raw!r}", path=source
                    )
                term = _key(raw)
                if not (_WORDCHAR.match(term[0]) and _WORDCHAR.match(term[-1])):
                    raise InputError(f"term {raw!r} must begin and end with a letter or digit", path=source)
                if term in self._category_of:
                    raise InputError(
                        f"term {raw!r} is listed twice (in {self._category_of[term]!r} "
                        f"and {category!r}); each term belongs to exactly one category",
                        path=source,
                    )
                self._category_of[term] = category
                canon.append(term)
            cats[category] = tuple(canon)
        self.categories_terms: dict[str, tuple[str, ...]] = cats
        ordered = sorted(self._category_of, key=lambda t: (-len(t), t))
        alternation = "|".join(_term_pattern(t) for t in ordered)
        self.pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)

    # ----------------------------------------------------------------------------------- loading
    @classmethod
    def load(cls, which: str | Path) -> Lexicon:
        """A built-in lexicon by name ("si", "mh", "wide") or a TOML file by path."""
        if isinstance(which, str) and which in BUILTIN:
            ref = resources.files(__name__).joinpath(f"{which}.toml")
            data, source = ref.read_bytes(), f"mhaudit.weak_supervision.lexicons/{which}.toml"
        else:
            path = Path(which)
            try:
                data = path.read_bytes()
            except OSError as exc:
                names = ", ".join(repr(b) for b in BUILTIN)
                raise InputError(
                    f"cannot read the lexicon file ({exc.strerror or exc}); built-in lexicons are {names}", path=path
                ) from None
            source = str(path)
        return cls.from_bytes(data, source=source)

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "<memory>") -> Lexicon:
        try:
            doc = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InputError(f"not a valid UTF-8 TOML lexicon: {exc}", path=source) from None
        meta = doc.get("lexicon", {})
        cats = doc.get("categories", {})
        if not isinstance(meta, dict) or not isinstance(cats, dict):
            raise InputError("expected a [lexicon] table and [categories.<name>] tables", path=source)
        for key in ("name", "version"):
            if not isinstance(meta.get(key), str) or not meta[key]:
                raise InputError(f"[lexicon] needs a string {key!r}", path=source)
        terms: dict[str, list[str]] = {}
        for category, table in cats.items():
            if not isinstance(table, dict) or "terms" not in table:
                raise InputError(f"[categories.{category}] needs a 'terms' list", path=source)
            terms[category] = table["terms"]
        return cls(
            meta["name"],
            meta["version"],
            terms,
            description=str(meta.get("description", "")),
            sha256=hashlib.sha256(data).hexdigest(),
            source=source,
        )

    # ---------------------------------------------------------------------------------- matching
    def _lookup(self, matched: str) -> str:
        term = _key(matched)
        if term in self._category_of:
            return term
        # Unicode case folding can let e.g. the Kelvin sign match "k"; find the term the slow way.
        for term in self._category_of:
            if re.fullmatch(_term_pattern(term), matched, re.IGNORECASE):
                return term
        raise AssertionError(f"matched text {matched!r} has no term")  # pragma: no cover

    def match(self, text: str) -> list[Match]:
        """All non-overlapping term occurrences in `text`, left to right."""
        found = ((self._lookup(m.group()), m.span()) for m in self.pattern.finditer(normalise_apostrophes(text)))
        return [Match(term, self._category_of[term], span) for term, span in found]

    def categories(self, text: str) -> set[str]:
        """The categories with at least one term in `text`."""
        return {m.category for m in self.match(text)}

    def matches_any(self, text: str) -> bool:
        """Whether `text` contains any term (stops at the first one)."""
        return self.pattern.search(normalise_apostrophes(text)) is not None

    @property
    def terms(self) -> dict[str, str]:
        """term -> category."""
        return dict(self._category_of)

    def counts(self) -> dict[str, int]:
        """category -> number of terms."""
        return {c: len(t) for c, t in self.categories_terms.items()}

    def __len__(self) -> int:
        return len(self._category_of)

    def __repr__(self) -> str:
        return f"Lexicon({self.name!r}, version={self.version!r}, terms={len(self)}, sha256={self.sha256[:12]}…)"
