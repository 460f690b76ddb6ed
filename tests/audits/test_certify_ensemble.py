"""Certify one run with an ensemble of runs scored on the same pool (SYNTHETIC scores): which run is certified,
the ensemble-mean posteriors, the design and the report, their bad inputs, and a single run left as it was."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

from mhaudit.audits.certify import CertifyInputs, CertifyOptions, audit_certify, certification_sample, pool_of
from mhaudit.core.errors import InputError
from mhaudit.stats.bcts import fit_bcts
from mhaudit.tables.predictions import PredictionSet, logit_column
from tests.audits.test_certify import human_labels

CLASSES = ["control", "depression"]


def runs_on(n: int, n_runs: int, seed: int, *, labelled: bool, models=("tfidf-lr",)):
    """SYNTHETIC predictions of `n_runs` runs per model on n items: each run's logits are one shared score plus
    its own noise, so the runs mostly agree and disagree near the boundary; the truth is drawn from the shared
    score. Returns the PredictionSet and the truth."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=n) * 1.6 - 0.6
    y = (rng.random(n) < 1 / (1 + np.exp(-shared))).astype(int)
    frames = []
    for model in models:
        for run in range(n_runs):
            margin = shared + rng.normal(size=n) * 0.9 + rng.normal() * 0.2
            frames.append(
                pd.DataFrame(
                    {
                        "id": [f"post-{i}" for i in range(n)],
                        "model": model,
                        "seed": run,
                        "platform": "synthetic",
                        "dataset": "synthetic",
                        "split": "test",
                        "label": [CLASSES[v] for v in y] if labelled else None,
                        logit_column(CLASSES[0]): -margin / 2,
                        logit_column(CLASSES[1]): margin / 2,
                    }
                )
            )
    return PredictionSet(pd.concat(frames, ignore_index=True), CLASSES), pd.Series(
        y, index=[f"post-{i}" for i in range(n)]
    )


def _codes(frame):
    return (frame["label"] == CLASSES[1]).to_numpy().astype(int)


def _items(n):
    return pd.DataFrame({"id": [f"post-{i}" for i in range(n)], "text": [f"synthetic post {i}" for i in range(n)]})


def test_the_ensemble_mean_posterior_and_which_run_is_certified():
    target, _ = runs_on(1500, 4, seed=0, labelled=False, models=("tfidf-lr", "char-tfidf-lr"))
    reference, _ = runs_on(400, 4, seed=1, labelled=True, models=("tfidf-lr", "char-tfidf-lr"))
    with pytest.raises(InputError, match="several runs .* name the one to certify as MODEL:SEED or by its run-<k>"):
        pool_of(target, reference)
    with pytest.raises(InputError, match="several runs"):
        pool_of(target, reference, model="tfidf-lr")  # four seeds: which?
    with pytest.raises(InputError, match="no run of tfidf-lr seed 9 in the predictions"):
        pool_of(target, reference, model="tfidf-lr", seed=9)
    pool = pool_of(target, reference, model="tfidf-lr", seed=2)
    assert (pool.model, pool.seed, len(pool.runs)) == ("tfidf-lr", 2, 8) and pool.runs[0] == ("tfidf-lr", 2)
    frame = target.frame
    expected, certified = [], None
    for (model, seed), run in frame.groupby(["model", "seed"]):
        ref = reference.frame[(reference.frame["model"] == model) & (reference.frame["seed"] == seed)]
        logits = run[[logit_column(c) for c in CLASSES]].to_numpy()
        fit = fit_bcts(ref[[logit_column(c) for c in CLASSES]].to_numpy(), _codes(ref))
        expected.append(fit.probs(logits))
        if (model, seed) == ("tfidf-lr", 2):
            certified = logits.argmax(axis=1)
    assert np.allclose(pool.probs, np.mean(expected, axis=0), atol=1e-12)
    assert (pool.pred == certified).all()  # the certified run's predictions, not the ensemble's
    assert "per run" in pool.calibration
    assert pool.predictor == (
        "the mean posterior of an ensemble of 8 runs (char-tfidf-lr seeds 0, 1, 2, 3; tfidf-lr seeds 0, 1, 2, 3)"
    )
    with pytest.raises(InputError, match="reference predictions hold no run char-tfidf-lr seed 0"):
        pool_of(
            target,
            PredictionSet(reference.frame[reference.frame["model"] == "tfidf-lr"], CLASSES),
            model="tfidf-lr",
            seed=2,
        )
    short = PredictionSet(frame.drop(index=frame.index[(frame["seed"] == 3) & (frame["id"] == "post-7")]), CLASSES)
    with pytest.raises(InputError, match="every run of an ensemble must score the same items"):
        pool_of(short, model="tfidf-lr", seed=2)
    unscaled = pool_of(target, model="tfidf-lr", seed=0)  # no reference: the mean of the runs' softmax
    logits = [run[[logit_column(c) for c in CLASSES]].to_numpy() for _, run in frame.groupby(["model", "seed"])]
    assert np.allclose(unscaled.probs, np.mean([softmax(z, axis=1) for z in logits], axis=0))


def test_certify_with_an_ensemble_reports_the_run_and_covers(tmp_path):
    target, truth = runs_on(2000, 5, seed=2, labelled=False)
    reference, _ = runs_on(500, 5, seed=3, labelled=True)
    pool = pool_of(target, reference, model="tfidf-lr", seed=0)
    y = truth.reindex(pool.ids).to_numpy()
    true_f1 = np.mean(
        [2 * ((y == c) & (pool.pred == c)).sum() / ((y == c).sum() + (pool.pred == c).sum()) for c in (0, 1)]
    )
    hits = []
    for draw in range(20):
        sample, design = certification_sample(pool, _items(2000), "mh", 150, seed=draw)
        result = audit_certify(
            CertifyInputs(human_labels(sample["item_id"], truth), sample, design, target), CertifyOptions("mh")
        )
        head = (
            result.table("certified")
            .set_index(["estimator", "metric"])
            .loc[("prediction-powered (PPI++, tuned λ)", "macro_f1")]
        )
        hits.append(head["ci_low"] <= true_f1 <= head["ci_high"])
    assert np.mean(hits) >= 0.8  # 20 draws: a 95% interval misses 4 or more with probability ~1.6%
    assert (design["runs"] == 5).all() and (design["certified_seed"] == 0).all()
    assert result.options["certified"] == "tfidf-lr seed 0" and result.options["runs"] == 5
    assert "ensemble of 5 runs" in result.options["predictor"]
    assert "Certified run: tfidf-lr seed 0, one of 5 runs scored on the pool" in result.sections[0].text
    assert result.verdicts["subject"].iat[0] == "tfidf-lr seed 0"
    only = PredictionSet(target.frame[target.frame["seed"] == 0].reset_index(drop=True), CLASSES)
    with pytest.raises(InputError, match="drawn for an ensemble of 5 runs; these predictions hold 1"):
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, only)
    swapped = target.frame.copy()
    swapped.loc[swapped["seed"] == 4, "seed"] = 7  # another ensemble of as many runs
    with pytest.raises(InputError, match="drawn for other predictions"):
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, PredictionSet(swapped, CLASSES))


def test_one_run_keeps_its_design_whatever_the_reference_is_called():
    """A single run: its own (BCTS or softmax) posteriors and today's digest; its reference may carry another
    model name (files are named after themselves)."""
    target, _ = runs_on(600, 1, seed=4, labelled=False)
    reference, _ = runs_on(300, 1, seed=5, labelled=True)
    renamed = PredictionSet(reference.frame.assign(model="reference-file"), CLASSES)
    pool = pool_of(target, renamed)
    logits = target.frame[[logit_column(c) for c in CLASSES]].to_numpy()
    ref = reference.frame
    fit = fit_bcts(ref[[logit_column(c) for c in CLASSES]].to_numpy(), _codes(ref))
    assert np.array_equal(pool.probs, fit.probs(logits)) and len(pool.runs) == 1
    assert pool.predictor == "the certified model's posteriors" and pool.calibration.startswith("calibrated on 300")


def _bins(names: pd.Series) -> pd.DataFrame:
    """Each stratum name's parts: predicted class, whose probability, bin, and the range it prints."""
    parts = names.str.extract(r"^predicted (\w+), (\w+) P\((\w+)\) bin (\d) of (\d) \(([\d.]+)-([\d.]+)\)$")
    parts.columns = ["predicted", "whose", "of", "bin", "bins", "low", "high"]
    return parts.astype({"low": float, "high": float})


def test_strata_say_whose_probability_they_bin():
    """An ensemble's strata bin its mean probability of the certified run's class, which can fall under 0.5 (the
    certified run predicts the class, most runs do not); the name says so, and its range is the stratum's."""
    target, _ = runs_on(1200, 5, seed=8, labelled=False)
    pool = pool_of(target, model="tfidf-lr", seed=3)
    _, design = certification_sample(pool, _items(1200), "mh", 120, seed=0)
    strata = design.drop_duplicates("stratum").set_index("stratum")
    parts = _bins(pd.Series(strata.index, index=strata.index))
    assert parts.notna().all().all() and (parts["whose"] == "ensemble").all()
    assert (parts["predicted"] == parts["of"]).all() and parts["bins"].eq("4").all()
    by_stratum = design.groupby("stratum")
    for name, row in parts.iterrows():
        posterior = by_stratum.get_group(name)[f"posterior_{row['predicted']}"]
        assert (round(posterior.min(), 3), round(posterior.max(), 3)) == (row["low"], row["high"])
    assert parts["low"].min() < 0.5  # the ensemble doubts some of the certified run's predictions
    alone = pool_of(PredictionSet(target.frame[target.frame["seed"] == 3].reset_index(drop=True), CLASSES))
    _, single = certification_sample(alone, _items(1200), "mh", 120, seed=0)
    single_parts = _bins(pd.Series(single["stratum"].unique()))
    assert (single_parts["whose"] == "model").all() and single_parts["low"].min() >= 0.5  # its own argmax


def _hand_estimates(design, sample, truth, pred, classes=CLASSES):
    """Independent reference, written from the formulas in docs/validation.md: the design-weighted (labels
    only) accuracy and macro-F1 of `pred` (codes in design order), and PPI (λ = 1) accuracy with the design's
    posteriors as predictor."""
    strata = design["stratum"].to_numpy()
    probs = design[[f"posterior_{c}" for c in classes]].to_numpy()
    ids = design["item_id"].astype(str).to_numpy()
    drawn = np.isin(ids, sample["item_id"].astype(str))
    y = truth.reindex(ids).to_numpy()
    z, f = (y == pred).astype(float), probs[np.arange(len(pred)), pred]
    acc_labels = acc_ppi = 0.0
    tp, true = np.zeros(2), np.zeros(2)
    for h in np.unique(strata):
        pool_h, lab = strata == h, (strata == h) & drawn
        w = pool_h.mean()
        acc_labels += w * z[lab].mean()
        acc_ppi += w * (f[pool_h].mean() + (z[lab] - f[lab]).mean())
        for c in (0, 1):
            tp[c] += w * ((y[lab] == c) & (pred[lab] == c)).mean()
            true[c] += w * (y[lab] == c).mean()
    predicted = np.bincount(pred, minlength=2) / len(pred)
    return acc_labels, acc_ppi, float(np.mean(2 * tp / (predicted + true)))


def test_one_run_of_an_ensemble_certified_alone_with_the_ensembles_sample():
    """The sample drawn for run 0 with its ensemble of 5 certifies run 3 as well: the design's strata, weights and
    posteriors with run 3's own predictions, equal to the hand-computed estimators, covering run 3's truth."""
    target, truth = runs_on(2000, 5, seed=2, labelled=False)
    reference, _ = runs_on(500, 5, seed=3, labelled=True)
    pool = pool_of(target, reference, model="tfidf-lr", seed=0)
    frame = target.frame
    run3 = frame[frame["seed"] == 3].set_index("id").loc[pool.ids]
    pred3 = run3[[logit_column(c) for c in CLASSES]].to_numpy().argmax(axis=1)
    assert (pred3 != pool.pred).sum() > 100  # run 3 disagrees with the drawn run on many posts
    y = truth.reindex(pool.ids).to_numpy()
    true_f1 = np.mean([2 * ((y == c) & (pred3 == c)).sum() / ((y == c).sum() + (pred3 == c).sum()) for c in (0, 1)])
    hits = []
    for draw in range(20):
        sample, design = certification_sample(pool, _items(2000), "mh", 150, seed=draw)
        inputs = CertifyInputs(human_labels(sample["item_id"], truth), sample, design, target, run=("tfidf-lr", 3))
        result = audit_certify(inputs, CertifyOptions("mh"))
        table = result.table("certified").set_index(["estimator", "metric"])["estimate"]
        in_design = run3.loc[design["item_id"], [logit_column(c) for c in CLASSES]].to_numpy().argmax(axis=1)
        acc_labels, acc_ppi, f1_labels = _hand_estimates(design, sample, truth, in_design)
        assert table[("labels only (design-weighted)", "accuracy")] == pytest.approx(acc_labels, abs=1e-12)
        assert table[("prediction-powered (PPI, λ = 1)", "accuracy")] == pytest.approx(acc_ppi, abs=1e-12)
        assert table[("labels only (design-weighted)", "macro_f1")] == pytest.approx(f1_labels, abs=1e-12)
        head = (
            result.table("certified")
            .set_index(["estimator", "metric"])
            .loc[("prediction-powered (PPI++, tuned λ)", "macro_f1")]
        )
        hits.append(head["ci_low"] <= true_f1 <= head["ci_high"])
    assert np.mean(hits) >= 0.8  # 20 draws: a 95% interval misses 4 or more with probability ~1.6%
    assert (inputs.run, inputs.drawn) == (("tfidf-lr", 3), ("tfidf-lr", 0))
    assert result.verdicts["subject"].iat[0] == "tfidf-lr seed 3" and result.options["drawn_for"] == "tfidf-lr seed 0"
    assert "The sample was drawn for tfidf-lr seed 0: its strata, weights and posteriors" in result.sections[0].text
    drawn = audit_certify(
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, target), CertifyOptions("mh")
    ).table("certified")
    assert drawn["estimate"].iat[-1] != table.iat[-1]  # run 0's numbers are not run 3's
    with pytest.raises(InputError, match="no run of tfidf-lr seed 9 in the predictions"):
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, target, run=("tfidf-lr", 9))
    alone = PredictionSet(frame[frame["seed"] == 3].reset_index(drop=True), CLASSES)
    with pytest.raises(InputError, match=r"ensemble of 5 runs; these predictions hold 1: give every run .* \(--run"):
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, alone, run=("tfidf-lr", 3))


def test_a_sample_drawn_for_one_run_of_a_multi_run_file():
    """Drawn for run 2 alone (its rows of a 4-run file): certified from the whole file by naming the run, with the
    numbers of its rows alone; another run, or none named, is refused."""
    target, truth = runs_on(900, 4, seed=6, labelled=False)
    frame = target.frame
    alone = PredictionSet(frame[frame["seed"] == 2].reset_index(drop=True), CLASSES)
    sample, design = certification_sample(pool_of(alone), _items(900), "mh", 100, seed=0)
    labels = human_labels(sample["item_id"], truth)
    expected = audit_certify(CertifyInputs(labels, sample, design, alone), CertifyOptions("mh")).table("certified")
    named = CertifyInputs(labels, sample, design, target, run=("tfidf-lr", 2))
    got = audit_certify(named, CertifyOptions("mh")).table("certified")
    assert np.array_equal(got["estimate"], expected["estimate"]) and np.array_equal(got["ci_high"], expected["ci_high"])
    assert named.drawn == ("tfidf-lr", 2)
    with pytest.raises(InputError, match="hold several runs and the sample was drawn for one; name it with --run"):
        CertifyInputs(labels, sample, design, target)
    with pytest.raises(InputError, match="drawn for other predictions"):
        CertifyInputs(labels, sample, design, target, run=("tfidf-lr", 1))
