"""The synthetic generator is real, not decorative: the shifts it puts in are there, and only those."""

import numpy as np
import pandas as pd
import pytest

from mhaudit.models import create
from mhaudit.stats.auc import macro_auc
from mhaudit.stats.calibration import softmax
from mhaudit.synthetic.simulate import CLASSES, SimulationConfig, simulate, word_list
from mhaudit.tables.predictions import predict_corpus, scores


def cross_platform_aucs(config):
    corpus = simulate(config)
    f = corpus.frame
    true = f[f["label_source"] == "synthetic-true"]
    train = true[(true["platform"] == "synthetic-forum") & true["split"].isin(["train", "val"])]
    model = create("tfidf-lr").fit(train, corpus.classes)
    preds = predict_corpus(model, corpus, model_name="tfidf-lr", seed=0)
    preds = preds[~preds["dataset"].str.endswith("_auto")]
    auc = {
        platform: macro_auc(
            pd.Categorical(rows["label"], categories=corpus.classes).codes,
            softmax(scores(rows, corpus.classes)),
            len(corpus.classes),
        )
        for platform, rows in preds.groupby("platform")
    }
    home = auc.pop("synthetic-forum")
    return home, float(np.mean(list(auc.values())))


def test_no_shift_means_no_cross_platform_drop():
    home, away = cross_platform_aucs(SimulationConfig.no_shift(n_per_platform=3000))
    assert home > 0.85
    assert abs(home - away) <= 0.02


def test_default_shifts_drop_macro_auc_by_at_least_015():
    home, away = cross_platform_aucs(SimulationConfig())
    assert home - away >= 0.15


def test_each_class_draws_on_at_least_200_content_words():
    f = simulate(SimulationConfig()).frame
    for cls in CLASSES:
        lexicon = set(word_list(f"class_{cls}"))
        used = {w for text in f.loc[f["label"] == cls, "text"] for w in text.split() if w in lexicon}
        assert len(used) >= 200, cls


@pytest.mark.parametrize("noise", [0.1, 0.35])
def test_automatic_labels_disagree_at_the_configured_rate(noise):
    f = simulate(SimulationConfig(auto_noise=noise, auto_platforms=("tweets", "comments"))).frame
    truth = f[f["label_source"] == "synthetic-true"].set_index("id")["label"]
    for dataset, auto in f[f["label_source"] == "synthetic-auto"].groupby("dataset"):
        paired = truth.reindex(auto["id"].str.removeprefix("auto-")).to_numpy()
        rate = float(np.mean(paired != auto["label"].to_numpy()))
        assert abs(rate - noise) <= 0.02, dataset


def test_label_shift_moves_the_priors_and_everything_is_marked_synthetic():
    corpus = simulate(SimulationConfig(n_per_platform=4000))
    f = corpus.frame[corpus.frame["label_source"] == "synthetic-true"]
    share = pd.crosstab(f["platform"], f["label"], normalize="index")
    assert share.loc["synthetic-forum", "depression"] == pytest.approx(0.40, abs=0.03)
    assert share.loc["synthetic-comments", "normal"] == pytest.approx(0.62, abs=0.03)
    assert corpus.synthetic and f["platform"].str.startswith("synthetic").all()
    same = simulate(SimulationConfig.no_shift(n_per_platform=4000)).frame
    assert pd.crosstab(same["platform"], same["label"], normalize="index").std().max() < 0.02


def test_seeded():
    a, b = simulate(SimulationConfig(n_per_platform=50)), simulate(SimulationConfig(n_per_platform=50))
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame["text"].equals(simulate(SimulationConfig(n_per_platform=50, seed=1)).frame["text"])
