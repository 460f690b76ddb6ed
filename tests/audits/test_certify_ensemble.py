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
            frames.append(pd.DataFrame({"id": [f"post-{i}" for i in range(n)], "model": model, "seed": run,
                                        "platform": "synthetic", "dataset": "synthetic", "split": "test",
                                        "label": [CLASSES[v] for v in y] if labelled else None,
                                        logit_column(CLASSES[0]): -margin / 2, logit_column(CLASSES[1]): margin / 2}))
    return PredictionSet(pd.concat(frames, ignore_index=True), CLASSES), pd.Series(y, index=[f"post-{i}" for i in
                                                                                            range(n)])


def _codes(frame):
    return (frame["label"] == CLASSES[1]).to_numpy().astype(int)


def _items(n):
    return pd.DataFrame({"id": [f"post-{i}" for i in range(n)], "text": [f"synthetic post {i}" for i in range(n)]})


def test_the_ensemble_mean_posterior_and_which_run_is_certified():
    target, _ = runs_on(1500, 4, seed=0, labelled=False, models=("tfidf-lr", "char-tfidf-lr"))
    reference, _ = runs_on(400, 4, seed=1, labelled=True, models=("tfidf-lr", "char-tfidf-lr"))
    with pytest.raises(InputError, match="several runs .* name the certified one with --certify MODEL:SEED"):
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
    assert pool.predictor == ("the mean posterior of an ensemble of 8 runs (char-tfidf-lr seeds 0, 1, 2, 3; tfidf-lr "
                              "seeds 0, 1, 2, 3)")
    with pytest.raises(InputError, match="reference predictions hold no run char-tfidf-lr seed 0"):
        pool_of(target, PredictionSet(reference.frame[reference.frame["model"] == "tfidf-lr"], CLASSES),
                model="tfidf-lr", seed=2)
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
    true_f1 = np.mean([2 * ((y == c) & (pool.pred == c)).sum() / ((y == c).sum() + (pool.pred == c).sum())
                       for c in (0, 1)])
    hits = []
    for draw in range(20):
        sample, design = certification_sample(pool, _items(2000), "mh", 150, seed=draw)
        result = audit_certify(CertifyInputs(human_labels(sample["item_id"], truth), sample, design, target),
                               CertifyOptions("mh"))
        head = result.table("certified").set_index(["estimator", "metric"]).loc[
            ("prediction-powered (PPI++, tuned λ)", "macro_f1")]
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
