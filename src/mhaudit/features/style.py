"""Channel C: psycholinguistic style, 154 features in seven families (TSS paper section 4.3, Appendix A.4-A.6).

Families (prefix: count): pos (24) part-of-speech ratios; frag (18) fragmentation and sentence rhythm;
punct (22) punctuation and capitalisation; read (14) readability and length-robust lexical diversity;
emo (20) sentiment and emotion rates; cog (24) cognitive markers (absolutist words, pronouns, dependency
negation scope, hedges, distortions); liwc (32) open LIWC-style category rates. docs/style_features.md
defines every feature.

This module holds the public API: the feature names by family, the table of family functions that
`style_features` runs, and `StyleChannel`. The family functions live in `style_families`, the token view
they share (masks, sentences, lexicon hits of one `Parses`) in `style_tokens`, the word lists in
`style_word_lists`. Everything lexical is read from the parse of the text itself (its `lower` column), so a
masked text gives masked features; punctuation and capitalisation regexes read the raw text (clipped like
the parser, to MAX_CHARS). Nothing walks tokens in Python.

`style_features` returns raw values (ratios, rates per word, counts); `StyleChannel` learns a per-feature
centre and robust spread on training rows and squashes with the paper's tanh(2c) after scaling, so the
squash keeps variation instead of saturating count-like features.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mhaudit.features import style_families as families
from mhaudit.features.style_families import TAG_RATIOS, UPOS, YULE_CAP
from mhaudit.features.style_tokens import Tokens
from mhaudit.features.style_word_lists import EMOTIONS, LIWC_CATEGORIES, PRONOUNS
from mhaudit.text.parse import MAX_CHARS, Parses, parses_for

__all__ = ["FAMILIES", "FEATURE_NAMES", "FAMILY_FUNCTIONS", "style_features", "yule_i", "StyleChannel"]

_TINY = 1e-12

FAMILIES: dict[str, tuple[str, ...]] = {
    "pos": (
        *(f"pos_{p.lower()}_ratio" for p in UPOS),
        *(f"pos_{t}_ratio" for t in TAG_RATIOS),
        "pos_past_share_of_finite",
        "pos_lexical_density",
    ),
    "frag": (
        "frag_sentence_cv",
        "frag_short_burst_ratio",
        "frag_long_sentence_ratio",
        "frag_rhythm",
        "frag_mean_sentence_len_scaled",
        "frag_max_sentence_len_ratio",
        "frag_log_sentence_count",
        "frag_log_word_count",
        "frag_verbless_sentence_ratio",
        "frag_initial_conjunction_ratio",
        "frag_clauses_per_sentence",
        "frag_subordination_per_sentence",
        "frag_coordination_per_sentence",
        "frag_tree_depth",
        "frag_dependency_distance",
        "frag_words_per_clause",
        "frag_burst_pair_ratio",
        "frag_abrupt_shift_ratio",
    ),
    "punct": (
        "punct_exclamation_rate",
        "punct_question_rate",
        "punct_ellipsis_rate",
        "punct_repeated_rate",
        "punct_comma_rate",
        "punct_period_rate",
        "punct_colon_semicolon_rate",
        "punct_dash_rate",
        "punct_parenthesis_rate",
        "punct_quote_rate",
        "punct_asterisk_rate",
        "punct_contraction_rate",
        "punct_missing_apostrophe_rate",
        "punct_missing_space_rate",
        "punct_allcaps_word_ratio",
        "punct_titlecase_word_ratio",
        "punct_uppercase_char_ratio",
        "punct_lowercase_sentence_start_ratio",
        "punct_lowercase_i_ratio",
        "punct_emoji_emoticon_rate",
        "punct_elongation_rate",
        "punct_unterminated_sentence_ratio",
    ),
    "read": (
        "read_syllables_per_word",
        "read_flesch_ease",
        "read_long_word_ratio",
        "read_polysyllable_ratio",
        "read_mean_word_length",
        "read_word_length_sd",
        "read_smog_grade",
        "read_yule_i",
        "read_yule_i_content",
        "read_yule_k",
        "read_herdan_c",
        "read_maas_a2",
        "read_hapax_ratio",
        "read_dislegomena_ratio",
    ),
    "emo": (
        *(f"emo_{e}_rate" for e in ("positive", "negative", *EMOTIONS, "intensifier")),
        "emo_polarity",
        "emo_negated_positive_rate",
        "emo_negated_negative_rate",
        "emo_category_diversity",
    ),
    "cog": (
        "cog_absolutist_ratio",
        *(f"cog_{p}_ratio" for p in (*PRONOUNS, "impersonal_pronoun")),
        "cog_self_focus_share",
        "cog_i_subject_share",
        "cog_self_description_rate",
        "cog_neg_verb_count",
        "cog_neg_scope_count",
        "cog_neg_verb_rate",
        "cog_neg_adj_rate",
        "cog_neg_other_rate",
        "cog_neg_balance",
        "cog_negation_word_rate",
        "cog_inability_rate",
        *(f"cog_{c}_rate" for c in ("hedge", "certainty", "should", "catastrophizing", "self_criticism", "rumination")),
    ),
    "liwc": (*(f"liwc_{c}_ratio" for c in LIWC_CATEGORIES), "liwc_category_coverage", "liwc_category_diversity"),
}
FEATURE_NAMES: tuple[str, ...] = tuple(n for names in FAMILIES.values() for n in names)
assert len(FEATURE_NAMES) == 154 == len(set(FEATURE_NAMES))

# the family table `style_features` runs: each function computes its family's features from the shared Tokens
FAMILY_FUNCTIONS: dict[str, Callable[[Tokens], dict[str, np.ndarray]]] = {
    "pos": families.pos_ratios,
    "frag": families.fragmentation,
    "punct": families.punctuation,
    "read": families.readability,
    "emo": families.emotion,
    "cog": families.cognitive_markers,
    "liwc": families.liwc_categories,
}
assert tuple(FAMILY_FUNCTIONS) == tuple(FAMILIES)


def yule_i(frequencies) -> float:
    """Yule's I = M1^2 / (M2 - M1) as Appendix A.6: M1 the number of types, M2 the sum of squared type
    frequencies; capped at 1e3, also when M2 == M1 (every type a hapax); 0 without tokens."""
    f = np.asarray(frequencies, dtype=np.float64)
    f = f[f > 0]
    if f.size == 0:
        return 0.0
    m1, m2 = float(f.size), float((f**2).sum())
    return YULE_CAP if m2 <= m1 else min(m1**2 / (m2 - m1), YULE_CAP)


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
    tokens = Tokens(texts, parses)
    feats = {name: value for compute in FAMILY_FUNCTIONS.values() for name, value in compute(tokens).items()}
    if set(feats) != set(FEATURE_NAMES):  # pragma: no cover - a programming error
        raise RuntimeError(
            f"style features out of sync: missing {sorted(set(FEATURE_NAMES) - set(feats))}, "
            f"extra {sorted(set(feats) - set(FEATURE_NAMES))}"
        )
    for j, name in enumerate(FEATURE_NAMES):
        out[:, j] = feats[name]
    out[~np.isfinite(out)] = 0.0
    out[parses.n_tokens == 0] = 0.0
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
        raw = style_features(texts, parses_for(texts, parses, "C"))
        return self.fit_raw(raw).squash(raw)

    def transform(self, texts, parses: Parses | None) -> np.ndarray:
        """Squashed features of any documents with the scaling fitted on the training rows."""
        return self.squash(style_features(texts, parses_for(texts, parses, "C")))

    @staticmethod
    def _check(raw) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != len(FEATURE_NAMES):
            raise ValueError(f"expected raw channel-C features of shape (n, {len(FEATURE_NAMES)}), got {raw.shape}")
        return raw
