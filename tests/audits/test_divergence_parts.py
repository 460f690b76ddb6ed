"""Parts of the divergence audit checked against independent references (small inputs, no parsing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from mhaudit.audits.divergence import tables as T
from mhaudit.audits.divergence.baselines import join_baseline
from mhaudit.audits.divergence.conflicts import conflicts, write_conflicts
from mhaudit.audits.divergence.design import build_design
from mhaudit.audits.divergence.fitting import THRESHOLDS, _best_threshold, combine, fit_channel, parse_channel
from mhaudit.core.errors import InputError
from mhaudit.stats.divergence import degree_of_divergence


def frame() -> pd.DataFrame:
    rows = []
    for dataset, split, n in (
        ("forum", "train", 40),
        ("forum", "test", 20),
        ("tweets", "test", 20),
        ("tweets_auto", "test", 20),
        ("forum_auto", "test", 20),
    ):
        for i in range(n):
            rows.append(
                {
                    "id": f"{dataset}-{split}-{i}",
                    "text": f"post {i}",
                    "label": ("calm", "stress")[i % 2],
                    "platform": dataset.split("_")[0],
                    "dataset": dataset,
                    "split": split,
                }
            )
    return pd.DataFrame(rows)


def test_design_splits_rows_and_sides():
    design = build_design(frame(), ["calm", "stress"], ["forum", "tweets"], ["tweets_auto", "forum_auto"])
    assert design.train_dataset == "forum" and design.positive == "stress" and len(design.train) == 40
    assert len(design.evaluation["forum"]) == 20 and set(design.evaluation["forum"]["split"]) == {"test"}
    assert design.human == ["forum", "tweets"] and design.auto == ["tweets_auto", "forum_auto"]
    assert design.y_train.sum() == 20


@pytest.mark.parametrize(
    "human, auto, classes, message",
    [
        (["forum", "tweets"], ["tweets"], ["calm", "stress"], "named both --human and --auto"),
        (["forum"], [], ["calm", "stress"], "name at least one data set with --auto"),
        (["forum"], ["nowhere"], ["calm", "stress"], "not in the corpus"),
        (["forum"], ["tweets_auto"], ["calm", "stress", "other"], "needs a binary corpus"),
    ],
)
def test_design_errors(human, auto, classes, message):
    with pytest.raises(InputError, match=message):
        build_design(frame(), classes, human, auto)


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--human", "forum", "--auto", "tweets_auto", "--train-dataset", "forun"],
            (
                "--train-dataset data set 'forun' (did you mean 'forum'?) is not in the corpus; "
                "its data sets are forum, forum_auto, tweets, tweets_auto"
            ),
        ),
        (
            ["--human", "forum", "--human", "tweet", "--auto", "twets_auto", "--auto", "reddit"],
            "--human data set 'tweet' (did you mean 'tweets'?) is not in the corpus; "
            "its data sets are forum, forum_auto",
        ),
        (
            ["--human", "forum", "--auto", "twets_auto", "--auto", "reddit"],
            "--auto data sets 'twets_auto' (did you mean 'tweets_auto'?), 'reddit' are not in the corpus; "
            "its data sets",
        ),
    ],
)
def test_cli_names_a_misspelt_data_set_and_the_ones_there_are(tmp_path, flags, message):
    from typer.testing import CliRunner

    from mhaudit.cli import app
    from mhaudit.tables.corpus.schema import Corpus
    from tests.cli_checks import assert_one_sentence_failure

    Corpus.build(frame(), ["calm", "stress"]).write(tmp_path / "c.parquet")
    result = CliRunner().invoke(
        app, ["audit", "divergence", "--corpus", str(tmp_path / "c.parquet"), *flags, "--out", str(tmp_path / "never")]
    )
    assert_one_sentence_failure(result, message)
    assert not (tmp_path / "never").exists()


def test_design_rejects_a_one_class_data_set():
    f = frame()
    f.loc[f["dataset"] == "tweets_auto", "label"] = "calm"
    with pytest.raises(InputError, match="tweets_auto has only class 'calm'"):
        build_design(f, ["calm", "stress"], ["forum"], ["tweets_auto"])


def test_channel_names():
    assert parse_channel("cb") == ("B", "C") and parse_channel("ABC") == ("A", "B", "C")
    for bad in ("", "AD", "AA"):
        with pytest.raises(ValueError):
            parse_channel(bad)


def test_combine_gives_unit_rows():
    rng = np.random.default_rng(0)
    blocks = {"A": rng.normal(size=(5, 7)), "C": rng.normal(size=(5, 3)) * 100}
    x = combine(blocks, ("A", "C"))
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0)
    assert np.allclose(np.linalg.norm(x[:, :7], axis=1), np.sqrt(0.5))  # each channel weighs the same
    assert np.all(combine({"A": np.zeros((2, 3))}, ("A",)) == 0)


def test_threshold_maximises_macro_f1_by_brute_force():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    prob = np.clip(0.35 * y + rng.uniform(0, 0.7, 300), 0, 1)
    threshold, score = _best_threshold(y, prob)
    brute = [f1_score(y, prob >= t, average="macro", labels=[0, 1], zero_division=0) for t in THRESHOLDS]
    assert score == pytest.approx(max(brute), abs=1e-12)
    assert 0.2 <= threshold <= 0.8 and brute[list(THRESHOLDS).index(threshold)] == pytest.approx(max(brute), abs=1e-12)


def test_elastic_net_for_channels_with_b_and_weights_per_block():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 200)
    blocks = {"B": rng.normal(size=(200, 6)) + y[:, None] * 0.8, "C": rng.normal(size=(200, 10))}
    folds = np.arange(200) % 5
    bc = fit_channel("BC", blocks, y, folds, n_jobs=1)
    c = fit_channel("C", blocks, y, folds, n_jobs=1)
    assert bc.config["l1_ratio"] > 0 and bc.scaler is None
    assert c.config["l1_ratio"] == 0 and c.scaler is not None
    kept = bc.weights_kept()
    assert set(kept) == {"B", "C"} and 0 < kept["B"] <= 6 and kept["C"] <= 10
    x = combine(blocks, ("C",))
    logit = np.log(c.prob(x) / (1 - c.prob(x)))
    at_mean = c.model.decision_function(c.scaler.transform(c.train_mean[None, :]))
    assert np.allclose(c.attributions(x).sum(axis=1), logit - at_mean)  # linear SHAP: efficiency


def scored(seed=0, n_boot=2000):
    rng = np.random.default_rng(seed)
    sizes = {"h1": 300, "h2": 200, "a1": 250, "a2": 150}
    side = {"h1": "human", "h2": "human", "a1": "auto", "a2": "auto"}
    y = {d: rng.integers(0, 2, n).astype(np.int8) for d, n in sizes.items()}

    def noisy(v, acc):
        return np.where(rng.random(v.size) < acc, v, 1 - v).astype(np.int8)

    keys = ["A", "C", "AC"]
    preds = {
        d: np.vstack(
            [
                noisy(y[d], 0.8 if side[d] == "auto" else 0.65),
                noisy(y[d], 0.78 if side[d] == "human" else 0.6),
                noisy(y[d], 0.7),
            ]
        )
        for d in sizes
    }
    probs = {d: p.astype(float) for d, p in preds.items()}
    return T.Scored(keys, y, preds, probs, side, {"h1": "r", "h2": "t", "a1": "t", "a2": "r"}, n_boot, seed)


def test_dod_matches_the_reference_statistic():
    s = scored()
    ours = T.dod(s, ["A", "C", "AC"]).set_index("contrast")
    groups = {d: (s.y[d], s.preds[d][1], s.preds[d][0]) for d in s.datasets}
    ref = degree_of_divergence(groups, ["h1", "h2"], ["a1", "a2"], n_boot=2000, rng=5)
    assert ours.loc["C-A", "estimate"] == pytest.approx(ref["estimate"], abs=1e-12)
    assert ours.loc["C-A", "se"] == pytest.approx(ref["se"], rel=0.1)  # two independent bootstraps
    assert ours.loc["C-A", "ci_low"] > 0 and ours.loc["C-A", "p"] < 0.01
    assert ours.loc["AC-A", "alternative"] == "less"
    by = T.dod_by_dataset(s, ["C"]).set_index("dataset")
    f1 = lambda d, j: f1_score(s.y[d], s.preds[d][j], average="macro")  # noqa: E731
    assert by.loc["a2", "delta"] == pytest.approx(f1("a2", 1) - f1("a2", 0), abs=1e-12)
    human = np.mean([f1(d, 1) - f1(d, 0) for d in ("h1", "h2")])
    auto = np.mean([f1(d, 1) - f1(d, 0) for d in ("a1", "a2")])
    assert ours.loc["C-A", "estimate"] == pytest.approx(human - auto, abs=1e-12)
    assert ours.loc["C-A", "permutation_min_p"] == pytest.approx(1 / 6)


def test_interference_platform_stratified_and_masking_tables():
    s = scored()
    inter = T.interference(s).set_index("scope")
    f1 = lambda d, j: f1_score(s.y[d], s.preds[d][j], average="macro")  # noqa: E731
    assert inter.loc["human", "estimate"] == pytest.approx(np.mean([f1(d, 2) - f1(d, 1) for d in ("h1", "h2")]))
    assert inter.loc["a1", "estimate"] == pytest.approx(f1("a1", 2) - f1("a1", 1))
    plat = T.dod_platform_stratified(s, ["C"]).set_index("platform")
    assert plat.loc["t", "estimate"] == pytest.approx((f1("h2", 1) - f1("h2", 0)) - (f1("a1", 1) - f1("a1", 0)))


def test_mcnemar_table_and_fdr_family():
    s = scored()
    table = T.mcnemar_table(s, [("C", "A")]).set_index("dataset")
    d = "h1"
    right_c, right_a = s.preds[d][1] == s.y[d], s.preds[d][0] == s.y[d]
    contingency = [
        [np.sum(right_c & right_a), np.sum(right_c & ~right_a)],
        [np.sum(~right_c & right_a), np.sum(~right_c & ~right_a)],
    ]
    assert table.loc[d, "p"] == pytest.approx(sm_mcnemar(contingency, exact=False, correction=True).pvalue, abs=1e-12)
    tables = {"dod": T.dod(s, ["C", "AC"]), "mcnemar": T.mcnemar_table(s, [("C", "A")])}
    family = T.apply_fdr(tables, {"dod": "p", "mcnemar": "p"})
    p = np.concatenate([tables["dod"]["p"], tables["mcnemar"]["p"]])
    assert family == p.size
    assert np.allclose(
        np.concatenate([tables["dod"]["q"], tables["mcnemar"]["q"]]), multipletests(p, method="fdr_bh")[1]
    )


def test_conflict_types_counts_and_privacy(tmp_path):
    frames = {"d": pd.DataFrame({"id": list("abcdef"), "text": ["secret"] * 6})}
    y = {"d": np.array([0, 1, 0, 1, 1, 0])}
    preds = {
        "d": {"A": np.array([1, 0, 0, 1, 1, 0]), "C": np.array([0, 1, 1, 0, 1, 0]), "BC": np.array([0, 1, 1, 0, 1, 0])}
    }
    counts, sample = conflicts(frames, preds, y, ["A", "C", "BC"], per_dataset=10)
    got = counts.set_index("failure_type")["count"].to_dict()
    assert got == {
        "keyword_false_positive": 1,
        "implicit_false_negative": 1,
        "structural_false_positive": 1,
        "structural_false_negative": 1,
    }
    assert "text" not in sample.columns and len(sample) == 4
    _, with_text = conflicts(frames, preds, y, ["A", "C", "BC"], per_dataset=2, include_text=True)
    assert len(with_text) == 2 and set(with_text["text"]) == {"secret"}
    paths = write_conflicts(counts, sample, tmp_path)
    sheets = pd.read_excel(paths[1], sheet_name=None)
    assert set(sheets) == {"counts", "d"} and len(sheets["d"]) == 4
    assert pd.read_csv(paths[0])["id"].tolist() == sample["id"].tolist()


def test_baseline_join_names_missing_rows():
    rows = pd.DataFrame({"id": ["1", "2", "3"]})
    table = pd.DataFrame({"id": ["1", "3"], "score": [0.2, 0.9], "pred": [0, 1]})
    with pytest.raises(InputError, match="no prediction for 1 of 3 scored rows.*first missing id: 2"):
        join_baseline("bert", table, rows)


def test_baseline_with_repeated_ids_is_refused():
    table = pd.DataFrame({"id": ["1", "1"], "score": [0.2, 0.9], "pred": [0, 1]})
    with pytest.raises(InputError, match="1 repeated id"):
        join_baseline("bert", table, pd.DataFrame({"id": ["1"]}))


def test_two_sided_permutation_doubles_the_attainable_minimum():
    deltas = {"h1": 0.3, "h2": 0.2, "a1": -0.1, "a2": -0.2}
    two = T._permutation(deltas, ["h1", "h2"], "two-sided")
    assert two["min_p"] == pytest.approx(1 / 3) and two["p"] == pytest.approx(1 / 3)


def test_data_notes_count_truncation_and_training_overlap():
    from mhaudit.audits.divergence.audit import _data_notes

    f = frame()
    f.loc[f["dataset"] == "tweets_auto", "text"] = [f"POST   {i}" for i in range(20)]  # case and spacing differ
    f.loc[f["dataset"] == "forum_auto", "text"] = [f"other {i}" for i in range(20)]
    design = build_design(f, ["calm", "stress"], ["forum", "tweets"], ["tweets_auto", "forum_auto"])
    notes = _data_notes(design, truncated=2)
    assert "2 text(s) longer than 20,000 characters" in notes[0]
    assert notes[1].endswith("forum 20, tweets 20, tweets_auto 20.")  # frame()'s texts repeat the training ones
    assert _data_notes(build_design(f, ["calm", "stress"], ["forum"], ["forum_auto"]), truncated=0) == [
        "Training texts also in scored data sets (decontaminate with `mhaudit data clean --against`): forum 20."
    ]
