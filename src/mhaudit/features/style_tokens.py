"""The token view every channel-C family reads: masks, codes, sentences and lexicon hits of one `Parses`.

Everything is an array operation over the flat token columns of `Parses` (codes from one factorisation per
column, `bincount` by document or sentence, a sparse document-by-type count matrix times a type-by-lexicon
matrix); nothing walks tokens in Python. What several families share (sentences, word-type counts, lexicon
hits) is computed once per `Tokens`, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import sparse

from mhaudit.features.style_word_lists import LEXICONS, Lexicon, LexiconHits, load_lexicon, type_matrix
from mhaudit.text.parse import Parses

__all__ = ["div", "factorize", "code_mask", "type_flags", "type_counts", "depths", "Sentences", "Tokens"]


def div(a, b) -> np.ndarray:
    """a / b, 0 where b is 0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    out = np.zeros(np.broadcast(a, b).shape)
    np.divide(a, b, out=out, where=b > 0)
    return out


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes per value and the distinct values (None kept as a value)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def code_mask(codes: np.ndarray, uniques: np.ndarray, wanted) -> np.ndarray:
    """Token mask: the token's value is in `wanted` (decided once per distinct value)."""
    wanted = set(wanted)
    return np.fromiter((u in wanted for u in uniques), dtype=bool, count=len(uniques))[codes]


def type_flags(uniques, fn) -> np.ndarray:
    return np.fromiter((fn(u) for u in uniques), dtype=bool, count=len(uniques))


def type_counts(doc: np.ndarray, codes: np.ndarray, n_docs: int, n_types: int) -> sparse.csr_matrix:
    """Documents x types counts from (doc, type code) pairs of counted tokens (duplicate pairs are summed)."""
    return sparse.csr_matrix((np.ones(doc.size), (doc, codes)), shape=(n_docs, max(n_types, 1)))


def depths(head: np.ndarray) -> np.ndarray:
    """Distance of every token to its sentence root by pointer jumping (log2(depth) array passes)."""
    rows = np.arange(head.size)
    parent = head.copy()
    depth = (parent != rows).astype(np.int64)
    for _ in range(64):
        grand = parent[parent]
        if np.array_equal(grand, parent):
            break
        depth = depth + depth[parent]
        parent = grand
    return depth


@dataclass(frozen=True)
class Sentences:
    """spaCy's sentences; the per-sentence arrays cover the valid ones (with at least one word)."""

    starts: np.ndarray  # first token of every sentence
    sid: np.ndarray  # sentence index of every token
    valid: np.ndarray  # per sentence: it has a word
    doc: np.ndarray  # document of each valid sentence
    length: np.ndarray  # words in each valid sentence
    count: np.ndarray  # valid sentences per document
    first_word: np.ndarray  # first word of each valid sentence
    last_tok: np.ndarray  # last non-space token of each valid sentence
    n_docs: int

    def per_doc(self, w) -> np.ndarray:
        """Sum of a per-sentence value (or mask) by document."""
        return np.bincount(self.doc, weights=np.asarray(w, dtype=np.float64), minlength=self.n_docs)


class Tokens:
    """Token masks and column codes of `Parses` (at least one token in all), for the raw `texts` it parsed."""

    def __init__(self, texts: list[str], p: Parses):
        self.texts, self.parses = texts, p
        self.n = len(p)
        self.N = int(p.offsets[-1])
        self.doc = p.doc_of_token
        self.rows = np.arange(self.N)
        self.head = np.asarray(p["head"], dtype=np.int64)
        self.pos_c, self.pos_u = factorize(p["pos"])
        self.tag_c, self.tag_u = factorize(p["tag"])
        self.dep_c, self.dep_u = factorize(p["dep"])
        self.low_c, self.low_u = factorize(p["lower"])
        self.word_c, self.word_u = factorize(p["word"])
        space = self.is_pos("SPACE") | self.word_flag(lambda w: not w.strip())
        self.tok = ~space
        punct = np.asarray(p["is_punct"], dtype=bool) | self.is_pos("PUNCT", "SYM")
        self.word = self.tok & ~punct
        self.alpha = self.word & np.asarray(p["is_alpha"], dtype=bool)
        self.n_tok, self.n_words = self.per_doc(self.tok), self.per_doc(self.word)
        self.n_alpha = self.per_doc(self.alpha)

    def per_doc(self, mask_or_weights) -> np.ndarray:
        return np.bincount(self.doc, weights=np.asarray(mask_or_weights, dtype=np.float64), minlength=self.n)

    def is_pos(self, *names) -> np.ndarray:
        return code_mask(self.pos_c, self.pos_u, names)

    def tag_is(self, *names) -> np.ndarray:
        return code_mask(self.tag_c, self.tag_u, names)

    def dep_is(self, *names) -> np.ndarray:
        return code_mask(self.dep_c, self.dep_u, names)

    def low_flag(self, fn) -> np.ndarray:
        """Token mask: `fn` of the token's lower-cased form."""
        return type_flags(self.low_u, fn)[self.low_c]

    def word_flag(self, fn) -> np.ndarray:
        """Token mask: `fn` of the token as written."""
        return type_flags(self.word_u, fn)[self.word_c]

    @cached_property
    def sentences(self) -> Sentences:
        p, word = self.parses, self.word
        sent_start = np.asarray(p["sent_start"], dtype=bool).copy()
        sent_start[p.offsets[:-1][p.n_tokens > 0]] = True  # every document starts a sentence
        starts = np.flatnonzero(sent_start)
        sent_len = np.add.reduceat(word.astype(np.int64), starts)
        valid = sent_len > 0
        vs_doc = self.doc[starts][valid]
        return Sentences(
            starts=starts,
            sid=np.cumsum(sent_start) - 1,
            valid=valid,
            doc=vs_doc,
            length=sent_len[valid].astype(np.float64),
            count=np.bincount(vs_doc, minlength=self.n).astype(np.float64),
            first_word=np.minimum.reduceat(np.where(word, self.rows, self.N), starts)[valid],
            last_tok=np.maximum.reduceat(np.where(self.tok, self.rows, -1), starts)[valid],
            n_docs=self.n,
        )

    @cached_property
    def word_types(self) -> sparse.csr_matrix:
        """Documents x lower-cased word types counts."""
        return type_counts(self.doc[self.word], self.low_c[self.word], self.n, len(self.low_u))

    @cached_property
    def lexicon(self) -> LexiconHits:
        lex = load_lexicon()
        member = type_matrix(self.low_u, lex)  # types x lexicons
        lex_counts = (
            np.asarray((self.word_types @ member).todense()) if member.nnz else np.zeros((self.n, len(LEXICONS)))
        )
        total = lex_counts + self._phrase_counts(lex)
        return LexiconHits(total=total, member=member, member_by_lexicon=member.tocsc())

    def in_lexicon(self, name: str) -> np.ndarray:
        """Word mask: the word is a single-word or stem entry of lexicon `name`."""
        return self.lexicon.types_in(name)[self.low_c] & self.word

    def _phrase_counts(self, lex: Lexicon) -> np.ndarray:
        """Per-document counts of multi-word entries: consecutive non-space tokens of one sentence."""
        low_c, low_u = self.low_c, self.low_u
        out = np.zeros((self.n, len(lex.names)))
        rows = np.flatnonzero(self.tok)
        token_codes, sents = low_c[rows], self.sentences.sid[rows]
        for length, table in lex.phrases.items():
            if rows.size < length:
                continue
            firsts = {key.split(" ", 1)[0] for key in table}
            start = type_flags(low_u, lambda w: w in firsts)[token_codes[: rows.size - length + 1]]
            start &= sents[length - 1 :] == sents[: rows.size - length + 1]
            cand = np.flatnonzero(start)
            if cand.size == 0:
                continue
            keys = low_u[token_codes[cand]].astype(object)
            for k in range(1, length):
                keys = keys + " " + low_u[token_codes[cand + k]]
            key_c, key_u = factorize(keys)
            for j, key in enumerate(key_u):
                for k in table.get(key, ()):
                    np.add.at(out[:, k], self.doc[rows[cand[key_c == j]]], 1.0)
        return out
