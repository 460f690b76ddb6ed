"""Channel C: psycholinguistic style, 154 features in seven families (TSS paper section 4.3, Appendix A.4-A.6).

Families (prefix: count): pos (24) part-of-speech ratios; frag (18) fragmentation and sentence rhythm;
punct (22) punctuation and capitalisation; read (14) readability and length-robust lexical diversity;
emo (20) sentiment and emotion rates; cog (24) cognitive markers (absolutist words, pronouns, dependency
negation scope, hedges, distortions); liwc (32) open LIWC-style category rates. docs/style_features.md
defines every feature.

Everything lexical is read from the parse of the text itself (its `lower` column), so a masked text gives
masked features; punctuation and capitalisation regexes read the raw text (clipped like the parser, to
MAX_CHARS). Features are computed with array operations over the flat token columns of `Parses` (codes
from one factorisation per column, `bincount` by document or sentence, a sparse document-by-type count
matrix times a type-by-lexicon matrix) and with compiled regexes per text; nothing walks tokens in Python.
Word lists live in `features/word_lists/` (written for this project; LIWC's dictionaries are proprietary).

`style_features` returns raw values (ratios, rates per word, counts); `StyleChannel` learns a per-feature
centre and robust spread on training rows and squashes with the paper's tanh(2c) after scaling, so the
squash keeps variation instead of saturating count-like features.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import sparse

from mhaudit.features import word_lists
from mhaudit.text.parse import MAX_CHARS, Parses

__all__ = ["FAMILIES", "FEATURE_NAMES", "LEXICONS", "EMOTIONS", "LIWC_CATEGORIES", "style_features",
           "yule_i", "StyleChannel"]

EPS = 1e-9            # only keeps 0/0 finite (NegBalance, polarity)
YULE_CAP = 1e3        # Appendix A.6: Yule's I capped at 10^3 (also when M2 == M1)
SHORT_BURST = 4       # a sentence of <= 4 words is a short burst
LONG_SENTENCE = 30    # a sentence of >= 30 words is long
ABRUPT = 3.0          # consecutive sentence lengths differing by this factor or more are an abrupt shift
NEG_WINDOW = 3        # a sentiment word is negated when a negator precedes it within 3 tokens (same sentence)
LONG_WORD = 7         # letters in a long word (LIWC's "more than six letters")
_TINY = 1e-12

UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
        "SCONJ", "SYM", "VERB")
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
SUBORDINATE_DEPS = ("advcl", "ccomp", "csubj", "csubjpass", "relcl", "acl", "xcomp")
EMOTIONS = ("anger", "anxiety", "sadness", "joy", "disgust", "shame", "loneliness", "hopelessness", "stress",
            "fatigue", "affection", "calm", "gratitude")
COGNITIVE = ("absolutist", "first_singular", "first_plural", "second_person", "third_singular", "third_plural",
             "impersonal_pronoun", "negation", "hedge", "certainty", "should", "catastrophizing", "self_criticism",
             "rumination")
LIWC_CATEGORIES = ("family", "friends", "romance", "work", "school", "money", "health", "body", "sleep", "food",
                   "death", "home", "leisure", "religion", "time", "swear", "social", "insight", "causation",
                   "tentative", "see", "hear", "feel", "motion", "achievement", "risk", "netspeak", "filler",
                   "differentiation", "future")
LEXICONS = ("positive", "negative", *EMOTIONS, "intensifier", *COGNITIVE, *LIWC_CATEGORIES)
_PRONOUNS = ("first_singular", "first_plural", "second_person", "third_singular", "third_plural")
_CAN = ("ca", "can", "could")

FAMILIES: dict[str, tuple[str, ...]] = {
    "pos": (*(f"pos_{p.lower()}_ratio" for p in UPOS), "pos_past_vbd_ratio", "pos_present_vbp_vbz_ratio",
            "pos_gerund_vbg_ratio", "pos_modal_md_ratio", "pos_possessive_prp_ratio", "pos_wh_word_ratio",
            "pos_past_share_of_finite", "pos_lexical_density"),
    "frag": ("frag_sentence_cv", "frag_short_burst_ratio", "frag_long_sentence_ratio", "frag_rhythm",
             "frag_mean_sentence_len_scaled", "frag_max_sentence_len_ratio", "frag_log_sentence_count",
             "frag_log_word_count", "frag_verbless_sentence_ratio", "frag_initial_conjunction_ratio",
             "frag_clauses_per_sentence", "frag_subordination_per_sentence", "frag_coordination_per_sentence",
             "frag_tree_depth", "frag_dependency_distance", "frag_words_per_clause", "frag_burst_pair_ratio",
             "frag_abrupt_shift_ratio"),
    "punct": ("punct_exclamation_rate", "punct_question_rate", "punct_ellipsis_rate", "punct_repeated_rate",
              "punct_comma_rate", "punct_period_rate", "punct_colon_semicolon_rate", "punct_dash_rate",
              "punct_parenthesis_rate", "punct_quote_rate", "punct_asterisk_rate", "punct_contraction_rate",
              "punct_missing_apostrophe_rate", "punct_missing_space_rate", "punct_allcaps_word_ratio",
              "punct_titlecase_word_ratio", "punct_uppercase_char_ratio", "punct_lowercase_sentence_start_ratio",
              "punct_lowercase_i_ratio", "punct_emoji_emoticon_rate", "punct_elongation_rate",
              "punct_unterminated_sentence_ratio"),
    "read": ("read_syllables_per_word", "read_flesch_ease", "read_long_word_ratio", "read_polysyllable_ratio",
             "read_mean_word_length", "read_word_length_sd", "read_smog_grade", "read_yule_i",
             "read_yule_i_content", "read_yule_k", "read_herdan_c", "read_maas_a2", "read_hapax_ratio",
             "read_dislegomena_ratio"),
    "emo": (*(f"emo_{e}_rate" for e in ("positive", "negative", *EMOTIONS, "intensifier")), "emo_polarity",
            "emo_negated_positive_rate", "emo_negated_negative_rate", "emo_category_diversity"),
    "cog": ("cog_absolutist_ratio", *(f"cog_{p}_ratio" for p in (*_PRONOUNS, "impersonal_pronoun")),
            "cog_self_focus_share", "cog_i_subject_share", "cog_self_description_rate", "cog_neg_verb_count",
            "cog_neg_scope_count", "cog_neg_verb_rate", "cog_neg_adj_rate", "cog_neg_other_rate", "cog_neg_balance",
            "cog_negation_word_rate", "cog_inability_rate",
            *(f"cog_{c}_rate" for c in ("hedge", "certainty", "should", "catastrophizing", "self_criticism",
                                        "rumination"))),
    "liwc": (*(f"liwc_{c}_ratio" for c in LIWC_CATEGORIES), "liwc_category_coverage", "liwc_category_diversity"),
}
FEATURE_NAMES: tuple[str, ...] = tuple(n for names in FAMILIES.values() for n in names)
assert len(FEATURE_NAMES) == 154 == len(set(FEATURE_NAMES))

# -- raw-text counts (family punct) -----------------------------------------------------------------------------
# Patterns start with a literal or a character class (not a look-behind) so the regex engine can skip ahead.
_RX = {
    "ellipsis": re.compile(r"\.{2,}|…"),
    "repeated": re.compile(r"[!?]{2,}"),
    "period": re.compile(r"\.(?<![.\d]\.)(?![.\d])"),               # a lone full stop (not .. nor 3.5)
    "colon_semicolon": re.compile(r"[;:](?=\s|$)"),                   # not the colon of :) or http:
    "dash": re.compile(r"-(?:-+|(?<=\s-)(?=\s))|[—–]+"),              # " - ", "--", an en or em dash
    "parenthesis": re.compile(r"\((?<![:;=]\()"),                      # an opening bracket, not :( or =(
    "asterisk": re.compile(r"\*+"),
    "missing_space": re.compile(r"[,;!?](?=[A-Za-z])|\.(?<=[a-z]\.)\.{0,2}(?=[A-Z])"),
    "elongation": re.compile(r"([A-Za-z])\1{2,}"),                     # sooo, nooo
}
_EMOJI = re.compile("[\U0001F300-\U0001FAFF\U0001F1E6-\U0001F1FF\u2600-\u27BF\u2B50\u2B55]")
# an emoticon stands alone: whitespace before it (a space is prepended to each text) and after it
_EMOTICON = re.compile(r"\s(?:[:;=][-'o*]?[)(\]\[DPp/\\|3@*]+|<3+|[xX][dD]+|\^_*\^|[tT]_[tT]|;_;)(?=\s|$|[.,!?])")
_NO_UPPER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NO_LETTER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _emoji_emoticons(text: str) -> int:
    return (0 if text.isascii() else len(_EMOJI.findall(text))) + len(_EMOTICON.findall(" " + text))


def _text_counts(texts: list[str]) -> dict[str, np.ndarray]:
    """Per-text counts of punctuation, emoticons and letters from the raw text."""
    counters = {
        "exclamation": lambda t: t.count("!"),
        "question": lambda t: t.count("?"),
        "comma": lambda t: t.count(","),
        "quote": lambda t: t.count('"') + t.count("“") + t.count("”"),
        "emoji_emoticon": _emoji_emoticons,
        "upper": lambda t: len(t) - len(t.translate(_NO_UPPER)),
        "letter": lambda t: len(t) - len(t.translate(_NO_LETTER)),
        **{k: (lambda rx: lambda t: len(rx.findall(t)))(rx) for k, rx in _RX.items()},
    }
    n = len(texts)
    return {k: np.fromiter((fn(t) for t in texts), dtype=np.float64, count=n) for k, fn in counters.items()}


_VOWEL_GROUPS = re.compile(r"[aeiouy]+")
_TERMINAL = re.compile(r"^[.!?…]+$")


def _syllables(word: str) -> int:
    """Vowel groups, less a silent final e (not -le, -ee, -ye); at least 1 for any alphabetic word."""
    n = len(_VOWEL_GROUPS.findall(word))
    if n > 1 and word.endswith("e") and not word.endswith(("le", "ee", "ye")):
        n -= 1
    return max(n, 1)


@dataclass(frozen=True)
class _Lexicon:
    names: tuple[str, ...]
    exact: dict            # word -> tuple of lexicon indices
    prefix: dict           # stem length -> {stem: tuple of lexicon indices}  (entries "stem*")
    phrases: dict          # n -> {"w1 ... wn": tuple of lexicon indices}


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    exact, prefix, phrases = {}, {}, {}
    for k, name in enumerate(LEXICONS):
        for entry in word_lists.load(name):
            words = entry.split()
            if len(words) > 1:
                table = phrases.setdefault(len(words), {})
                table[" ".join(words)] = (*table.get(" ".join(words), ()), k)
            elif entry.endswith("*"):
                stem = entry[:-1]
                table = prefix.setdefault(len(stem), {})
                table[stem] = (*table.get(stem, ()), k)
            else:
                exact[entry] = (*exact.get(entry, ()), k)
    return _Lexicon(LEXICONS, exact, prefix, phrases)


_TYPE_CACHE: dict[str, tuple[int, ...]] = {}


def _categories(word: str, lex: _Lexicon) -> tuple[int, ...]:
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


def _type_matrix(uniques, lex: _Lexicon) -> sparse.csr_matrix:
    """Types x lexicons membership (single-word and stem entries)."""
    rows, cols = [], []
    for j, word in enumerate(uniques):
        for k in _categories(word, lex):
            rows.append(j)
            cols.append(k)
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(uniques), len(lex.names)))


def _div(a, b) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    out = np.zeros(np.broadcast(a, b).shape)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _code_mask(codes: np.ndarray, uniques: np.ndarray, wanted) -> np.ndarray:
    """Token mask: the token's value is in `wanted` (decided once per distinct value)."""
    wanted = set(wanted)
    return np.fromiter((u in wanted for u in uniques), dtype=bool, count=len(uniques))[codes]


def _type_flags(uniques, fn) -> np.ndarray:
    return np.fromiter((fn(u) for u in uniques), dtype=bool, count=len(uniques))


def yule_i(frequencies) -> float:
    """Yule's I = M1^2 / (M2 - M1) as Appendix A.6: M1 the number of types, M2 the sum of squared type
    frequencies; capped at 1e3, also when M2 == M1 (every type a hapax); 0 without tokens."""
    f = np.asarray(frequencies, dtype=np.float64)
    f = f[f > 0]
    if f.size == 0:
        return 0.0
    m1, m2 = float(f.size), float((f ** 2).sum())
    return YULE_CAP if m2 <= m1 else min(m1 ** 2 / (m2 - m1), YULE_CAP)


def _diversity(doc: np.ndarray, codes: np.ndarray, n_docs: int, n_types: int) -> dict[str, np.ndarray]:
    """Type-frequency statistics per document from (doc, type code) pairs of counted tokens."""
    counts = sparse.csr_matrix((np.ones(doc.size), (doc, codes)), shape=(n_docs, max(n_types, 1)))
    counts.sum_duplicates()
    f = counts.data
    row = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    v = np.bincount(row, minlength=n_docs).astype(np.float64)
    n = np.bincount(row, weights=f, minlength=n_docs)
    m2 = np.bincount(row, weights=f ** 2, minlength=n_docs)
    hapax = np.bincount(row, weights=(f == 1), minlength=n_docs)
    dis = np.bincount(row, weights=(f == 2), minlength=n_docs)
    yule = np.where(m2 > v, np.minimum(_div(v ** 2, m2 - v), YULE_CAP), YULE_CAP)
    yule[v == 0] = 0.0
    return {"v": v, "n": n, "m2": m2, "hapax": hapax, "dis": dis, "yule": yule, "counts": counts}


def style_features(texts, parses: Parses) -> np.ndarray:
    """Raw channel-C features, shape (n, 154), float64, columns in FEATURE_NAMES order.

    `texts` are the documents `parses` was computed from (same order). Documents without tokens get
    zeros; no value is NaN or infinite."""
    texts = [str(t)[:MAX_CHARS] for t in texts]
    n = len(parses)
    if len(texts) != n:
        raise ValueError(f"{len(texts)} texts but {n} parsed documents")
    out = np.zeros((n, len(FEATURE_NAMES)))
    if n == 0 or int(parses.offsets[-1]) == 0:
        return out
    feats = _compute(texts, parses)
    missing = set(FEATURE_NAMES) - set(feats)
    extra = set(feats) - set(FEATURE_NAMES)
    if missing or extra:  # pragma: no cover - a programming error
        raise RuntimeError(f"style features out of sync: missing {sorted(missing)}, extra {sorted(extra)}")
    for j, name in enumerate(FEATURE_NAMES):
        out[:, j] = feats[name]
    out[~np.isfinite(out)] = 0.0
    out[parses.n_tokens == 0] = 0.0
    return out


def _compute(texts: list[str], p: Parses) -> dict[str, np.ndarray]:
    n = len(p)
    N = int(p.offsets[-1])
    doc = p.doc_of_token
    rows = np.arange(N)
    head = np.asarray(p["head"], dtype=np.int64)
    pos_c, pos_u = _codes(p["pos"])
    tag_c, tag_u = _codes(p["tag"])
    dep_c, dep_u = _codes(p["dep"])
    low_c, low_u = _codes(p["lower"])
    word_c, word_u = _codes(p["word"])
    pos_is = {u: pos_c == j for j, u in enumerate(pos_u)}
    none = np.zeros(N, dtype=bool)

    def is_pos(*names):
        m = none.copy()
        for name in names:
            m |= pos_is.get(name, none)
        return m

    def per_doc(mask_or_weights) -> np.ndarray:
        return np.bincount(doc, weights=np.asarray(mask_or_weights, dtype=np.float64), minlength=n)

    space = is_pos("SPACE") | _type_flags(word_u, lambda w: not w.strip())[word_c]
    tok = ~space
    punct = np.asarray(p["is_punct"], dtype=bool) | is_pos("PUNCT", "SYM")
    word = tok & ~punct
    alpha = word & np.asarray(p["is_alpha"], dtype=bool)
    n_tok, n_words, n_alpha = per_doc(tok), per_doc(word), per_doc(alpha)
    f: dict[str, np.ndarray] = {}

    # -- sentences -----------------------------------------------------------------------------------------
    sent_start = np.asarray(p["sent_start"], dtype=bool).copy()
    sent_start[p.offsets[:-1][p.n_tokens > 0]] = True  # every document starts a sentence
    starts = np.flatnonzero(sent_start)
    sid = np.cumsum(sent_start) - 1
    sent_doc = doc[starts]
    sent_len = np.add.reduceat(word.astype(np.int64), starts)
    valid = sent_len > 0
    vs_doc, vs_len = sent_doc[valid], sent_len[valid].astype(np.float64)
    n_sent = np.bincount(vs_doc, minlength=n).astype(np.float64)
    per_sent_doc = lambda w: np.bincount(vs_doc, weights=np.asarray(w, dtype=np.float64), minlength=n)  # noqa: E731
    mean_len = _div(per_sent_doc(vs_len), n_sent)
    sq_dev = (vs_len - mean_len[vs_doc]) ** 2
    sd_len = np.sqrt(_div(per_sent_doc(sq_dev), n_sent))
    multi = n_sent >= 2
    same_prev = np.concatenate([[False], vs_doc[1:] == vs_doc[:-1]])
    diff_prev = np.abs(np.diff(vs_len, prepend=0.0))
    ratio_prev = np.maximum(vs_len, np.roll(vs_len, 1)) / np.maximum(np.minimum(vs_len, np.roll(vs_len, 1)), 1)
    max_len = np.zeros(n)
    np.maximum.at(max_len, vs_doc, vs_len)
    short = vs_len <= SHORT_BURST

    has_verb = np.add.reduceat(is_pos("VERB", "AUX").astype(np.int64), starts)[valid] > 0
    # first and last non-space token of each sentence / first word of each sentence
    first_word = np.minimum.reduceat(np.where(word, rows, N), starts)[valid]
    last_tok = np.maximum.reduceat(np.where(tok, rows, -1), starts)[valid]

    f["frag_sentence_cv"] = np.where(multi, _div(sd_len, mean_len), 0.0)
    f["frag_short_burst_ratio"] = _div(per_sent_doc(short), n_sent)
    f["frag_long_sentence_ratio"] = _div(per_sent_doc(vs_len >= LONG_SENTENCE), n_sent)
    f["frag_rhythm"] = np.where(multi, _div(_div(per_sent_doc(diff_prev * same_prev), n_sent - 1), mean_len), 0.0)
    f["frag_mean_sentence_len_scaled"] = mean_len / 20.0
    f["frag_max_sentence_len_ratio"] = _div(max_len, mean_len)
    f["frag_log_sentence_count"] = np.log1p(n_sent)
    f["frag_log_word_count"] = np.log1p(n_words)
    f["frag_verbless_sentence_ratio"] = _div(per_sent_doc(~has_verb), n_sent)
    cconj = is_pos("CCONJ")
    f["frag_initial_conjunction_ratio"] = _div(per_sent_doc(cconj[first_word]), n_sent)
    dep_is = lambda *names: _code_mask(dep_c, dep_u, names)  # noqa: E731
    aux_dep = dep_is("aux", "auxpass")
    clause = is_pos("VERB", "AUX") & ~aux_dep
    n_clause = per_doc(clause)
    f["frag_clauses_per_sentence"] = _div(n_clause, n_sent)
    f["frag_subordination_per_sentence"] = _div(per_doc(dep_is(*SUBORDINATE_DEPS)), n_sent)
    f["frag_coordination_per_sentence"] = _div(per_doc(dep_is("cc")), n_sent)
    depth = _depths(head)
    sent_depth = np.maximum.reduceat(depth, starts)[valid]
    f["frag_tree_depth"] = _div(per_sent_doc(sent_depth), n_sent)
    arc = word & (head != rows)
    f["frag_dependency_distance"] = _div(per_doc(np.abs(rows - head) * arc), per_doc(arc))
    f["frag_words_per_clause"] = _div(n_words, n_clause)
    # bursts in a row: consecutive sentence pairs of one document that are both short bursts
    short_pair = short & np.roll(short, 1) & same_prev
    f["frag_burst_pair_ratio"] = np.where(multi, _div(per_sent_doc(short_pair), n_sent - 1), 0.0)
    f["frag_abrupt_shift_ratio"] = np.where(multi, _div(per_sent_doc((ratio_prev >= ABRUPT) & same_prev),
                                                        n_sent - 1), 0.0)

    # -- part of speech ------------------------------------------------------------------------------------
    for name in UPOS:
        f[f"pos_{name.lower()}_ratio"] = _div(per_doc(is_pos(name)), n_tok)
    tag_is = lambda *names: _code_mask(tag_c, tag_u, names)  # noqa: E731
    vbd, present = tag_is("VBD"), tag_is("VBP", "VBZ")
    f["pos_past_vbd_ratio"] = _div(per_doc(vbd), n_tok)
    f["pos_present_vbp_vbz_ratio"] = _div(per_doc(present), n_tok)
    f["pos_gerund_vbg_ratio"] = _div(per_doc(tag_is("VBG")), n_tok)
    f["pos_modal_md_ratio"] = _div(per_doc(tag_is("MD")), n_tok)
    f["pos_possessive_prp_ratio"] = _div(per_doc(tag_is("PRP$")), n_tok)
    f["pos_wh_word_ratio"] = _div(per_doc(tag_is("WDT", "WP", "WP$", "WRB")), n_tok)
    f["pos_past_share_of_finite"] = _div(per_doc(vbd), per_doc(vbd | present))
    f["pos_lexical_density"] = _div(per_doc(is_pos(*CONTENT_POS) & word), n_words)

    # -- punctuation and capitalisation ---------------------------------------------------------------------
    counts = _text_counts(texts)
    for k in ("exclamation", "question", "ellipsis", "repeated", "comma", "period", "colon_semicolon", "dash",
              "parenthesis", "quote", "asterisk", "missing_space", "emoji_emoticon", "elongation"):
        f[f"punct_{k}_rate"] = _div(counts[k], n_words)
    low_flag = lambda fn: _type_flags(low_u, fn)[low_c]  # noqa: E731
    possessive = tag_is("POS")
    clitic = low_flag(lambda w: w in ("n't", "n’t") or (len(w) > 1 and w[0] in "'’" and w[1:].isalpha()))
    f["punct_contraction_rate"] = _div(per_doc(clitic & word & ~possessive), n_words)
    bare = low_flag(lambda w: w in ("nt", "m", "ve", "re", "ll", "s", "d"))
    space_after = np.asarray(p["space_after"], dtype=bool)
    same_doc_prev = np.concatenate([[False], doc[1:] == doc[:-1]])
    prev_glued = np.concatenate([[False], ~space_after[:-1] & alpha[:-1]]) & same_doc_prev
    f["punct_missing_apostrophe_rate"] = _div(per_doc(bare & prev_glued & word), n_words)
    word_flag = lambda fn: _type_flags(word_u, fn)[word_c]  # noqa: E731
    allcaps = alpha & word_flag(lambda w: len(w) >= 2 and w.isupper())
    f["punct_allcaps_word_ratio"] = _div(per_doc(allcaps), n_words)
    is_i = low_flag(lambda w: w == "i")
    sentence_first = np.zeros(N, dtype=bool)
    sentence_first[first_word] = True
    title = alpha & word_flag(lambda w: len(w) >= 2 and w.istitle()) & ~sentence_first & ~is_i
    f["punct_titlecase_word_ratio"] = _div(per_doc(title), n_words)
    f["punct_uppercase_char_ratio"] = _div(counts["upper"], counts["letter"])
    starts_lower = word_flag(lambda w: w[:1].islower())
    f["punct_lowercase_sentence_start_ratio"] = _div(per_sent_doc(starts_lower[first_word]), n_sent)
    lower_i = is_i & word_flag(lambda w: w == "i")
    f["punct_lowercase_i_ratio"] = _div(per_doc(lower_i), per_doc(is_i))
    terminal = low_flag(lambda w: bool(_TERMINAL.match(w)))
    f["punct_unterminated_sentence_ratio"] = _div(per_sent_doc(~terminal[last_tok]), n_sent)

    # -- readability and lexical diversity -----------------------------------------------------------------
    syl_u = np.fromiter((_syllables(w) if w.isalpha() else 0 for w in low_u), dtype=np.float64, count=len(low_u))
    len_u = np.fromiter((len(w) for w in low_u), dtype=np.float64, count=len(low_u))
    syl, wlen = syl_u[low_c] * alpha, len_u[low_c] * alpha
    syl_per_word = _div(per_doc(syl), n_alpha)
    words_per_sent = _div(n_alpha, n_sent)
    has_alpha = n_alpha > 0
    f["read_syllables_per_word"] = syl_per_word
    f["read_flesch_ease"] = np.where(has_alpha, 206.835 - 1.015 * words_per_sent - 84.6 * syl_per_word, 0.0)
    f["read_long_word_ratio"] = _div(per_doc(wlen >= LONG_WORD), n_alpha)
    polysyllables = per_doc(syl >= 3)
    f["read_polysyllable_ratio"] = _div(polysyllables, n_alpha)
    mean_wlen = _div(per_doc(wlen), n_alpha)
    f["read_mean_word_length"] = mean_wlen
    f["read_word_length_sd"] = np.sqrt(np.maximum(_div(per_doc(wlen ** 2), n_alpha) - mean_wlen ** 2, 0.0))
    f["read_smog_grade"] = np.where(has_alpha, 1.0430 * np.sqrt(_div(polysyllables * 30.0, n_sent)) + 3.1291, 0.0)
    div = _diversity(doc[word], low_c[word], n, len(low_u))
    content = word & is_pos(*CONTENT_POS)
    f["read_yule_i"] = div["yule"]
    f["read_yule_i_content"] = _diversity(doc[content], low_c[content], n, len(low_u))["yule"]
    v, ntok = div["v"], div["n"]
    f["read_yule_k"] = 1e4 * _div(div["m2"] - ntok, ntok ** 2)
    log_n, log_v = np.log(np.maximum(ntok, 1)), np.log(np.maximum(v, 1))
    f["read_herdan_c"] = np.where(ntok >= 2, _div(log_v, log_n), np.where(ntok == 1, 1.0, 0.0))
    f["read_maas_a2"] = np.where(ntok >= 2, _div(log_n - log_v, log_n ** 2), 0.0)
    f["read_hapax_ratio"] = _div(div["hapax"], v)
    f["read_dislegomena_ratio"] = _div(div["dis"], v)

    # -- lexicons ------------------------------------------------------------------------------------------
    lex = _lexicon()
    member = _type_matrix(low_u, lex)                         # types x lexicons
    lex_counts = np.asarray((div["counts"] @ member).todense()) if member.nnz else np.zeros((n, len(LEXICONS)))
    phrase_counts = _phrase_counts(lex, low_c, low_u, tok, doc, sid, n)
    total = lex_counts + phrase_counts
    col = {name: k for k, name in enumerate(LEXICONS)}
    count = lambda name: total[:, col[name]]  # noqa: E731
    rate = lambda name: _div(count(name), n_words)  # noqa: E731
    member_dense = member.tocsc()
    token_in = lambda name: (member_dense[:, col[name]].toarray().ravel() > 0)[low_c] & word  # noqa: E731

    for name in ("positive", "negative", *EMOTIONS, "intensifier"):
        f[f"emo_{name}_rate"] = rate(name)
    f["emo_polarity"] = (count("positive") - count("negative")) / (count("positive") + count("negative") + EPS)
    negator = token_in("negation")
    negated = none.copy()
    for k in range(1, NEG_WINDOW + 1):
        negated[k:] |= negator[:-k] & (sid[k:] == sid[:-k])
    f["emo_negated_positive_rate"] = _div(per_doc(token_in("positive") & negated), n_words)
    f["emo_negated_negative_rate"] = _div(per_doc(token_in("negative") & negated), n_words)
    f["emo_category_diversity"] = (total[:, [col[e] for e in EMOTIONS]] > 0).sum(axis=1) / len(EMOTIONS)

    f["cog_absolutist_ratio"] = rate("absolutist")
    for name in (*_PRONOUNS, "impersonal_pronoun"):
        f[f"cog_{name}_ratio"] = rate(name)
    personal = sum(count(name) for name in _PRONOUNS)
    f["cog_self_focus_share"] = _div(count("first_singular"), personal)
    subject = dep_is("nsubj", "nsubjpass")
    i_subject = subject & is_i
    f["cog_i_subject_share"] = _div(per_doc(i_subject), per_doc(subject))
    head_has_i_subject = np.zeros(N, dtype=bool)
    head_has_i_subject[head[i_subject]] = True
    adj = is_pos("ADJ")
    predicative_adj = dep_is("acomp") & adj
    f["cog_self_description_rate"] = _div(per_doc(predicative_adj & head_has_i_subject[head]), n_words)

    # negation scope from dependency arcs (Appendix A.4; docs/style_features.md explains the reading)
    neg = dep_is("neg")
    has_adj_complement = np.zeros(N, dtype=bool)
    has_adj_complement[head[predicative_adj]] = True
    has_attr = np.zeros(N, dtype=bool)
    has_attr[head[dep_is("attr")]] = True
    aux = is_pos("AUX")
    verbal = is_pos("VERB") | aux
    target_adj = adj | (aux & has_adj_complement)               # "not happy", "am not happy"
    target_other = aux & has_attr & ~has_adj_complement         # "am not a failure": a nominal predicate
    neg_adj = neg & target_adj[head]
    neg_verb = neg & verbal[head] & ~target_adj[head] & ~target_other[head]
    neg_other = neg & ~neg_adj & ~neg_verb
    n_neg_verb, n_neg_adj = per_doc(neg_verb), per_doc(neg_adj)
    f["cog_neg_verb_count"] = n_neg_verb
    f["cog_neg_scope_count"] = n_neg_verb + n_neg_adj   # NegBalance's denominator N_neg_verb + N_neg_adj
    f["cog_neg_verb_rate"] = _div(n_neg_verb, n_words)
    f["cog_neg_adj_rate"] = _div(n_neg_adj, n_words)
    f["cog_neg_other_rate"] = _div(per_doc(neg_other), n_words)
    f["cog_neg_balance"] = (n_neg_verb - n_neg_adj) / (n_neg_verb + n_neg_adj + EPS)
    f["cog_negation_word_rate"] = rate("negation")
    can = _code_mask(low_c, low_u, _CAN)
    head_has_can = np.zeros(N, dtype=bool)
    head_has_can[head[can & aux_dep]] = True
    head_has_can |= can                                          # "I can't." : the modal is the head
    f["cog_inability_rate"] = _div(per_doc(neg & head_has_can[head]), n_words)
    for name in ("hedge", "certainty", "should", "catastrophizing", "self_criticism", "rumination"):
        f[f"cog_{name}_rate"] = rate(name)

    liwc_cols = [col[c] for c in LIWC_CATEGORIES]
    for c in LIWC_CATEGORIES:
        f[f"liwc_{c}_ratio"] = rate(c)
    in_any = (np.asarray(member[:, liwc_cols].sum(axis=1)).ravel() > 0)[low_c] & word
    f["liwc_category_coverage"] = _div(per_doc(in_any), n_words)
    f["liwc_category_diversity"] = (total[:, liwc_cols] > 0).sum(axis=1) / len(LIWC_CATEGORIES)
    return f


def _depths(head: np.ndarray) -> np.ndarray:
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


def _phrase_counts(lex: _Lexicon, low_c, low_u, tok, doc, sid, n_docs) -> np.ndarray:
    """Per-document counts of multi-word entries: consecutive non-space tokens of one sentence."""
    out = np.zeros((n_docs, len(lex.names)))
    rows = np.flatnonzero(tok)
    codes, sents = low_c[rows], sid[rows]
    for length, table in lex.phrases.items():
        if rows.size < length:
            continue
        firsts = {key.split(" ", 1)[0] for key in table}
        start = _type_flags(low_u, lambda w: w in firsts)[codes[: rows.size - length + 1]]
        start &= sents[length - 1:] == sents[: rows.size - length + 1]
        cand = np.flatnonzero(start)
        if cand.size == 0:
            continue
        keys = low_u[codes[cand]].astype(object)
        for k in range(1, length):
            keys = keys + " " + low_u[codes[cand + k]]
        key_c, key_u = _codes(keys)
        hits = [(j, k) for j, key in enumerate(key_u) for k in table.get(key, ())]
        for j, k in hits:
            matched = cand[key_c == j]
            np.add.at(out[:, k], doc[rows[matched]], 1.0)
    return out


class StyleChannel:
    """Channel C: raw style features, scaled per feature on training rows, then squashed with tanh(2c).

    The paper squashes raw values with c_out = tanh(2c); raw counts and rates then saturate (its released
    version had Yule's I = 1 for 99.7% of long posts). Here each feature is first centred by its training
    median and divided by a robust spread, so tanh(2c) keeps variation around the typical training value:
    IQR / 1.349 (the normal-consistent IQR: a quartile row maps to tanh(2 * 0.674) = 0.87). When the IQR
    is 0 (a sparse feature: over half the rows sit at the median, usually 0) the spread is 1.4826 times
    the median absolute deviation of the rows that differ from the median, so a typical occurrence also
    maps to 0.87 instead of being pushed to 1 (the standard deviation of a sparse feature is small next to
    its non-zero values); 1 when every training row is equal.
    """

    name = "C"

    def __init__(self):
        self.feature_names: list[str] = list(FEATURE_NAMES)
        self.center_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None

    # -- array level --------------------------------------------------------------------------------------
    def fit_raw(self, raw) -> StyleChannel:
        """Learn the per-feature centre and spread from raw training rows (n, 154)."""
        raw = self._check(raw)
        if raw.shape[0] == 0:
            raise ValueError("channel C needs at least one training row to fit its scaling")
        q1, med, q3 = np.percentile(raw, [25, 50, 75], axis=0)
        scale = (q3 - q1) / 1.349
        for j in np.flatnonzero(~(scale > _TINY)):
            deviation = np.abs(raw[:, j] - med[j])
            deviation = deviation[deviation > _TINY]
            scale[j] = 1.4826 * np.median(deviation) if deviation.size else 0.0
        self.center_, self.scale_ = med, np.where(scale > _TINY, scale, 1.0)
        return self

    def squash(self, raw) -> np.ndarray:
        """tanh(2 * (raw - centre) / spread), shape (n, 154)."""
        if self.center_ is None:
            raise RuntimeError("StyleChannel is not fitted: call fit_raw or fit_transform first")
        raw = self._check(raw)
        return np.tanh(2.0 * (raw - self.center_) / self.scale_)

    # -- text level (the signature every channel shares) -------------------------------------------------
    def fit_transform(self, texts, parses: Parses | None, y=None, folds=None) -> np.ndarray:
        """Raw features of the training texts, fit the scaling on them, return them squashed.
        `y` and `folds` are unused (channel C learns no label-dependent parameters). `parses` None:
        parse `texts` here (through the shared cache)."""
        raw = style_features(texts, self._parses(texts, parses))
        return self.fit_raw(raw).squash(raw)

    def transform(self, texts, parses: Parses | None) -> np.ndarray:
        """Squashed features of any documents with the scaling fitted on the training rows."""
        return self.squash(style_features(texts, self._parses(texts, parses)))

    @staticmethod
    def _parses(texts, parses: Parses | None) -> Parses:
        if parses is None:
            from mhaudit.text.parse import parse_texts
            return parse_texts([str(t) for t in texts])
        return parses

    @staticmethod
    def _check(raw) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != len(FEATURE_NAMES):
            raise ValueError(f"expected raw channel-C features of shape (n, {len(FEATURE_NAMES)}), got {raw.shape}")
        return raw
