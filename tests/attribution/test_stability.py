import math
from importlib.resources import files

import pandas as pd
import pytest

from mhaudit.attribution.stability import (
    clinical_retention,
    jaccard_stability,
    load_proxy_clinical,
    top_k_words,
    with_datasets,
)


def table(entries, model="bert", seed=0, cls="depression", platform=None):
    """entries: {platform: {word: score}} -> an Attributions table; with `platform`, the keys name data sets
    of that one platform."""
    rows = [
        {
            "model": model,
            "seed": seed,
            "platform": platform or p,
            "dataset": p,
            "class": cls,
            "word": w,
            "score": s,
            "count": 1,
            "method": "saliency",
        }
        for p, words in entries.items()
        for w, s in words.items()
    ]
    return pd.DataFrame(rows)


KAGGLE = {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}
REDDIT = {"a": 9, "c": 8, "x": 7, "y": 6, "e": 0.5}
TWITTER = {"r": 1, "q": 1, "p": 1}  # a three-way tie


def test_top_k_words_ranks_by_score_then_word():
    top = top_k_words(table({"kaggle": KAGGLE, "twitter": TWITTER}), 2)
    assert list(top.columns) == ["model", "seed", "platform", "dataset", "class", "rank", "word", "score"]
    assert top[top["platform"] == "kaggle"][["rank", "word"]].values.tolist() == [[1, "a"], [2, "b"]]
    assert top[top["platform"] == "twitter"]["word"].tolist() == ["p", "q"]  # tie: alphabetical
    assert len(top_k_words(table({"twitter": TWITTER}), 10)) == 3  # fewer words than k: all kept


def test_ties_do_not_depend_on_row_order():
    words = {w: 1.0 for w in "zyxwvutsrq"} | {"top": 2.0}
    frame = table({"kaggle": words, "reddit": words})
    for seed in range(5):
        shuffled = frame.sample(frac=1, random_state=seed)
        top = top_k_words(shuffled, 3)
        assert top["word"].tolist() == ["top", "q", "r"] * 2
        assert jaccard_stability(shuffled, ks=(3,)).equals(jaccard_stability(frame, ks=(3,)))


def test_jaccard_by_hand():
    out = jaccard_stability(table({"kaggle": KAGGLE, "reddit": REDDIT, "twitter": TWITTER}), ks=(2, 3, 5))
    assert list(out.columns) == [
        "model",
        "seed",
        "class",
        "platform_a",
        "dataset_a",
        "platform_b",
        "dataset_b",
        "k",
        "jaccard",
        "n_a",
        "n_b",
        "reason",
    ]
    assert len(out) == 3 * 3  # 3 unordered pairs x 3 values of k
    kr = out[(out["platform_a"] == "kaggle") & (out["platform_b"] == "reddit")].set_index("k")
    # k=2: {a,b} vs {a,c} -> 1/3; k=3: {a,b,c} vs {a,c,x} -> 2/4; k=5: {a..e} vs {a,c,x,y,e} -> 3/7
    assert kr["jaccard"].tolist() == pytest.approx([1 / 3, 2 / 4, 3 / 7])
    assert kr["n_a"].tolist() == [2, 3, 5] and kr["n_b"].tolist() == [2, 3, 5]
    kt = out[(out["platform_a"] == "kaggle") & (out["platform_b"] == "twitter")].set_index("k")
    assert kt["jaccard"].tolist() == [0.0, 0.0, 0.0]
    assert kt.loc[5, "n_b"] == 3  # twitter has only three words
    assert (out["reason"] == "").all()


def test_one_shared_word_in_two_top_10_sets_gives_the_papers_0_053():
    a = {f"a{i}": 10 - i for i in range(10)} | {"shared": 0.5}
    b = {f"b{i}": 10 - i for i in range(10)} | {"shared": 100}
    a["a9"] = 0.1  # push a9 below "shared", so a's top 10 holds it
    out = jaccard_stability(table({"kaggle": a, "twitter": b}), ks=(10,))
    assert out["jaccard"].iat[0] == pytest.approx(1 / 19)
    assert round(out["jaccard"].iat[0], 3) == 0.053  # CPFE Table VIII's smallest non-zero value


def test_missing_class_on_a_platform_is_undefined_not_zero():
    frame = pd.concat(
        [
            table({"kaggle": KAGGLE, "reddit": REDDIT}),
            table({"kaggle": {"worry": 1.0}}, cls="anxiety"),
            table({"twitter": TWITTER}, cls="stress"),
        ],
        ignore_index=True,
    )
    out = jaccard_stability(frame, ks=(5,))
    anx = out[out["class"] == "anxiety"].set_index(["platform_a", "platform_b"])
    assert math.isnan(anx.loc[("kaggle", "reddit"), "jaccard"])
    assert anx.loc[("kaggle", "reddit"), "reason"] == (
        "no attributed words for class on platform(s) reddit: Jaccard undefined"
    )
    assert anx.loc[("reddit", "twitter"), "reason"] == (
        "no attributed words for class on platform(s) reddit, twitter: Jaccard undefined"
    )
    assert anx.loc[("kaggle", "reddit"), ["n_a", "n_b"]].tolist() == [1, 0]
    dep = out[out["class"] == "depression"].set_index(["platform_a", "platform_b"])
    assert dep.loc[("kaggle", "reddit"), "jaccard"] == pytest.approx(3 / 7)
    assert len(out) == 3 * 3  # classes x platform pairs of this model and seed


def test_platforms_pair_only_within_model_and_seed():
    frame = pd.concat(
        [
            table({"kaggle": KAGGLE, "reddit": REDDIT, "twitter": TWITTER}, seed=0),
            table({"kaggle": KAGGLE, "reddit": KAGGLE}, seed=1),
            table({"kaggle": REDDIT}, model="roberta", seed=0),
        ],
        ignore_index=True,
    )
    out = jaccard_stability(frame, ks=(5,))
    assert out.groupby(["model", "seed"]).size().to_dict() == {("bert", 0): 3, ("bert", 1): 1}
    assert out[out["seed"] == 1]["jaccard"].tolist() == [1.0]


def test_duplicate_words_within_a_group_are_refused():
    frame = table({"kaggle": KAGGLE})
    twice = pd.concat([frame, frame.assign(method="integrated_gradients")], ignore_index=True)
    with pytest.raises(ValueError, match="appears twice.*data set 'kaggle'.*filter on the method"):
        top_k_words(twice, 5)
    with pytest.raises(ValueError, match="lacks column"):
        top_k_words(frame.drop(columns="score"), 5)


def test_two_data_sets_on_one_platform_are_two_places():
    """TSS gold and Rastogi are both Twitter: their words are ranked and paired apart, not merged or refused."""
    frame = pd.concat(
        [
            table({"reddit": KAGGLE}),
            table({"tss_gold": REDDIT, "rastogi": TWITTER | {"shared": 0.1}}, platform="twitter"),
        ],
        ignore_index=True,
    )
    twice = pd.concat([frame, table({"rastogi": {"p": 2}}, platform="twitter")], ignore_index=True)
    top = top_k_words(frame, 5).groupby(["platform", "dataset"])["word"].apply(list)
    assert top[("twitter", "tss_gold")] == ["a", "c", "x", "y", "e"] and top[("twitter", "rastogi")][0] == "p"
    out = jaccard_stability(frame, ks=(5,)).set_index(["dataset_a", "dataset_b"])
    assert list(out.index) == [("reddit", "rastogi"), ("reddit", "tss_gold"), ("rastogi", "tss_gold")]
    assert (out["platform_a"].tolist(), out["platform_b"].tolist()) == (
        ["reddit", "reddit", "twitter"],
        ["twitter"] * 3,
    )
    assert out.loc[("reddit", "tss_gold"), "jaccard"] == pytest.approx(3 / 7)  # KAGGLE vs REDDIT, as by platform
    assert out.loc[("reddit", "rastogi"), "jaccard"] == 0.0  # other words: another number, not tss_gold's
    assert out.loc[("rastogi", "tss_gold"), "jaccard"] == 0.0
    with pytest.raises(ValueError, match="word 'p' appears twice .* platform 'twitter', data set 'rastogi'"):
        jaccard_stability(twice)
    retention = clinical_retention(frame, ["a", "p"], k=5).set_index("dataset")
    assert retention[["platform", "retained"]].to_dict("index") == {
        "rastogi": {"platform": "twitter", "retained": 1},
        "reddit": {"platform": "reddit", "retained": 1},
        "tss_gold": {"platform": "twitter", "retained": 1},
    }


def test_a_table_without_data_sets_takes_the_platform_as_its_data_set():
    frame = table({"kaggle": KAGGLE, "reddit": REDDIT})
    bare = frame.drop(columns="dataset")
    out = jaccard_stability(bare, ks=(5,))
    assert out[["dataset_a", "dataset_b"]].values.tolist() == [["kaggle", "reddit"]]
    assert out["jaccard"].tolist() == jaccard_stability(frame, ks=(5,))["jaccard"].tolist()
    half = frame.assign(dataset=frame["dataset"].where(frame["platform"] == "kaggle"))  # some rows without one
    assert jaccard_stability(half, ks=(5,)).equals(out)
    assert set(clinical_retention(bare, ["a"], k=5)["dataset"]) == {"kaggle", "reddit"}
    assert with_datasets(bare, {"reddit": "goemotions"})["dataset"].unique().tolist() == ["kaggle", "goemotions"]
    assert with_datasets(frame) is frame  # a full table is left as it is


def test_clinical_retention_by_hand():
    frame = table({"kaggle": {"Hopeless": 9, "tired": 8, "lol": 7, "worthless": 1}, "twitter": {"lol": 3, "omg": 2}})
    out = clinical_retention(frame, ["hopeless", "tired", "worthless"], k=3)
    assert list(out.columns) == ["model", "seed", "platform", "dataset", "class", "k", "retained", "n_top", "share"]
    out = out.set_index("platform")
    assert out.loc["kaggle", ["retained", "n_top"]].tolist() == [2, 3]  # worthless is 4th, outside the top 3
    assert out.loc["kaggle", "share"] == pytest.approx(2 / 3)
    assert out.loc["twitter", ["retained", "n_top", "share"]].tolist() == [0, 2, 0.0]
    assert (out["k"] == 3).all()


def test_proxy_clinical_vocabulary():
    vocab = load_proxy_clinical()
    assert 40 <= len(vocab) <= 50
    assert all(w == w.lower() and w.isalpha() for w in vocab)  # single lower-case words
    text = files("mhaudit.attribution").joinpath("proxy_clinical.txt").read_text(encoding="utf-8")
    terms = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert len(terms) == len(set(terms)) == len(vocab)  # no duplicates in the file
    assert {"hopeless", "worthless", "insomnia", "fatigue", "panic", "worry", "restless", "irritable", "tense"} <= vocab
    header = text.split("\n\n")[0].lower()
    assert "proxy" in header and "not a diagnostic" in header and "dsm-5" in header
