"""Channel C (psycholinguistic style): names, hand-computed values on small texts, scaling, and the
distribution checks on Dreaddit train (no constant, redundant or saturated feature)."""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from mhaudit.features import word_lists
from mhaudit.features.style import FAMILIES, FEATURE_NAMES, StyleChannel, style_features, yule_i
from mhaudit.features.style_word_lists import LEXICONS
from mhaudit.text.masks import apply_mask
from mhaudit.text.parse import parse_texts

SIZES = {"pos": 24, "frag": 18, "punct": 22, "read": 14, "emo": 20, "cog": 24, "liwc": 32}


def features(texts):
    """Raw features as {name: values per text}."""
    raw = style_features(texts, parse_texts(texts, use_cache=False))
    assert raw.shape == (len(texts), 154) and raw.dtype == np.float64 and np.isfinite(raw).all()
    return {name: raw[:, j] for j, name in enumerate(FEATURE_NAMES)}


# -- names and word lists -------------------------------------------------------------------------------------
def test_154_unique_snake_case_names_in_seven_prefixed_families():
    assert len(FAMILIES) == 7 and {k: len(v) for k, v in FAMILIES.items()} == SIZES
    assert sum(SIZES.values()) == 154 == len(FEATURE_NAMES) == len(set(FEATURE_NAMES))
    assert FEATURE_NAMES == tuple(n for names in FAMILIES.values() for n in names)
    for family, names in FAMILIES.items():
        for name in names:
            assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", name) and name.startswith(family + "_"), name
    assert StyleChannel.name == "C" and StyleChannel().feature_names == list(FEATURE_NAMES)


def test_every_lexicon_has_a_header_and_at_least_eight_entries():
    folder = resources.files(word_lists.__name__)
    assert "absolutist" in LEXICONS and len(word_lists.load("absolutist")) == 19
    assert len(LEXICONS) == len(set(LEXICONS)) == 60
    for name in LEXICONS:
        lines = (folder / f"{name}.txt").read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith(f"# {name}") or name == "absolutist", name
        assert lines[0].startswith("#") and len(lines[0]) > 20, name
        entries = word_lists.load(name)
        assert len(entries) >= 8, name
        assert all(e == e.strip().lower() and "  " not in e for e in entries), name


def test_docs_table_lists_every_feature_once():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "style_features.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \d+ \| `([a-z0-9_]+)` \|", doc, flags=re.M)
    assert rows == list(FEATURE_NAMES)


# -- hand-computed values ---------------------------------------------------------------------------------
def test_negation_scope_and_neg_balance():
    f = features(
        [
            "I can't sleep. I am not happy.",
            "I can't sleep. I don't eat.",
            "He is not nice. She is not kind.",
            "The test went well.",
        ]
    )
    # "n't" -> sleep (VERB); "not" -> am, a copula whose predicate is the adjective happy: NEG->ADJ. 8 words.
    assert f["cog_neg_verb_count"].tolist() == [1, 2, 0, 0]
    assert f["cog_neg_scope_count"].tolist() == [2, 2, 2, 0]
    assert f["cog_neg_verb_rate"][0] == pytest.approx(1 / 8) and f["cog_neg_adj_rate"][0] == pytest.approx(1 / 8)
    assert f["cog_neg_balance"][0] == pytest.approx(0.0)
    assert f["cog_neg_balance"][1] == pytest.approx(1.0) and f["cog_neg_balance"][2] == pytest.approx(-1.0)
    assert f["cog_neg_balance"][3] == 0.0  # no negation: 0, not NaN
    assert f["cog_inability_rate"][:3] == pytest.approx([1 / 8, 1 / 8, 0])
    assert f["cog_self_description_rate"][0] == pytest.approx(1 / 8)  # "I am ... happy"


def test_yule_i_matches_brute_force():
    text = "The cat saw the dog, and the dog saw the cat run!"
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    freq = Counter(words)
    m1, m2 = len(freq), sum(v * v for v in freq.values())
    assert (m1, m2) == (6, 30)
    assert features([text])["read_yule_i"][0] == pytest.approx(m1**2 / (m2 - m1)) == pytest.approx(1.5)
    assert yule_i(list(freq.values())) == pytest.approx(1.5)
    assert yule_i([1, 1, 1]) == 1e3 and yule_i([]) == 0.0  # M2 == M1 is capped, like very large values
    assert yule_i([2, 1]) == pytest.approx(4 / 3)
    assert features(["Just three words"])["read_yule_i"][0] == 1e3
    # brute force over the parse's own word tokens (lower case, punctuation excluded) of longer posts
    posts = [
        "Honestly I don't know what to do anymore. Work is hard, home is hard, and I can't sleep at all.",
        "We went to the lake, and then we went to the lake again because the lake was so calm.",
    ]
    parses = parse_texts(posts, use_cache=False)
    got = style_features(posts, parses)[:, FEATURE_NAMES.index("read_yule_i")]
    for i in range(len(posts)):
        doc = parses.doc(i)
        counted = doc.loc[~doc["is_punct"] & (doc["pos"] != "SPACE"), "lower"]
        freq = np.array(list(Counter(counted).values()), dtype=float)
        assert got[i] == pytest.approx(min(freq.size**2 / ((freq**2).sum() - freq.size), 1e3))


def test_pronouns_sentences_and_capitals():
    text = "I know. I tried. My plan failed because the weather was bad today and everyone left early."
    f = features([text, "This is SO unfair and I HATE it."])
    lengths = np.array([2, 2, 13])  # words per sentence, punctuation excluded
    assert f["cog_first_singular_ratio"][0] == pytest.approx(3 / 17)
    assert f["frag_short_burst_ratio"][0] == pytest.approx(2 / 3)
    assert f["frag_sentence_cv"][0] == pytest.approx(lengths.std() / lengths.mean())
    assert f["frag_rhythm"][0] == pytest.approx(np.abs(np.diff(lengths)).mean() / lengths.mean())
    assert f["frag_log_sentence_count"][0] == pytest.approx(np.log(4))
    assert f["cog_absolutist_ratio"][0] == pytest.approx(1 / 17)  # everyone
    assert f["punct_allcaps_word_ratio"][1] == pytest.approx(2 / 8)  # SO, HATE; "I" is not shouting
    assert f["cog_first_singular_ratio"][1] == pytest.approx(1 / 8)


def test_punctuation_lexicon_rates_and_phrases():
    f = features(["omg i dont know... why?? I'm so tired :( I keep thinking about it over and over"])
    words = 18  # omg i do nt know why I 'm so tired I keep thinking about it over and over
    assert f["punct_question_rate"][0] == pytest.approx(2 / words)
    assert f["punct_repeated_rate"][0] == pytest.approx(1 / words)
    assert f["punct_ellipsis_rate"][0] == pytest.approx(1 / words)
    assert f["punct_emoji_emoticon_rate"][0] == pytest.approx(1 / words)
    assert f["punct_missing_apostrophe_rate"][0] == pytest.approx(1 / words)  # dont
    assert f["punct_lowercase_i_ratio"][0] == pytest.approx(1 / 3)
    assert f["emo_fatigue_rate"][0] == pytest.approx(1 / words)
    assert f["cog_rumination_rate"][0] == pytest.approx(2 / words)  # "keep thinking", "over and over"


def test_documents_without_tokens_get_zeros_and_masks_reach_the_lexicon():
    texts = ["", "   ", "I am so happy today!"]
    raw = style_features(texts, parse_texts(texts, use_cache=False))
    assert np.isfinite(raw).all() and not raw[:2].any() and raw[2].any()
    assert style_features([], parse_texts([], use_cache=False)).shape == (0, 154)
    masked = apply_mask(texts, parse_texts(texts, use_cache=False), "pos_only")
    f = features(masked)
    assert f["emo_joy_rate"][2] == 0 and f["liwc_time_ratio"][2] == 0  # happy, today are gone
    assert features(texts)["emo_joy_rate"][2] > 0
    with pytest.raises(ValueError):
        style_features(texts[:2], parse_texts(texts, use_cache=False))


def test_scaling_learns_median_and_robust_spread_on_training_rows():
    rng = np.random.default_rng(0)
    raw = rng.normal(5, 2, size=(400, 154))
    raw[:, 1] = 3.0  # constant: spread 1
    raw[:, 2] = 0.0
    raw[:320, 2], raw[320:, 2] = 0.0, rng.uniform(1, 3, 80)  # sparse: IQR 0, MAD of the non-zero rows
    channel = StyleChannel().fit_raw(raw)
    q1, q3 = np.percentile(raw[:, 0], [25, 75])
    assert channel.center_[0] == pytest.approx(np.median(raw[:, 0]))
    assert channel.scale_[0] == pytest.approx((q3 - q1) / 1.349)
    assert channel.scale_[1] == 1.0 and channel.center_[1] == 3.0
    assert channel.scale_[2] == pytest.approx(1.4826 * np.median(raw[320:, 2]))
    test = rng.normal(5, 2, size=(7, 154))
    out = channel.squash(test)
    assert out == pytest.approx(np.tanh(2 * (test - channel.center_) / channel.scale_))
    assert np.abs(out).max() < 1
    with pytest.raises(RuntimeError):
        StyleChannel().squash(raw)
    with pytest.raises(ValueError):
        channel.squash(raw[:, :10])


def test_text_level_fit_transform_and_transform(monkeypatch, tmp_path):
    monkeypatch.setenv("MHAUDIT_CACHE", str(tmp_path))
    texts = [
        "I can't do this anymore.",
        "We had a great day at the beach!",
        "why does nobody ever listen??",
        "The meeting moved to Friday. Fine.",
    ]
    parses = parse_texts(texts, use_cache=False)
    channel = StyleChannel()
    out = channel.fit_transform(texts, parses, y=[1, 0, 1, 0], folds=None)
    assert out.shape == (4, 154) and np.isfinite(out).all()
    assert channel.transform(texts, parses) == pytest.approx(out)
    assert channel.transform(texts, None) == pytest.approx(out)  # parses itself when given none
    assert out == pytest.approx(channel.squash(style_features(texts, parses)))


# -- Dreaddit train -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dreaddit_train(dreaddit_train_parsed):  # tests/features/conftest.py
    train, parses = dreaddit_train_parsed
    assert len(train) == 2838
    return style_features(train["text"].tolist(), parses)


def _max_correlation(values):
    corr = np.corrcoef(values, rowvar=False)
    np.fill_diagonal(corr, 0)
    i, j = np.unravel_index(np.abs(corr).argmax(), corr.shape)
    return abs(corr[i, j]), FEATURE_NAMES[i], FEATURE_NAMES[j]


def test_dreaddit_train_features_vary_are_not_redundant_and_do_not_saturate(dreaddit_train):
    raw = dreaddit_train
    assert np.isfinite(raw).all()
    constant = [n for n, sd in zip(FEATURE_NAMES, raw.std(axis=0)) if sd == 0]
    assert not constant
    squashed = StyleChannel().fit_raw(raw).squash(raw)
    for label, values in (("raw", raw), ("squashed", squashed)):
        r, a, b = _max_correlation(values)
        assert r <= 0.98, f"{label}: {a} and {b} correlate at {r:.3f}"
    saturated = (np.abs(squashed) > 0.99).mean(axis=0)
    worst = int(saturated.argmax())
    assert saturated[worst] <= 0.95, f"{FEATURE_NAMES[worst]} saturates on {saturated[worst]:.1%} of rows"
    # Yule's I no longer collapses: the squashed values spread over the interval
    yule = squashed[:, FEATURE_NAMES.index("read_yule_i")]
    assert (np.abs(yule) < 0.9).mean() > 0.5
