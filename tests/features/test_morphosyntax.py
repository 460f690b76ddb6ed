"""Channel B: patterns, log-odds, the six features by hand, cross-fitting, the 500-character window."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from mhaudit.core.errors import InputError
from mhaudit.features.morphosyntax import FEATURE_NAMES, MorphosyntaxChannel, adaptive_lambda, extract_patterns
from mhaudit.text.parse import Parses

# -- hand-built parses -----------------------------------------------------------------------------------

POS_OF = {
    "PRP": "PRON",
    "VBP": "VERB",
    "VBD": "VERB",
    "VBZ": "AUX",
    "JJ": "ADJ",
    "DT": "DET",
    "NN": "NOUN",
    "RB": "ADV",
    "IN": "ADP",
    ".": "PUNCT",
    "_SP": "SPACE",
}


def make_parses(docs) -> Parses:
    """docs: lists of (word, tag, dep, head within the document, char offset)."""
    cols = {k: [] for k in ("word", "lower", "tag", "pos", "dep", "head", "idx")}
    offsets = [0]
    for doc in docs:
        base = offsets[-1]
        for word, tag, dep, head, idx in doc:
            cols["word"].append(word)
            cols["lower"].append(word.lower())
            cols["tag"].append(tag)
            cols["pos"].append(POS_OF[tag])
            cols["dep"].append(dep)
            cols["head"].append(base + head)
            cols["idx"].append(idx)
        offsets.append(base + len(doc))
    columns = {k: np.asarray(v, dtype=object) for k, v in cols.items() if k not in ("head", "idx")}
    columns["head"] = np.asarray(cols["head"], dtype=np.int64)
    columns["idx"] = np.asarray(cols["idx"], dtype=np.int64)
    n = offsets[-1]
    for flag in ("is_stop", "is_punct", "is_alpha", "like_num", "sent_start", "space_after"):
        columns[flag] = np.zeros(n, dtype=bool)
    return Parses(np.asarray(offsets, dtype=np.int64), columns)


I_FEEL_BAD = [("I", "PRP", "nsubj", 1, 0), ("feel", "VBP", "ROOT", 1, 2), ("bad", "JJ", "acomp", 1, 7)]
THE_CAT_SAT = [("The", "DT", "det", 1, 0), ("cat", "NN", "nsubj", 2, 4), ("sat", "VBD", "ROOT", 2, 8)]
I_NEVER_SLEEP = [("I", "PRP", "nsubj", 2, 0), ("never", "RB", "neg", 2, 2), ("sleep", "VBP", "ROOT", 2, 8)]
# "I feel the cat": PRP_VBP (+), VBP_DT (unseen), DT_NN (-), SVO:PRP_VBP_NN (unseen)
I_FEEL_THE_CAT = [
    ("I", "PRP", "nsubj", 1, 0),
    ("feel", "VBP", "ROOT", 1, 2),
    ("the", "DT", "det", 3, 7),
    ("cat", "NN", "dobj", 1, 11),
]


def patterns_by_doc(parses: Parses) -> list[list[str]]:
    pat = extract_patterns(parses)
    out = [[] for _ in range(len(parses))]
    for d, c in zip(pat.doc, pat.code):
        out[d].append(str(pat.names[c]))
    return [sorted(p) for p in out]


def test_patterns_of_hand_built_documents():
    parses = make_parses([I_FEEL_BAD, THE_CAT_SAT, I_NEVER_SLEEP, I_FEEL_THE_CAT])
    assert patterns_by_doc(parses) == [
        ["PRP_VBP", "SVO:PRP_VBP_JJ", "VBP_JJ"],
        ["DT_NN", "NN_VBD", "SV:NN_VBD"],
        ["PRP_RB", "RB_VBP", "SV:PRP_VBP"],
        ["DT_NN", "PRP_VBP", "SVO:PRP_VBP_NN", "VBP_DT"],
    ]
    pat = extract_patterns(parses)
    assert pat.n_tokens.tolist() == [3, 3, 3, 4]
    assert pat.n_absolutist.tolist() == [0, 0, 1, 0]  # "never"


def test_features_by_hand():
    train = make_parses([I_FEEL_BAD, THE_CAT_SAT, I_NEVER_SLEEP])
    channel = MorphosyntaxChannel()
    channel.fit_transform(None, train, np.array([1, 0, 1]), folds=np.array([0, 1, 2]))
    # 9 training patterns; 6 occurrences in positive documents, 3 in the negative one. alpha = 1:
    # a pattern seen once in a positive document: log((1+1)/(6+9)) - log((0+1)/(3+9)) = log(1.6)
    # a pattern seen once in the negative document: log((0+1)/(6+9)) - log((1+1)/(3+9)) = log(0.4)
    lo = dict(zip(channel.pattern_names_, channel.log_odds_))
    assert len(lo) == 9
    assert lo["PRP_VBP"] == pytest.approx(math.log(1.6)) and lo["SV:PRP_VBP"] == pytest.approx(math.log(1.6))
    assert lo["DT_NN"] == pytest.approx(math.log(0.4)) and lo["SV:NN_VBD"] == pytest.approx(math.log(0.4))

    X = channel.transform(None, make_parses([I_FEEL_THE_CAT, I_NEVER_SLEEP]))
    # "I feel the cat": L = 4, lambda = 3 + 17 * 4/50 = 4.36, L_eff = 8.36; scored patterns PRP_VBP, DT_NN
    m_pos, m_neg, cnt, l_eff = math.log(1.6), -math.log(0.4), 2, 8.36
    expected = [
        math.log(1 + m_pos) / math.log(1 + l_eff),
        math.log(1 + m_neg) / math.log(1 + l_eff),
        m_pos / (m_pos + m_neg),
        (m_pos + m_neg) / l_eff,
        math.log(1 + m_pos + m_neg) / max(math.log(1 + cnt), 1),
        0.0,
    ]
    np.testing.assert_allclose(X[0], expected, rtol=1e-7)
    np.testing.assert_allclose(X[0], [0.17226662, 0.29081481, 0.33903595, 0.16582468, 0.791673, 0.0], rtol=1e-6)
    # "I never sleep": three positive patterns, one absolutist word; L = 3, L_eff = 3 + 3 + 17*3/50 = 7.02
    m_pos, l_eff = 3 * math.log(1.6), 7.02
    expected = [
        math.log(1 + m_pos) / math.log(1 + l_eff),
        0.0,
        m_pos / m_pos,
        m_pos / l_eff,
        math.log(1 + m_pos) / max(math.log(1 + 3), 1),
        1 / l_eff,
    ]
    np.testing.assert_allclose(X[1], expected, rtol=1e-7)
    assert channel.feature_names == FEATURE_NAMES

    count = MorphosyntaxChannel(density="count")
    count.fit_transform(None, train, np.array([1, 0, 1]), folds=np.array([0, 1, 2]))
    assert count.transform(None, make_parses([I_FEEL_THE_CAT]))[0, 3] == pytest.approx(2 / 8.36)


def test_adaptive_lambda():
    np.testing.assert_allclose(adaptive_lambda([0, 10, 25, 50, 51, 400]), [3, 6.4, 11.5, 20, 20, 20])
    L = np.arange(0, 120)
    np.testing.assert_allclose(L + adaptive_lambda(L), L + 3 + 17 * np.minimum(L / 50, 1))


def test_log_odds_match_a_counting_reference():
    parses, y = random_corpus(50, seed=7)
    channel = MorphosyntaxChannel(alpha=0.5)
    channel.fit_transform(None, parses, y)
    c1, c0 = Counter(), Counter()
    for label, pats in zip(y, patterns_by_doc(parses)):
        (c1 if label else c0).update(pats)
    vocab = sorted(set(c1) | set(c0))
    n1, n0, a = sum(c1.values()), sum(c0.values()), 0.5
    ref = [math.log((c1[w] + a) / (n1 + a * len(vocab))) - math.log((c0[w] + a) / (n0 + a * len(vocab))) for w in vocab]
    assert channel.pattern_names_ == vocab
    np.testing.assert_allclose(channel.log_odds_, ref, rtol=1e-12)


# -- cross-fitting -----------------------------------------------------------------------------------------

TAGS = ["PRP", "VBP", "VBD", "VBZ", "JJ", "DT", "NN", "RB", "IN", "."]
DEPS = ["nsubj", "dobj", "acomp", "prep", "pobj", "det", "advmod", "punct", "ROOT", "attr"]


def random_corpus(n: int, seed: int) -> tuple[Parses, np.ndarray]:
    """Random tagged and 'parsed' documents; positives favour PRP/VBP/RB, so the log-odds carry signal."""
    rng = np.random.default_rng(seed)
    y = np.array([i % 2 for i in range(n)])
    rng.shuffle(y)
    docs = []
    for label in y:
        length = int(rng.integers(0, 40))
        weights = np.ones(len(TAGS))
        if label:
            weights[[0, 1, 7]] = 4
        tags = rng.choice(TAGS, length, p=weights / weights.sum())
        deps = rng.choice(DEPS, length)
        heads = rng.integers(0, max(length, 1), length)
        idx = np.cumsum(rng.integers(2, 40, length)) if length else []
        docs.append([(f"w{k}", t, d, int(h), int(i)) for k, (t, d, h, i) in enumerate(zip(tags, deps, heads, idx))])
    return make_parses(docs), y


@pytest.mark.parametrize("folds", [None, "given"])
def test_cross_fitted_features_equal_fits_without_the_fold(folds):
    parses, y = random_corpus(60, seed=11)
    folds = None if folds is None else np.arange(60) % 4
    channel = MorphosyntaxChannel()
    X = channel.fit_transform(None, parses, y, folds)
    used = channel.folds_
    if folds is None:  # 5 stratified folds, seed 0
        expected = np.empty(60, dtype=int)
        for f, (_, test) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0).split(np.zeros(60), y)):
            expected[test] = f
        np.testing.assert_array_equal(used, expected)
    else:
        np.testing.assert_array_equal(used, folds)
    for f in np.unique(used):
        held, rest = np.flatnonzero(used == f), np.flatnonzero(used != f)
        brute = MorphosyntaxChannel()
        brute.fit_transform(None, parses.take(rest), y[rest], None)
        np.testing.assert_allclose(X[held], brute.transform(None, parses.take(held)), rtol=1e-12, atol=1e-15)
    # in-sample scoring (log-odds fitted on the scored documents themselves) is different, and leakier:
    insample = channel.transform(None, parses)
    nonempty = extract_patterns(parses).n_tokens > 1
    assert not np.allclose(X[nonempty, :2], insample[nonempty, :2])
    gap = lambda F: np.mean(F[y == 1, 2]) - np.mean(F[y == 0, 2])  # noqa: E731 (polarity, by class)
    assert gap(insample) > gap(X)
    # the final log-odds are those of a fit on all training documents
    full = MorphosyntaxChannel()
    full.fit_transform(None, parses, y, np.arange(60) % 3)
    np.testing.assert_allclose(full.log_odds_, channel.log_odds_)


def test_bad_folds_and_labels():
    parses, y = random_corpus(10, seed=1)
    channel = MorphosyntaxChannel()
    with pytest.raises(InputError):
        channel.fit_transform(None, parses, y, np.zeros(10))
    with pytest.raises(InputError):
        channel.fit_transform(None, parses, y, np.arange(9))
    with pytest.raises(InputError):
        channel.fit_transform(None, parses, y + 1)
    with pytest.raises(InputError):
        channel.fit_transform(["a"] * 9, parses, y)
    with pytest.raises(RuntimeError):
        MorphosyntaxChannel().transform(None, parses)


# -- the 500-character window and empty documents -----------------------------------------------------------


def test_only_the_first_500_characters_count():
    words = []
    for k in range(100):  # "I feel bad. " repeated: tokens up to char 499
        base = 12 * k
        if base + 10 >= 500:
            break
        words += [
            (f"I{k}", "PRP", "nsubj", len(words) + 1, base),
            ("feel", "VBP", "ROOT", len(words) + 1, base + 2),
            ("bad", "JJ", "acomp", len(words) + 1, base + 7),
            (".", ".", "punct", len(words) + 1, base + 10),
        ]
    assert words[-1][4] < 500
    n = len(words)
    tail = [
        ("never", "RB", "advmod", n + 2, 500),
        ("all", "DT", "det", n + 2, 506),
        ("cat", "NN", "nsubj", n - 3, 510),
        ("always", "RB", "advmod", n - 3, 514),
        ("\n", "_SP", "dep", n, 521),
    ]
    short, long_ = make_parses([words]), make_parses([words + tail])
    assert patterns_by_doc(short) == patterns_by_doc(long_)
    channel = MorphosyntaxChannel()
    channel.fit_transform(
        None,
        make_parses([I_FEEL_BAD, THE_CAT_SAT, I_NEVER_SLEEP, I_FEEL_THE_CAT]),
        np.array([1, 0, 1, 0]),
        np.array([0, 1, 0, 1]),
    )
    np.testing.assert_array_equal(channel.transform(None, short), channel.transform(None, long_))
    # a wider window sees the tail: three absolutist words (never, all, always), a subject of an earlier verb
    wide = extract_patterns(long_, window=1000)
    assert wide.n_absolutist[0] == 3 and wide.n_tokens[0] == n + 4
    assert {"._RB", "RB_DT", "DT_NN", "NN_RB"} <= set(wide.names) and "._RB" not in set(extract_patterns(long_).names)


def test_window_with_spacy():
    from mhaudit.text.parse import parse_texts

    head = ("I feel tired all the time and I cannot focus on my work. " * 9).strip()
    assert 500 < len(head) < 560
    texts = [head, head + "\n\nEverything is always wrong, nothing ever works and I never sleep."]
    parses = parse_texts(texts)
    in_window = [parses.doc(i).query("idx < 500")[["tag", "pos", "dep", "head"]] for i in range(2)]
    assert in_window[0].equals(in_window[1])  # the appended text does not change the window's parse
    assert in_window[0]["tag"].tolist()[:4] == ["PRP", "VBP", "JJ", "PDT"]
    # 9 sentences, the last cut at "focus" (idx 495): 9 x "I feel tired", 8 x "I cannot focus on my work"
    counts = Counter(patterns_by_doc(parses)[0])
    assert counts["SVO:PRP_VBP_JJ"] == 9 and counts["SVO:PRP_VB_NN"] == 8 and counts["SV:PRP_VB"] == 1
    assert counts["PDT_DT"] == 9 and counts["._PRP"] == 8 and counts["PRP$_NN"] == 8
    channel = MorphosyntaxChannel()
    channel.fit_transform(
        None,
        make_parses([I_FEEL_BAD, THE_CAT_SAT, I_NEVER_SLEEP, I_FEEL_THE_CAT]),
        np.array([1, 0, 1, 0]),
        np.array([0, 1, 0, 1]),
    )
    X = channel.transform(texts, parses)
    np.testing.assert_array_equal(X[0], X[1])
    assert X[0, 5] > 0  # "all" x 9 in the window


def test_zero_token_documents_give_finite_zeros():
    empty = make_parses([[], [("\n", "_SP", "dep", 0, 0)], I_FEEL_BAD, THE_CAT_SAT])
    channel = MorphosyntaxChannel()
    X = channel.fit_transform(None, empty, np.array([1, 0, 1, 0]), np.array([0, 1, 0, 1]))
    assert np.isfinite(X).all()
    np.testing.assert_array_equal(X[:2], 0.0)
    Xt = channel.transform(None, make_parses([[], [("\n", "_SP", "dep", 0, 0)]]))
    np.testing.assert_array_equal(Xt, 0.0)
    assert Xt.shape == (2, 6) and Xt.dtype == np.float64


# -- real data -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_dreaddit_train_features_carry_signal(dreaddit_train_parsed):  # tests/features/conftest.py
    """Six B features on Dreaddit train: non-constant, and a logistic regression on them beats the majority
    baseline in 5-fold CV (measured: macro-F1 0.663 vs 0.344)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, parses = dreaddit_train_parsed
    y = (train["label"] == "stress").to_numpy().astype(int)
    X = MorphosyntaxChannel().fit_transform(train["text"].tolist(), parses, y, None)
    assert X.shape == (2838, 6) and np.isfinite(X).all()
    assert (X.std(axis=0) > 1e-3).all()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    pred = cross_val_predict(model, X, y, cv=StratifiedKFold(5, shuffle=True, random_state=0))
    macro = f1_score(y, pred, average="macro")
    majority = f1_score(y, np.full_like(y, np.bincount(y).argmax()), average="macro")
    assert majority == pytest.approx(0.344, abs=1e-3)
    assert macro > 0.6 > majority
