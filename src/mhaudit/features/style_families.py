"""The seven channel-C feature families, one function each: `Tokens` in, {feature name: value per document} out.

`style.FAMILY_FUNCTIONS` runs them in `style.FAMILIES` order; docs/style_features.md defines every feature.
Lexical features read the parse (its `lower` column); punctuation and capitalisation regexes read the raw
text, clipped like the parser.
"""

from __future__ import annotations

import re

import numpy as np

from mhaudit.features.style_tokens import Tokens, code_mask, depths, div, type_counts
from mhaudit.features.style_word_lists import EMOTIONS, LIWC_CATEGORIES, PRONOUNS

__all__ = [
    "EPS",
    "YULE_CAP",
    "UPOS",
    "TAG_RATIOS",
    "pos_ratios",
    "fragmentation",
    "punctuation",
    "readability",
    "emotion",
    "cognitive_markers",
    "liwc_categories",
]

EPS = 1e-9  # only keeps 0/0 finite (NegBalance, polarity)
YULE_CAP = 1e3  # Appendix A.6: Yule's I capped at 10^3 (also when M2 == M1)
SHORT_BURST = 4  # a sentence of <= 4 words is a short burst
LONG_SENTENCE = 30  # a sentence of >= 30 words is long
ABRUPT = 3.0  # consecutive sentence lengths differing by this factor or more are an abrupt shift
NEG_WINDOW = 3  # a sentiment word is negated when a negator precedes it within 3 tokens (same sentence)
LONG_WORD = 7  # letters in a long word (LIWC's "more than six letters")

UPOS = (
    "ADJ",
    "ADP",
    "ADV",
    "AUX",
    "CCONJ",
    "DET",
    "INTJ",
    "NOUN",
    "NUM",
    "PART",
    "PRON",
    "PROPN",
    "PUNCT",
    "SCONJ",
    "SYM",
    "VERB",
)
TAG_RATIOS = {
    "past_vbd": ("VBD",),
    "present_vbp_vbz": ("VBP", "VBZ"),
    "gerund_vbg": ("VBG",),
    "modal_md": ("MD",),
    "possessive_prp": ("PRP$",),
    "wh_word": ("WDT", "WP", "WP$", "WRB"),
}  # pos_<name>_ratio: Penn tags
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
SUBORDINATE_DEPS = ("advcl", "ccomp", "csubj", "csubjpass", "relcl", "acl", "xcomp")
_CAN = ("ca", "can", "could")

Features = dict[str, np.ndarray]


# -- pos: part-of-speech ratios ------------------------------------------------------------------------------
def pos_ratios(t: Tokens) -> Features:
    f = {f"pos_{name.lower()}_ratio": div(t.per_doc(t.is_pos(name)), t.n_tok) for name in UPOS}
    f.update({f"pos_{name}_ratio": div(t.per_doc(t.tag_is(*tags)), t.n_tok) for name, tags in TAG_RATIOS.items()})
    vbd, present = t.tag_is("VBD"), t.tag_is("VBP", "VBZ")
    f["pos_past_share_of_finite"] = div(t.per_doc(vbd), t.per_doc(vbd | present))
    f["pos_lexical_density"] = div(t.per_doc(t.is_pos(*CONTENT_POS) & t.word), t.n_words)
    return f


# -- frag: fragmentation and sentence rhythm -------------------------------------------------------------------
def fragmentation(t: Tokens) -> Features:
    return {**_sentence_rhythm(t), **_clause_structure(t)}


def _sentence_rhythm(t: Tokens) -> Features:
    """Features of the sequence of sentence lengths."""
    s = t.sentences
    vs_doc, vs_len, n_sent = s.doc, s.length, s.count
    mean_len = div(s.per_doc(vs_len), n_sent)
    sq_dev = (vs_len - mean_len[vs_doc]) ** 2
    sd_len = np.sqrt(div(s.per_doc(sq_dev), n_sent))
    multi = n_sent >= 2
    same_prev = np.concatenate([[False], vs_doc[1:] == vs_doc[:-1]])
    diff_prev = np.abs(np.diff(vs_len, prepend=0.0))
    ratio_prev = np.maximum(vs_len, np.roll(vs_len, 1)) / np.maximum(np.minimum(vs_len, np.roll(vs_len, 1)), 1)
    max_len = np.zeros(t.n)
    np.maximum.at(max_len, vs_doc, vs_len)
    short = vs_len <= SHORT_BURST
    # bursts in a row: consecutive sentence pairs of one document that are both short bursts
    short_pair = short & np.roll(short, 1) & same_prev
    return {
        "frag_sentence_cv": np.where(multi, div(sd_len, mean_len), 0.0),
        "frag_short_burst_ratio": div(s.per_doc(short), n_sent),
        "frag_long_sentence_ratio": div(s.per_doc(vs_len >= LONG_SENTENCE), n_sent),
        "frag_rhythm": np.where(multi, div(div(s.per_doc(diff_prev * same_prev), n_sent - 1), mean_len), 0.0),
        "frag_mean_sentence_len_scaled": mean_len / 20.0,
        "frag_max_sentence_len_ratio": div(max_len, mean_len),
        "frag_log_sentence_count": np.log1p(n_sent),
        "frag_log_word_count": np.log1p(t.n_words),
        "frag_burst_pair_ratio": np.where(multi, div(s.per_doc(short_pair), n_sent - 1), 0.0),
        "frag_abrupt_shift_ratio": np.where(multi, div(s.per_doc((ratio_prev >= ABRUPT) & same_prev), n_sent - 1), 0.0),
    }


def _clause_structure(t: Tokens) -> Features:
    """Verbless sentences, clauses and the dependency tree."""
    s = t.sentences
    n_sent = s.count
    has_verb = np.add.reduceat(t.is_pos("VERB", "AUX").astype(np.int64), s.starts)[s.valid] > 0
    clause = t.is_pos("VERB", "AUX") & ~t.dep_is("aux", "auxpass")
    n_clause = t.per_doc(clause)
    sent_depth = np.maximum.reduceat(depths(t.head), s.starts)[s.valid]
    arc = t.word & (t.head != t.rows)
    return {
        "frag_verbless_sentence_ratio": div(s.per_doc(~has_verb), n_sent),
        "frag_initial_conjunction_ratio": div(s.per_doc(t.is_pos("CCONJ")[s.first_word]), n_sent),
        "frag_clauses_per_sentence": div(n_clause, n_sent),
        "frag_subordination_per_sentence": div(t.per_doc(t.dep_is(*SUBORDINATE_DEPS)), n_sent),
        "frag_coordination_per_sentence": div(t.per_doc(t.dep_is("cc")), n_sent),
        "frag_tree_depth": div(s.per_doc(sent_depth), n_sent),
        "frag_dependency_distance": div(t.per_doc(np.abs(t.rows - t.head) * arc), t.per_doc(arc)),
        "frag_words_per_clause": div(t.n_words, n_clause),
    }


# -- punct: punctuation and capitalisation ---------------------------------------------------------------------
# Patterns start with a literal or a character class (not a look-behind) so the regex engine can skip ahead.
_RX = {
    "ellipsis": re.compile(r"\.{2,}|…"),
    "repeated": re.compile(r"[!?]{2,}"),
    "period": re.compile(r"\.(?<![.\d]\.)(?![.\d])"),  # a lone full stop (not .. nor 3.5)
    "colon_semicolon": re.compile(r"[;:](?=\s|$)"),  # not the colon of :) or http:
    "dash": re.compile(r"-(?:-+|(?<=\s-)(?=\s))|[—–]+"),  # " - ", "--", an en or em dash
    "parenthesis": re.compile(r"\((?<![:;=]\()"),  # an opening bracket, not :( or =(
    "asterisk": re.compile(r"\*+"),
    "missing_space": re.compile(r"[,;!?](?=[A-Za-z])|\.(?<=[a-z]\.)\.{0,2}(?=[A-Z])"),
    "elongation": re.compile(r"([A-Za-z])\1{2,}"),  # sooo, nooo
}
_EMOJI = re.compile("[\U0001f300-\U0001faff\U0001f1e6-\U0001f1ff\u2600-\u27bf\u2b50\u2b55]")
# an emoticon stands alone: whitespace before it (a space is prepended to each text) and after it
_EMOTICON = re.compile(r"\s(?:[:;=][-'o*]?[)(\]\[DPp/\\|3@*]+|<3+|[xX][dD]+|\^_*\^|[tT]_[tT]|;_;)(?=\s|$|[.,!?])")
_NO_UPPER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NO_LETTER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_TERMINAL = re.compile(r"^[.!?…]+$")
_MARK_RATES = (
    "exclamation",
    "question",
    "ellipsis",
    "repeated",
    "comma",
    "period",
    "colon_semicolon",
    "dash",
    "parenthesis",
    "quote",
    "asterisk",
    "missing_space",
    "emoji_emoticon",
    "elongation",
)


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
    return {k: np.fromiter((fn(t) for t in texts), dtype=np.float64, count=len(texts)) for k, fn in counters.items()}


def punctuation(t: Tokens) -> Features:
    counts = _text_counts(t.texts)
    f = {f"punct_{k}_rate": div(counts[k], t.n_words) for k in _MARK_RATES}
    per_doc, word, n_words, s = t.per_doc, t.word, t.n_words, t.sentences
    clitic = t.low_flag(lambda w: w in ("n't", "n’t") or (len(w) > 1 and w[0] in "'’" and w[1:].isalpha()))
    f["punct_contraction_rate"] = div(per_doc(clitic & word & ~t.tag_is("POS")), n_words)
    bare = t.low_flag(lambda w: w in ("nt", "m", "ve", "re", "ll", "s", "d"))
    space_after = np.asarray(t.parses["space_after"], dtype=bool)
    same_doc_prev = np.concatenate([[False], t.doc[1:] == t.doc[:-1]])
    prev_glued = np.concatenate([[False], ~space_after[:-1] & t.alpha[:-1]]) & same_doc_prev
    f["punct_missing_apostrophe_rate"] = div(per_doc(bare & prev_glued & word), n_words)
    allcaps = t.alpha & t.word_flag(lambda w: len(w) >= 2 and w.isupper())
    f["punct_allcaps_word_ratio"] = div(per_doc(allcaps), n_words)
    is_i = t.low_flag(lambda w: w == "i")
    sentence_first = np.bincount(s.first_word, minlength=t.N) > 0  # a token mask: True at the rows given
    title = t.alpha & t.word_flag(lambda w: len(w) >= 2 and w.istitle()) & ~sentence_first & ~is_i
    f["punct_titlecase_word_ratio"] = div(per_doc(title), n_words)
    f["punct_uppercase_char_ratio"] = div(counts["upper"], counts["letter"])
    starts_lower = t.word_flag(lambda w: w[:1].islower())
    f["punct_lowercase_sentence_start_ratio"] = div(s.per_doc(starts_lower[s.first_word]), s.count)
    lower_i = is_i & t.word_flag(lambda w: w == "i")
    f["punct_lowercase_i_ratio"] = div(per_doc(lower_i), per_doc(is_i))
    terminal = t.low_flag(lambda w: bool(_TERMINAL.match(w)))
    f["punct_unterminated_sentence_ratio"] = div(s.per_doc(~terminal[s.last_tok]), s.count)
    return f


# -- read: readability and length-robust lexical diversity -----------------------------------------------------
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def _syllables(word: str) -> int:
    """Vowel groups, less a silent final e (not -le, -ee, -ye); at least 1 for any alphabetic word."""
    n = len(_VOWEL_GROUPS.findall(word))
    if n > 1 and word.endswith("e") and not word.endswith(("le", "ee", "ye")):
        n -= 1
    return max(n, 1)


def _diversity(counts) -> dict[str, np.ndarray]:
    """Type-frequency statistics per document from a documents x types count matrix."""
    n_docs = counts.shape[0]
    f = counts.data
    row = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    v = np.bincount(row, minlength=n_docs).astype(np.float64)
    n = np.bincount(row, weights=f, minlength=n_docs)
    m2 = np.bincount(row, weights=f**2, minlength=n_docs)
    hapax = np.bincount(row, weights=(f == 1), minlength=n_docs)
    dis = np.bincount(row, weights=(f == 2), minlength=n_docs)
    yule = np.where(m2 > v, np.minimum(div(v**2, m2 - v), YULE_CAP), YULE_CAP)
    yule[v == 0] = 0.0
    return {"v": v, "n": n, "m2": m2, "hapax": hapax, "dis": dis, "yule": yule}


def readability(t: Tokens) -> Features:
    return {**_word_length(t), **_lexical_diversity(t)}


def _word_length(t: Tokens) -> Features:
    """Syllables and letters per alphabetic word, and the grades built on them."""
    low_u, per_doc, n_alpha = t.low_u, t.per_doc, t.n_alpha
    syl_u = np.fromiter((_syllables(w) if w.isalpha() else 0 for w in low_u), dtype=np.float64, count=len(low_u))
    len_u = np.fromiter((len(w) for w in low_u), dtype=np.float64, count=len(low_u))
    syl, wlen = syl_u[t.low_c] * t.alpha, len_u[t.low_c] * t.alpha
    syl_per_word = div(per_doc(syl), n_alpha)
    words_per_sent = div(n_alpha, t.sentences.count)
    has_alpha = n_alpha > 0
    polysyllables = per_doc(syl >= 3)
    mean_wlen = div(per_doc(wlen), n_alpha)
    return {
        "read_syllables_per_word": syl_per_word,
        "read_flesch_ease": np.where(has_alpha, 206.835 - 1.015 * words_per_sent - 84.6 * syl_per_word, 0.0),
        "read_long_word_ratio": div(per_doc(wlen >= LONG_WORD), n_alpha),
        "read_polysyllable_ratio": div(polysyllables, n_alpha),
        "read_mean_word_length": mean_wlen,
        "read_word_length_sd": np.sqrt(np.maximum(div(per_doc(wlen**2), n_alpha) - mean_wlen**2, 0.0)),
        "read_smog_grade": np.where(
            has_alpha, 1.0430 * np.sqrt(div(polysyllables * 30.0, t.sentences.count)) + 3.1291, 0.0
        ),
    }


def _lexical_diversity(t: Tokens) -> Features:
    """Length-robust type-frequency indices over lower-cased words."""
    d = _diversity(t.word_types)
    content = t.word & t.is_pos(*CONTENT_POS)
    v, ntok = d["v"], d["n"]
    log_n, log_v = np.log(np.maximum(ntok, 1)), np.log(np.maximum(v, 1))
    return {
        "read_yule_i": d["yule"],
        "read_yule_i_content": _diversity(type_counts(t.doc[content], t.low_c[content], t.n, len(t.low_u)))["yule"],
        "read_yule_k": 1e4 * div(d["m2"] - ntok, ntok**2),
        "read_herdan_c": np.where(ntok >= 2, div(log_v, log_n), np.where(ntok == 1, 1.0, 0.0)),
        "read_maas_a2": np.where(ntok >= 2, div(log_n - log_v, log_n**2), 0.0),
        "read_hapax_ratio": div(d["hapax"], v),
        "read_dislegomena_ratio": div(d["dis"], v),
    }


# -- emo: sentiment and emotion rates --------------------------------------------------------------------------
def emotion(t: Tokens) -> Features:
    hits = t.lexicon
    f = {
        f"emo_{name}_rate": div(hits.count(name), t.n_words)
        for name in ("positive", "negative", *EMOTIONS, "intensifier")
    }
    positive, negative = hits.count("positive"), hits.count("negative")
    f["emo_polarity"] = (positive - negative) / (positive + negative + EPS)
    negator = t.in_lexicon("negation")
    sid = t.sentences.sid
    negated = np.zeros(t.N, dtype=bool)
    for k in range(1, NEG_WINDOW + 1):
        negated[k:] |= negator[:-k] & (sid[k:] == sid[:-k])
    f["emo_negated_positive_rate"] = div(t.per_doc(t.in_lexicon("positive") & negated), t.n_words)
    f["emo_negated_negative_rate"] = div(t.per_doc(t.in_lexicon("negative") & negated), t.n_words)
    f["emo_category_diversity"] = (hits.total[:, hits.columns(EMOTIONS)] > 0).sum(axis=1) / len(EMOTIONS)
    return f


# -- cog: cognitive markers -----------------------------------------------------------------------------------
def cognitive_markers(t: Tokens) -> Features:
    hits, per_doc, n_words = t.lexicon, t.per_doc, t.n_words
    f = {
        f"cog_{name}_ratio": div(hits.count(name), n_words) for name in ("absolutist", *PRONOUNS, "impersonal_pronoun")
    }
    personal = sum(hits.count(name) for name in PRONOUNS)
    f["cog_self_focus_share"] = div(hits.count("first_singular"), personal)
    subject = t.dep_is("nsubj", "nsubjpass")
    i_subject = subject & t.low_flag(lambda w: w == "i")
    f["cog_i_subject_share"] = div(per_doc(i_subject), per_doc(subject))
    head_has_i_subject = np.bincount(t.head[i_subject], minlength=t.N) > 0
    predicative_adj = t.dep_is("acomp") & t.is_pos("ADJ")
    f["cog_self_description_rate"] = div(per_doc(predicative_adj & head_has_i_subject[t.head]), n_words)
    f.update(_negation_scope(t, predicative_adj))
    f["cog_negation_word_rate"] = div(hits.count("negation"), n_words)
    return f | {
        f"cog_{name}_rate": div(hits.count(name), n_words)
        for name in ("hedge", "certainty", "should", "catastrophizing", "self_criticism", "rumination")
    }


def _negation_scope(t: Tokens, predicative_adj: np.ndarray) -> Features:
    """Negation arcs by what they scope over (Appendix A.4; docs/style_features.md explains the reading)."""
    head, per_doc, n_words = t.head, t.per_doc, t.n_words
    neg = t.dep_is("neg")
    has_adj_complement = np.bincount(head[predicative_adj], minlength=t.N) > 0
    has_attr = np.bincount(head[t.dep_is("attr")], minlength=t.N) > 0
    aux = t.is_pos("AUX")
    verbal = t.is_pos("VERB") | aux
    target_adj = t.is_pos("ADJ") | (aux & has_adj_complement)  # "not happy", "am not happy"
    target_other = aux & has_attr & ~has_adj_complement  # "am not a failure": a nominal predicate
    neg_adj = neg & target_adj[head]
    neg_verb = neg & verbal[head] & ~target_adj[head] & ~target_other[head]
    neg_other = neg & ~neg_adj & ~neg_verb
    n_neg_verb, n_neg_adj = per_doc(neg_verb), per_doc(neg_adj)
    can = code_mask(t.low_c, t.low_u, _CAN)
    head_has_can = np.bincount(head[can & t.dep_is("aux", "auxpass")], minlength=t.N) > 0
    head_has_can |= can  # "I can't." : the modal is the head
    return {
        "cog_neg_verb_count": n_neg_verb,
        "cog_neg_scope_count": n_neg_verb + n_neg_adj,  # NegBalance's denominator N_neg_verb + N_neg_adj
        "cog_neg_verb_rate": div(n_neg_verb, n_words),
        "cog_neg_adj_rate": div(n_neg_adj, n_words),
        "cog_neg_other_rate": div(per_doc(neg_other), n_words),
        "cog_neg_balance": (n_neg_verb - n_neg_adj) / (n_neg_verb + n_neg_adj + EPS),
        "cog_inability_rate": div(per_doc(neg & head_has_can[head]), n_words),
    }


# -- liwc: open LIWC-style category rates ---------------------------------------------------------------------
def liwc_categories(t: Tokens) -> Features:
    hits = t.lexicon
    f = {f"liwc_{c}_ratio": div(hits.count(c), t.n_words) for c in LIWC_CATEGORIES}
    liwc_cols = hits.columns(LIWC_CATEGORIES)
    in_any = (np.asarray(hits.member[:, liwc_cols].sum(axis=1)).ravel() > 0)[t.low_c] & t.word
    f["liwc_category_coverage"] = div(t.per_doc(in_any), t.n_words)
    f["liwc_category_diversity"] = (hits.total[:, liwc_cols] > 0).sum(axis=1) / len(LIWC_CATEGORIES)
    return f
