"""The label-free estimate on SYNTHETIC scores with a known truth: prior shift alone (estimates within their
CIs, trusted) and concept shift (marked untrusted); and its bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score

from mhaudit.audits.estimate import EstimateInputs, EstimateOptions, audit_estimate
from mhaudit.core.errors import InputError
from mhaudit.stats.pair_estimate import TrustOptions
from mhaudit.synthetic.simulate_scores import simulate_scores
from mhaudit.tables.predictions import PredictionSet, scores

REFERENCE_PRIORS = [0.5, 0.3, 0.2]


def _truth(preds: PredictionSet) -> dict:
    y = pd.Categorical(preds.frame["label"], categories=preds.classes).codes
    pred = scores(preds.frame, preds.classes).argmax(1)
    return {"accuracy": accuracy_score(y, pred), "macro_f1": f1_score(y, pred, average="macro")}


def _run(target_priors, seed, concept_shift=0.0, n_boot=300):
    ref = simulate_scores(2000, REFERENCE_PRIORS, platform="home", seed=seed)
    labelled = simulate_scores(2500, target_priors, platform="away", seed=seed + 100, concept_shift=concept_shift)
    hidden = PredictionSet(labelled.frame.assign(label=None), labelled.classes)
    result = audit_estimate(EstimateInputs(ref, hidden, synthetic=True), EstimateOptions(n_boot=n_boot, seed=seed))
    return result, _truth(labelled), labelled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prior_shift_only_estimates_cover_the_truth_and_are_trusted(seed):
    result, truth, labelled = _run([0.2, 0.3, 0.5], seed)
    est = result.table("estimates").set_index(["method", "metric"])
    shift = result.table("shift").iloc[0]
    assert bool(shift["trusted"]) and shift["domain_auc"] < 0.6 and shift["prior_gap"] < 0.1
    for metric in ("accuracy", "macro_f1"):
        row = est.loc[("cbpe", metric)]
        assert row["ci_low"] <= truth[metric] <= row["ci_high"]
        assert abs(row["estimate"] - truth[metric]) < 0.025
    priors = result.table("priors").set_index("class")
    true_priors = labelled.frame["label"].value_counts(normalize=True)
    for c in labelled.classes:
        assert priors.loc[c, "em_ci_low"] <= true_priors[c] <= priors.loc[c, "em_ci_high"]
        assert abs(priors.loc[c, "prevalence_em"] - true_priors[c]) < 0.03


def test_cbpe_coverage_over_many_prior_shifted_targets():
    """20 seeded targets: the 95% CI of CBPE's macro-F1 covers the realised macro-F1 in at least 17."""
    covered = 0
    for seed in range(20):
        result, truth, _ = _run(np.random.default_rng(seed).dirichlet([3, 3, 3]), seed, n_boot=200)
        row = result.table("estimates").set_index(["method", "metric"]).loc[("cbpe", "macro_f1")]
        covered += row["ci_low"] <= truth["macro_f1"] <= row["ci_high"]
    assert covered >= 17


def test_concept_shift_is_marked_untrusted_where_the_estimate_is_wrong():
    result, truth, _ = _run(REFERENCE_PRIORS, 3, concept_shift=0.5)
    est = result.table("estimates").set_index(["method", "metric"]).loc[("cbpe", "macro_f1")]
    assert est["estimate"] - truth["macro_f1"] > 0.10  # the estimate is badly off ...
    shift = result.table("shift").iloc[0]
    assert not shift["trusted"] and shift["domain_auc"] > 0.6  # ... and says so
    headline = result.verdicts[result.verdicts["statistic"] == "estimated_macro_f1"].iloc[0]
    assert headline["severity"] == "warn" and headline["reason"].startswith("estimate untrusted")


def test_verdict_rules():
    from mhaudit.audits.estimate.verdicts import estimate_verdicts

    keys = {"model": "m", "seed": 0, "platform": "p", "dataset": "p"}
    shift = pd.DataFrame([{**keys, "trusted": True, "untrusted_because": "", "domain_auc": 0.5, "prior_gap": 0.01}])

    def severity(estimate, low, high, trusted=True):
        est = pd.DataFrame(
            [
                {
                    **keys,
                    "method": "cbpe",
                    "metric": "macro_f1",
                    "estimate": estimate,
                    "ci_low": low,
                    "ci_high": high,
                    "reference_value": 0.80,
                }
            ]
        )
        tables = {"estimates": est, "shift": shift.assign(trusted=trusted, untrusted_because="" if trusted else "x")}
        v = estimate_verdicts(tables, EstimateOptions()).set_index("statistic")
        return v.loc["estimated_macro_f1", "severity"]

    assert severity(0.60, 0.55, 0.65) == "fail"  # the whole CI more than 0.10 below the reference
    assert severity(0.65, 0.60, 0.72) == "warn"  # a drop over 0.05, not certain beyond 0.10
    assert severity(0.78, 0.74, 0.82) == "pass"
    assert severity(0.60, 0.55, 0.65, trusted=False) == "warn"  # untrusted: never a finding either way


def test_bad_inputs_say_what_is_wrong():
    ref = simulate_scores(300, [0.5, 0.5], platform="home", seed=0)
    target = simulate_scores(300, [0.5, 0.5], platform="away", seed=1, labelled=False)
    three = simulate_scores(300, [0.4, 0.3, 0.3], platform="away", seed=1, labelled=False)
    with pytest.raises(InputError, match="classes .* differ from the reference"):
        EstimateInputs(ref, three)
    with pytest.raises(InputError, match="seed 0 have no labels; a reference is labelled data"):
        EstimateInputs(PredictionSet(ref.frame.assign(label=None), ref.classes), target)
    partly = ref.frame.assign(label=ref.frame["label"].where(ref.frame.index != 7))  # one sentence, not a crash
    with pytest.raises(InputError, match="have 1 of its 300 rows without a label"):
        EstimateInputs(PredictionSet(partly, ref.classes), target)
    one_class = PredictionSet(ref.frame.assign(label="c0"), ref.classes)
    with pytest.raises(InputError, match="no row of class"):
        EstimateInputs(one_class, target)
    other_model = PredictionSet(ref.frame.assign(model="a"), ref.classes)
    two = PredictionSet(pd.concat([other_model.frame, ref.frame.assign(model="b")]), ref.classes)
    with pytest.raises(InputError, match="no reference predictions of that model"):
        audit_estimate(
            EstimateInputs(two, PredictionSet(target.frame.assign(model="c"), target.classes)), EstimateOptions()
        )
    with pytest.raises(InputError, match="n_boot 39 must be at least 40, a resample in each tail"):
        EstimateOptions(n_boot=39)
    with pytest.raises(InputError, match=r"prior_gap_cutoff 0 must be in \(0, 1\]"):
        EstimateOptions(trust=TrustOptions(prior_gap_cutoff=0))


def test_one_reference_serves_every_seed_of_a_target():
    """A lone reference run estimates each target run apart: two seeds on one platform are two rows, named by
    the target's own seed (they once collided on the reference's seed)."""
    ref = simulate_scores(400, [0.5, 0.5], platform="home", seed=0)
    away = [
        simulate_scores(400, [0.3, 0.7], platform="away", seed=s, labelled=False).frame.assign(seed=s) for s in (0, 42)
    ]
    targets = PredictionSet(pd.concat(away, ignore_index=True), ref.classes)
    result = audit_estimate(EstimateInputs(ref, targets, synthetic=True), EstimateOptions(n_boot=100))
    assert sorted(result.verdicts["subject"]) == ["synthetic-model seed 0", "synthetic-model seed 42"]
    assert sorted(result.table("shift")["seed"]) == [0, 42]


def test_a_pairs_numbers_do_not_depend_on_the_other_targets():
    """The reference's side of the draws is shared by its targets, and each pair draws from a generator seeded by
    its names: a target alone, or after another, or before it, gets the same estimates, CIs and priors."""
    ref = simulate_scores(600, [0.4, 0.3, 0.3], platform="home", seed=0)
    away = [
        simulate_scores(500, [0.2, 0.4, 0.4], platform=name, seed=s, labelled=False)
        for s, name in enumerate(["away", "other"])
    ]

    def tables(*sets):
        targets = PredictionSet(pd.concat([t.frame for t in sets], ignore_index=True), ref.classes)
        result = audit_estimate(
            EstimateInputs(ref, targets, synthetic=True), EstimateOptions(n_boot=100, ensemble=False)
        )
        return {
            name: result.table(name).query("platform == 'away'").reset_index(drop=True)
            for name in ("estimates", "priors")
        }

    alone, after, before = tables(away[0]), tables(away[1], away[0]), tables(away[0], away[1])
    for name in alone:
        pd.testing.assert_frame_equal(after[name], alone[name])
        pd.testing.assert_frame_equal(before[name], alone[name])


# The ensemble estimate: several runs on the same rows (SYNTHETIC runs, mhaudit.synthetic.simulate_runs).


def _ensemble(**kwargs):
    from mhaudit.synthetic.simulate_runs import simulate_runs

    return simulate_runs(**kwargs)


def test_the_ensemble_estimate_is_close_and_trusted_on_the_line():
    reference, targets, truth = _ensemble(n_runs=8, shrink=0.8, seed=1)
    result = audit_estimate(EstimateInputs(reference, targets), EstimateOptions(per_run=False, n_boot=200))
    tables = result.tables
    line, ensemble = tables["agreement_line"], tables["ensemble"]
    assert len(line) == 1 and bool(line["trusted"].iat[0]) and line["n_distinct_runs"].iat[0] == 8
    assert len(tables["agreement_pairs"]) == 28 and "estimates" not in tables
    aline_d = ensemble[ensemble["method"] == "aline-d"].sort_values("seed")
    assert np.abs(aline_d["estimate"].to_numpy() - truth).max() < 0.04
    rows = result.verdicts
    assert len(rows) == 8 and set(rows["statistic"]) == {"estimated_accuracy"}
    low, high = aline_d["estimate"].min(), aline_d["estimate"].max()
    assert result.summary.startswith(
        f"Ensemble of 8 runs on synthetic-away: accuracy expected {low:.3f}–{high:.3f} over the runs (reference "
    )
    assert result.summary.endswith("; agreement line trusted.") and "\n" not in result.summary


def test_runs_pair_rows_by_id_whatever_their_order():
    reference, targets, _ = _ensemble(n_runs=5, n_ref=800, n_tgt=600, seed=2)
    options = EstimateOptions(per_run=False, n_boot=100)
    before = audit_estimate(EstimateInputs(reference, targets), options).tables["ensemble"]
    shuffled = targets.frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    after = audit_estimate(EstimateInputs(reference, PredictionSet(shuffled, targets.classes)), options)
    pd.testing.assert_frame_equal(before, after.tables["ensemble"])


def test_runs_on_other_rows_get_no_line_and_a_reason():
    reference, targets, _ = _ensemble(n_runs=4, n_ref=500, n_tgt=300, seed=3)
    frame = targets.frame
    fewer = frame[~((frame["seed"] == 2) & (frame["id"] == "synthetic-away-7"))]
    result = audit_estimate(
        EstimateInputs(reference, PredictionSet(fewer, targets.classes)), EstimateOptions(per_run=False, n_boot=100)
    )
    line = result.tables["agreement_line"]
    assert not line["trusted"].iat[0] and "cover other rows" in line["untrusted_because"].iat[0]


def test_the_ensemble_alone_needs_three_runs():
    reference, targets, _ = _ensemble(n_runs=2, n_ref=300, n_tgt=200)
    with pytest.raises(InputError, match="three or more runs"):
        audit_estimate(EstimateInputs(reference, targets), EstimateOptions(per_run=False, n_boot=100))
    with pytest.raises(InputError, match="no estimate left"):
        EstimateOptions(per_run=False, ensemble=False)


def test_per_run_and_ensemble_estimates_side_by_side():
    reference, targets, _ = _ensemble(n_runs=3, n_ref=600, n_tgt=400, seed=4)
    result = audit_estimate(EstimateInputs(reference, targets), EstimateOptions(n_boot=100, figures=False))
    tables = result.tables
    assert set(tables["estimates"]["method"]) == {"cbpe", "atc", "doc"} and len(tables["ensemble"]) == 6
    assert sorted(result.verdicts["statistic"].unique()) == ["estimated_accuracy", "estimated_macro_f1"]
    line = tables["agreement_line"]
    assert not line["trusted"].iat[0] and "3 runs < 4" in line["untrusted_because"].iat[0]


def test_the_summary_answers_first_and_folds_each_models_seeds():
    """20 runs of 4 models (SYNTHETIC): the ensemble's answer, then one line per model with its 5 seeds folded (mean
    ± SD, ddof 1), instead of 20 clauses; the tables and the forest name every run by model and seed."""
    models = np.array(["bert", "minilm", "roberta", "tfidf"])

    def named(preds):
        return PredictionSet(preds.frame.assign(model=models[preds.frame["seed"].to_numpy() // 5]), preds.classes)

    reference, targets, _ = _ensemble(n_runs=20, n_ref=600, n_tgt=500, seed=5)
    result = audit_estimate(
        EstimateInputs(named(reference), named(targets), synthetic=True), EstimateOptions(n_boot=100)
    )
    lines = result.summary.split("\n")
    assert len(lines) == 6 and len(result.summary.split()) < 160  # was one paragraph of 20 clauses
    aline = result.table("ensemble").query("method == 'aline-d'")
    est, ref = aline["estimate"], aline["reference_value"]
    assert lines[0].startswith(
        f"SYNTHETIC data. Ensemble of 20 runs on synthetic-away: accuracy expected "
        f"{est.min():.3f}–{est.max():.3f} over the runs (reference {ref.min():.3f}–"
        f"{ref.max():.3f}), 20 warn; agreement line untrusted: "
    )
    head = result.table("estimates").query("method == 'cbpe' and metric == 'macro_f1'")
    trusted = int(head["trusted"].sum())
    assert lines[1] == f"Per run, CBPE's macro-F1 without the target's labels ({trusted} of 20 trusted):"
    severity = result.verdicts.query("statistic == 'estimated_macro_f1'").set_index("subject")["severity"]
    for line, model in zip(lines[2:], models):
        runs = head[head["model"] == model]
        found = severity[[f"{model} seed {s}" for s in runs["seed"]]]
        counts = ", ".join(f"{(found == s).sum()} {s}" for s in ("fail", "warn", "pass") if (found == s).any())
        assert line == (
            f"- {model} on synthetic-away: 5 seeds, {runs['estimate'].mean():.3f} ± "
            f"{runs['estimate'].std(ddof=1):.3f} (reference {runs['reference_value'].mean():.3f}), "
            f"{int(runs['trusted'].sum())} of 5 trusted; {counts}"
        )
    assert sorted(zip(head["model"], head["seed"])) == [(models[s // 5], s) for s in range(20)]
    forest = result.figures["estimated_macro_f1"].decode()
    assert all(f"{models[s // 5]} seed {s} → synthetic-away" in forest for s in range(20))
    one = audit_estimate(
        EstimateInputs(*(PredictionSet(p.frame.query("seed == 3"), p.classes) for p in (reference, targets))),
        EstimateOptions(n_boot=100, ensemble=False),
    )
    row = one.table("estimates").query("method == 'cbpe' and metric == 'macro_f1'").iloc[0]
    assert one.summary.split("\n")[1].startswith(
        f"- synthetic-linear on synthetic-away: seed 3, {row['estimate']:.3f} [{row['ci_low']:.3f}, "
        f"{row['ci_high']:.3f}] (reference {row['reference_value']:.3f}), "
    )
