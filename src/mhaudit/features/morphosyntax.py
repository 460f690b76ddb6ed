"""Channel B of the label-source (TSS) audit: six mostly content-free morpho-syntactic features.

The counted tokens of a document start in its first `window` = 500 characters; its patterns are the Penn Treebank
tag bigrams of consecutive counted tokens and the POS-only subject-verb-(object) patterns of its dependency arcs.
Laplace log-odds of each pattern, fitted on labelled documents, give its positive and negative masses; the features
(`B_pos_mass`, `B_neg_mass`, `B_polarity`, `B_density`, `B_load`, `B_abs`) follow the paper's Appendix A.2-A.3.
`fit_transform` cross-fits (each training document is scored with log-odds fitted on the other folds: the released
implementation leaks the labels here); `transform` uses the log-odds fitted on all training documents. Counts sit in
one sparse document x pattern matrix, so each fit is a column sum and each scoring a sparse matrix-vector product.
The formulas, the reading choices and the cross-fitting: docs/channels_ab.md, "Channel B".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.model_selection import KFold, StratifiedKFold

from mhaudit.core.errors import InputError
from mhaudit.features.word_lists import load as load_lexicon
from mhaudit.text.parse import Parses, parses_for

__all__ = [
    "MorphosyntaxChannel",
    "Patterns",
    "extract_patterns",
    "adaptive_lambda",
    "FEATURE_NAMES",
    "SUBJECT_DEPS",
    "OBJECT_DEPS",
]

FEATURE_NAMES = ["B_pos_mass", "B_neg_mass", "B_polarity", "B_density", "B_load", "B_abs"]
SUBJECT_DEPS = ("nsubj", "nsubjpass")
OBJECT_DEPS = ("dobj", "obj", "attr", "acomp", "oprd")
VERB_POS = ("VERB", "AUX")


def adaptive_lambda(L, lambda_min: float = 3.0, lambda_max: float = 20.0, l_ref: float = 50.0) -> np.ndarray:
    """Appendix A.2: lambda = lambda_min + (lambda_max - lambda_min) * min(L / L_ref, 1)."""
    L = np.asarray(L, dtype=np.float64)
    return lambda_min + (lambda_max - lambda_min) * np.minimum(L / l_ref, 1.0)


@dataclass
class Patterns:
    """Pattern occurrences of n documents: occurrence j is pattern `names[code[j]]` in document doc[j].
    `n_tokens` (L) and `n_absolutist` count each document's counted tokens."""

    doc: np.ndarray
    code: np.ndarray
    names: np.ndarray
    n_tokens: np.ndarray
    n_absolutist: np.ndarray

    def counts(self, vocabulary: dict[str, int]) -> sparse.csr_matrix:
        """Document x pattern count matrix over `vocabulary` (name -> column); other patterns dropped."""
        column = np.array([vocabulary.get(name, -1) for name in self.names], dtype=np.int64)
        col = column[self.code] if self.code.size else np.zeros(0, dtype=np.int64)
        known = col >= 0
        return sparse.csr_matrix(
            (np.ones(int(known.sum())), (self.doc[known], col[known])),
            shape=(self.n_tokens.size, len(vocabulary)),
            dtype=np.float64,
        )  # duplicates summed


def _in(values: np.ndarray, allowed) -> np.ndarray:
    return pd.Series(values, dtype=object).isin(set(allowed)).to_numpy()


def extract_patterns(parses: Parses, window: int = 500) -> Patterns:
    """Tag bigrams and POS-only SVO patterns of every document, from the flat token columns."""
    n = len(parses)
    n_rows = int(parses.offsets[-1])
    doc = parses.doc_of_token
    pos, tag, dep, head = parses["pos"], parses["tag"], parses["dep"], np.asarray(parses["head"], dtype=np.int64)
    keep = (np.asarray(parses["idx"]) < window) & (pos != "SPACE")
    n_tokens = np.bincount(doc[keep], minlength=n)
    absolutist = [w for w in load_lexicon("absolutist") if " " not in w]
    n_abs = np.bincount(doc[keep & _in(parses["lower"], absolutist)], minlength=n)

    tag_code, tags = pd.factorize(pd.Series(tag, dtype=object), sort=True)
    tags = np.asarray(tags, dtype=object)
    T = len(tags)

    # Bigrams: consecutive counted rows of the same document.
    rows = np.flatnonzero(keep)
    a, b = rows[:-1], rows[1:]
    same = doc[a] == doc[b]
    a, b = a[same], b[same]
    bigram_key = tag_code[a].astype(np.int64) * T + tag_code[b]

    # SVO: verbs (counted, VERB/AUX) with a counted subject child; leftmost subject / object per verb.
    none = n_rows  # "no such child"
    is_verb = keep & _in(pos, VERB_POS)
    subj_rows = np.flatnonzero(keep & _in(dep, SUBJECT_DEPS))
    subj_rows = subj_rows[is_verb[head[subj_rows]] & (head[subj_rows] != subj_rows)]
    first_subj = np.full(n_rows + 1, none, dtype=np.int64)
    np.minimum.at(first_subj, head[subj_rows], subj_rows)
    verbs = np.flatnonzero(first_subj[:n_rows] < none)
    subjects = first_subj[verbs]

    obj_rows = np.flatnonzero(keep & _in(dep, OBJECT_DEPS))
    first_obj = np.full(n_rows + 1, none, dtype=np.int64)
    np.minimum.at(first_obj, head[obj_rows], obj_rows)
    pobj_rows = np.flatnonzero(keep & (dep == "pobj"))
    preps = head[pobj_rows]
    good = keep[preps] & (dep[preps] == "prep")
    pobj_rows, preps = pobj_rows[good], preps[good]
    first_pobj = np.full(n_rows + 1, none, dtype=np.int64)
    np.minimum.at(first_pobj, head[preps], pobj_rows)
    objects = np.where(first_obj[verbs] < none, first_obj[verbs], first_pobj[verbs])
    has_obj = objects < none
    obj_code = np.where(has_obj, tag_code[np.where(has_obj, objects, 0)], T)
    svo_key = T * T + (tag_code[subjects].astype(np.int64) * T + tag_code[verbs]) * (T + 1) + obj_code

    keys = np.concatenate([bigram_key, svo_key])
    occ_doc = np.concatenate([doc[a], doc[verbs]]).astype(np.int64)
    uniq, code = np.unique(keys, return_inverse=True)
    names = np.array([_name(int(k), tags, T) for k in uniq], dtype=object)
    return Patterns(occ_doc, code.astype(np.int64), names, n_tokens.astype(np.int64), n_abs.astype(np.int64))


def _name(key: int, tags: np.ndarray, T: int) -> str:
    if key < T * T:
        return f"{tags[key // T]}_{tags[key % T]}"
    sv, o = divmod(key - T * T, T + 1)
    s, v = divmod(sv, T)
    return f"SV:{tags[s]}_{tags[v]}" if o == T else f"SVO:{tags[s]}_{tags[v]}_{tags[o]}"


class MorphosyntaxChannel:
    """Channel B: six length-normalised log-odds-mass features, cross-fitted on training documents.

    After fitting: `pattern_names_` (the training patterns), `log_odds_` (fitted on all training
    documents, used by `transform`), `folds_` (the fold ids used for cross-fitting).
    """

    name = "B"

    def __init__(
        self,
        *,
        window: int = 500,
        alpha: float = 1.0,
        n_folds: int = 5,
        seed: int = 0,
        density: str = "mass",
        lambda_min: float = 3.0,
        lambda_max: float = 20.0,
        l_ref: float = 50.0,
        eps: float = 1e-9,
    ):
        if density not in ("mass", "count"):
            raise ValueError(f"density must be 'mass' or 'count', not {density!r}")
        self.window, self.alpha, self.n_folds, self.seed, self.density = window, alpha, n_folds, seed, density
        self.lambda_min, self.lambda_max, self.l_ref, self.eps = lambda_min, lambda_max, l_ref, eps
        self.feature_names = list(FEATURE_NAMES)
        self.pattern_names_: list[str] | None = None
        self.log_odds_: np.ndarray | None = None
        self.seen_: np.ndarray | None = None
        self.folds_: np.ndarray | None = None

    # -- fitting ------------------------------------------------------------------------------------
    def log_odds(self, c1: np.ndarray, c0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Smoothed log-odds of patterns with class counts c1, c0, and which patterns were seen."""
        c1, c0 = np.asarray(c1, dtype=np.float64).ravel(), np.asarray(c0, dtype=np.float64).ravel()
        seen = (c1 + c0) > 0
        V, a = int(seen.sum()), self.alpha
        lo = np.log((c1 + a) / (c1[seen].sum() + a * V)) - np.log((c0 + a) / (c0[seen].sum() + a * V))
        return np.where(seen, lo, 0.0), seen

    def _resolve_folds(self, y: np.ndarray, folds) -> np.ndarray:
        n = y.size
        if folds is not None:
            folds = np.asarray(folds)
            if folds.shape != (n,):
                raise InputError(f"channel B: {n} documents but {folds.size} fold ids")
            if np.unique(folds).size < 2:
                raise InputError("channel B: cross-fitting needs at least two folds")
            return folds.astype(np.int64)
        if n < 2:
            raise InputError("channel B: cross-fitting needs at least two training documents")
        smallest = np.bincount(y, minlength=2).min()
        splitter = (
            StratifiedKFold(min(self.n_folds, int(smallest)), shuffle=True, random_state=self.seed)
            if smallest >= 2
            else KFold(min(self.n_folds, n), shuffle=True, random_state=self.seed)
        )
        out = np.empty(n, dtype=np.int64)
        for f, (_, test) in enumerate(splitter.split(np.zeros(n), y)):
            out[test] = f
        return out

    def fit_transform(self, texts, parses: Parses | None, y, folds=None) -> np.ndarray:
        parses = parses_for(texts, parses, "B")
        y = np.asarray(y).astype(np.int64)
        if y.shape != (len(parses),):
            raise InputError(f"channel B: {len(parses)} documents but {y.size} labels")
        if not np.isin(y, (0, 1)).all():
            raise InputError("channel B: labels must be 0/1")
        pat = extract_patterns(parses, self.window)
        self.pattern_names_ = sorted(str(s) for s in pat.names)  # every extracted name occurs
        counts = pat.counts({s: i for i, s in enumerate(self.pattern_names_)})
        folds = self.folds_ = self._resolve_folds(y, folds)

        pos, neg = y == 1, y == 0
        total1 = np.asarray(counts[pos].sum(axis=0)).ravel()
        total0 = np.asarray(counts[neg].sum(axis=0)).ravel()
        out = np.empty((len(parses), len(FEATURE_NAMES)), dtype=np.float64)
        for f in np.unique(folds):
            held = folds == f
            c1 = total1 - np.asarray(counts[held & pos].sum(axis=0)).ravel()
            c0 = total0 - np.asarray(counts[held & neg].sum(axis=0)).ravel()
            lo, seen = self.log_odds(c1, c0)
            out[held] = self._features(counts[held], lo, seen, pat.n_tokens[held], pat.n_absolutist[held])
        self.log_odds_, self.seen_ = self.log_odds(total1, total0)
        return out

    def transform(self, texts, parses: Parses | None) -> np.ndarray:
        if self.log_odds_ is None or self.seen_ is None or self.pattern_names_ is None:
            raise RuntimeError("channel B is not fitted")
        parses = parses_for(texts, parses, "B")
        pat = extract_patterns(parses, self.window)
        counts = pat.counts({s: i for i, s in enumerate(self.pattern_names_)})
        return self._features(counts, self.log_odds_, self.seen_, pat.n_tokens, pat.n_absolutist)

    # -- scoring ------------------------------------------------------------------------------------
    def _features(
        self, counts: sparse.csr_matrix, lo: np.ndarray, seen: np.ndarray, L: np.ndarray, n_abs: np.ndarray
    ) -> np.ndarray:
        m_pos = counts @ np.maximum(lo, 0.0)
        m_neg = counts @ np.maximum(-lo, 0.0)
        cnt = counts @ seen.astype(np.float64)
        L = L.astype(np.float64)
        l_eff = L + adaptive_lambda(L, self.lambda_min, self.lambda_max, self.l_ref)
        total = m_pos + m_neg
        density = total / l_eff if self.density == "mass" else cnt / l_eff
        return np.column_stack(
            [
                np.log1p(m_pos) / np.log1p(l_eff),
                np.log1p(m_neg) / np.log1p(l_eff),
                m_pos / (total + self.eps),
                density,
                np.log1p(total) / np.maximum(np.log1p(cnt), 1.0),
                n_abs / l_eff,
            ]
        ).astype(np.float64)
