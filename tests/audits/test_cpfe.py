"""The cross-platform audit end to end: tables against independent references, flags on planted shift
and none without it, undefined values marked, and the report's named tables."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score
from typer.testing import CliRunner

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.models import create
from mhaudit.report import VERDICT_COLUMNS, write_report
from mhaudit.stats.calibration import softmax
from mhaudit.synthetic.simulate import SimulationConfig, simulate
from mhaudit.tables.predictions import PredictionSet, predict_corpus

CLASSES = ["normal", "depression", "anxiety", "stress"]
FAST = dict(n_boot_significance=300, n_boot_ece=200, figures=False)


def synthetic_predictions(n=400, models=("m1", "m2"), seeds=(0, 1), shift=1.0, rng=0):
    """SYNTHETIC logits: the reference 'home' is separable; targets 'away1/away2' lose signal with `shift`."""
    rng = np.random.default_rng(rng)
    rows = []
    for platform, noise, priors in (
        ("home", 0.0, [0.25, 0.25, 0.25, 0.25]),
        ("away1", shift, [0.55, 0.15, 0.15, 0.15]),
        ("away2", shift, [0.4, 0.3, 0.15, 0.15]),
    ):
        y = rng.choice(4, size=n, p=priors)
        for model in models:
            for seed in seeds:
                logits = 2.0 * np.eye(4)[y] * (1 - 0.8 * noise) + rng.normal(size=(n, 4))
                frame = pd.DataFrame(logits, columns=[f"logit_{c}" for c in CLASSES])
                frame.insert(0, "label", np.array(CLASSES)[y])
                frame.insert(0, "split", "test")
                frame.insert(0, "dataset", platform)
                frame.insert(0, "platform", platform)
                frame.insert(0, "seed", seed)
                frame.insert(0, "model", model)
                frame.insert(0, "id", [f"{platform}-{i}" for i in range(n)])
                rows.append(frame)
    return PredictionSet(pd.concat(rows, ignore_index=True), CLASSES)


@pytest.fixture(scope="module")
def result():
    return audit_cpfe(CPFEInputs(synthetic_predictions()), CPFEOptions(reference="home", **FAST))


def test_discrimination_matches_sklearn(result):
    preds = synthetic_predictions().frame
    disc = result.table("discrimination").set_index(["model", "seed", "platform"])
    for (model, seed, platform), rows in preds.groupby(["model", "seed", "platform"]):
        y = pd.Categorical(rows["label"], categories=CLASSES).codes
        probs = softmax(rows[[f"logit_{c}" for c in CLASSES]].to_numpy())
        row = disc.loc[(model, seed, platform)]
        assert row["macro_auc"] == pytest.approx(roc_auc_score(y, probs, multi_class="ovr"), abs=1e-12)
        assert row["macro_f1"] == pytest.approx(f1_score(y, probs.argmax(1), average="macro"), abs=1e-12)
        assert row["weighted_f1"] == pytest.approx(f1_score(y, probs.argmax(1), average="weighted"), abs=1e-12)
        assert row["accuracy"] == pytest.approx(float((y == probs.argmax(1)).mean()), abs=1e-12)
        home = disc.loc[(model, seed, "home"), "macro_auc"]
        assert row["delta_auc_pct"] == pytest.approx(100 * (row["macro_auc"] - home) / home)
    per_class = result.table("per_class_auc")
    assert len(per_class) == 2 * 2 * 3 * 4 and (per_class["ci_low"] <= per_class["auc"]).all()


def test_report_has_every_named_table(result, tmp_path):
    write_report(result, tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    names = {name for s in report["sections"] for name in s["tables"]}
    assert {
        "discrimination",
        "per_class_auc",
        "calibration",
        "per_class_calibration",
        "temperature_scaling",
        "significance",
        "equity",
        "attribution_stability",
        "sensitivity",
        "length",
        "label_shift",
        "model_comparison",
    } <= names
    assert "flags" not in names  # the flags are the verdict rows now, not a second table
    verdicts = pd.DataFrame(report["verdicts"])
    assert list(verdicts.columns) == VERDICT_COLUMNS and set(verdicts["audit"]) == {"cpfe"}
    # the paper's order; no attributions given, so no attribution verdict (the demo's test checks that one)
    assert list(dict.fromkeys(verdicts["axis"])) == ["discrimination", "calibration", "significance", "equity"]
    drop = verdicts[verdicts["statistic"] == "macro_auc_drop"]
    assert (drop["ci_low"] <= drop["value"]).all() and (drop["value"] <= drop["ci_high"]).all()
    ece = verdicts[verdicts["statistic"] == "ece_debiased"].merge(
        result.table("calibration").assign(subject=lambda t: t["model"] + " seed " + t["seed"].astype(str)),
        on="subject",
    )
    ece = ece[ece["target"] == ece["platform"]]
    assert len(ece) and np.allclose(ece["value"], ece["ece_debiased"]) and np.allclose(ece["ci_low"], ece["ece_ci_low"])
    cal = result.table("calibration")  # the debiased ECE lies in its interval
    assert (cal["ece_ci_low"] <= cal["ece_debiased"]).all() and (cal["ece_debiased"] <= cal["ece_ci_high"]).all()
    sig = result.table("significance")
    p_home = sig[(sig["platform_a"] == "home") | (sig["platform_b"] == "home")]["p_adjusted"]
    assert sorted(verdicts.loc[verdicts["axis"] == "significance", "value"]) == pytest.approx(sorted(p_home))
    after = verdicts[verdicts["statistic"] == "ece_after_ts"]
    assert len(after) == len(drop) and after["severity"].isin(["pass", "warn"]).all()
    assert report["options"]["reference"] == "home" and report["options"]["classes"] == CLASSES


def test_significance_family_and_correction(result):
    sig = result.table("significance")
    assert len(sig) == 4 * 3  # (model, seed) runs x 3 platform pairs
    home = sig["family"] == "reference vs target"  # the pairs the verdicts judge: 2 per run; away1 vs away2 apart
    assert set(sig.loc[home, "platform_b"]) == {"home"} and (sig.loc[~home, "platform_b"] == "away2").all()
    for family, m in ((home, 2), (~home, 1)):
        assert (sig.loc[family, "family_size"] == m).all() and np.allclose(sig.loc[family, "alpha_adjusted"], 0.05 / m)
        np.testing.assert_allclose(sig.loc[family, "p_adjusted"], np.minimum(1, m * sig.loc[family, "p"]))
    home_vs_away = sig[(sig["platform_a"] == "away1") & (sig["platform_b"] == "home")]
    assert (home_vs_away["difference"] < -0.1).all() and home_vs_away["significant"].all()


def test_model_comparison_is_paired(result):
    comp = result.table("model_comparison")
    boot = comp[comp["test"] == "paired bootstrap, macro-AUC"]
    assert len(boot) == 3 * 2  # platforms x seeds, one model pair
    assert boot["reason"].eq("").all() and boot["se"].gt(0).all()
    assert (comp[comp["test"] == "paired DeLong"].groupby(["platform", "seed"]).size() == 4).all()


def test_sensitivity_schemes_and_d_equals_b(result):
    sens = result.table("sensitivity").set_index(["model", "seed", "platform", "scheme"])["macro_auc"]
    for key in {k[:3] for k in sens.index}:
        assert sens[(*key, "D")] == sens[(*key, "B")]
        assert (
            sens[(*key, "A")]
            == result.table("discrimination").set_index(["model", "seed", "platform"]).loc[key, "macro_auc"]
        )


def test_label_shift_estimates_sum_to_one(result):
    shift = result.table("label_shift")
    sums = shift.groupby(["model", "seed", "platform"])[["prevalence_true", "prevalence_em", "prevalence_bbse"]].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1, atol=1e-9)
    true = shift.groupby(["platform", "class"])["prevalence_true"].first()
    assert true[("away1", "normal")] > 0.45  # the planted prior shift


def test_seed_summary_is_mean_and_sd(result):
    summary = result.table("mean and SD over seeds")
    disc = result.table("discrimination")
    row = summary[
        (summary["model"] == "m1") & (summary["platform"] == "away2") & (summary["metric"] == "macro_auc")
    ].iloc[0]
    values = disc[(disc["model"] == "m1") & (disc["platform"] == "away2")]["macro_auc"]
    assert row["mean"] == pytest.approx(values.mean()) and row["sd"] == pytest.approx(values.std(ddof=1))
    assert row["n_seeds"] == 2


def test_undefined_values_are_marked_not_invented():
    preds = synthetic_predictions(models=("m1",), seeds=(0,)).frame
    away = preds["platform"] == "away2"
    preds.loc[away, "label"] = "normal"  # one class present on a target
    result = audit_cpfe(CPFEInputs(PredictionSet(preds, CLASSES)), CPFEOptions(reference="home", **FAST))
    disc = result.table("discrimination").set_index("platform")
    assert np.isnan(disc.loc["away2", "macro_auc"]) and "no depression, anxiety, stress" in disc.loc["away2", "reason"]
    assert np.isnan(disc.loc["away2", "delta_auc_pct"])
    per_class = result.table("per_class_auc")
    absent = per_class[(per_class["platform"] == "away2") & (per_class["class"] == "stress")].iloc[0]
    assert np.isnan(absent["auc"]) and absent["reason"]
    equity = result.table("equity")
    row = equity[(equity["platform"] == "away2") & (equity["class"] == "stress")].iloc[0]
    assert np.isnan(row["tpr_tgt"]) and "TPR undefined" in row["reason"]


def test_missing_reference_and_different_example_sets():
    preds = synthetic_predictions(models=("m1", "m2"), seeds=(0,))
    with pytest.raises(
        InputError,
        match="reference platform 'kaggle' is neither a platform nor a data set in the "
        r"predictions; platforms: away1, away2, home; data sets: away1, away2, home",
    ):
        audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="kaggle", **FAST))
    with pytest.raises(InputError, match=r"'hme' is neither .* \(did you mean 'home'\?\)"):
        audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="hme", **FAST))
    frame = preds.frame[~((preds.frame["model"] == "m2") & (preds.frame["id"] == "away1-0"))]
    result = audit_cpfe(CPFEInputs(PredictionSet(frame, CLASSES)), CPFEOptions(reference="home", **FAST))
    comp = result.table("model_comparison")
    assert "different examples" in comp[comp["platform"] == "away1"]["reason"].iat[0]


def test_non_independent_rows_are_marked_and_left_out_of_the_summary():
    result = audit_cpfe(
        CPFEInputs(synthetic_predictions(models=("m1",), seeds=(0,))),
        CPFEOptions(reference="home", non_independent=(("m1", "away1"),), **FAST),
    )
    disc = result.table("discrimination").set_index("platform")
    assert disc.loc["away1", "non_independent"] and not disc.loc["away2", "non_independent"]
    away2 = disc.loc["away2"]  # one run: one value, not "x to x"; absolute as in the verdicts, percent labelled
    assert (
        f"changes by {away2['delta_macro_auc']:+.3f} on the other platforms ({away2['delta_auc_pct']:+.1f}% of "
        "its home value)"
    ) in result.summary
    home = result.table("calibration").set_index("platform").loc["home", "ece_debiased"]
    assert f"(home: macro-AUC {disc.loc['home', 'macro_auc']:.3f}, debiased ECE {home:.3f})" in result.summary
    assert "on average (range" not in result.summary
    assert result.summary.startswith("Off its home platform (home") and "the model's macro-AUC" in result.summary
    assert "_" not in result.summary.split("Found:")[-1].split(".")[0]  # findings in words, not flag ids


def audit_simulated(config, n_boot=300):
    corpus = simulate(config)
    f = corpus.frame
    train = f[(f["platform"] == "synthetic-forum") & f["split"].isin(["train", "val"])]
    model = create("tfidf-lr", ngram_range=(1, 1)).fit(train, corpus.classes)  # unigrams: fast, same story
    preds = predict_corpus(model, corpus, model_name="tfidf-lr", seed=config.seed, splits=("test",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the audit reports problems in its tables, never as stray warnings
        result = audit_cpfe(
            CPFEInputs(PredictionSet(preds, corpus.classes)),
            CPFEOptions(
                reference="synthetic-forum", seed=config.seed, n_boot_significance=n_boot, n_boot_ece=200, figures=False
            ),
        )
    return result.verdicts.assign(raised=lambda v: v["severity"] != "pass")


def test_planted_shift_raises_every_named_flag():
    verdicts = audit_simulated(SimulationConfig(n_per_platform=1500, auto_platforms=()))
    first = verdicts.drop_duplicates(["axis", "target"])  # equity: the four-fifths row comes before the one-half row
    raised = first.groupby("axis")["raised"].all()
    assert raised[["discrimination", "calibration", "equity"]].all()
    assert set(verdicts.loc[verdicts["raised"], "severity"]) <= {"warn", "fail"}


@pytest.mark.slow
def test_no_shift_raises_at_most_5pct_false_flags_over_20_seeds():
    verdicts = pd.concat(
        [
            audit_simulated(SimulationConfig.no_shift(seed=s, n_per_platform=1200, auto_platforms=()), n_boot=200)
            for s in range(20)
        ]
    )
    # seeds x target platforms x (flags + the reference's macro-AUC and ECE); no attributions: no Jaccard flags
    assert len(verdicts) == 20 * 2 * (7 + 2)
    assert verdicts["raised"].mean() <= 0.05, verdicts[verdicts["raised"]]


def test_cli_audit_on_a_users_probability_file(tmp_path):
    frame = synthetic_predictions(models=("m1",), seeds=(0,)).frame
    probs = softmax(frame[[f"logit_{c}" for c in CLASSES]].to_numpy())
    user = frame[["id", "platform", "label"]].copy()
    for i, c in enumerate(CLASSES):
        user[f"prob_{c}"] = probs[:, i]
    path = tmp_path / "mine.csv"
    user.to_csv(path, index=False)
    out = tmp_path / "report"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "audit",
            "cpfe",
            "--predictions",
            str(path),
            "--reference",
            "home",
            "--out",
            str(out),
            "--n-boot-significance",
            "200",
            "--n-boot-ece",
            "100",
            "--model",
            "mine",
        ],
    )
    assert done.exit_code == 0, done.output
    # not a terminal: one timestamped line per stage start and end, with its seconds
    stages = re.findall(r"^\[\d\d:\d\d:\d\d\] done  (.+) \((\d+\.\d) s\)$", done.stderr, flags=re.M)
    assert [s for s, _ in stages][:2] == ["bootstrap resamples (3 groups)", "axes 1-4 per group"]
    report = json.loads((out / "report.json").read_text())
    assert set(report["provenance"]["stage_seconds"]) == {s for s, _ in stages}
    assert report["options"]["score_kind"].startswith("log-probabilities")
    disc = pd.DataFrame(
        next(s["tables"]["discrimination"] for s in report["sections"] if "discrimination" in s["tables"])
    )
    assert set(disc["model"]) == {"mine"} and len(disc) == 3
    assert (out / "figures").is_dir() and "data:image/svg+xml;base64" in (out / "report.html").read_text()
    assert {p.suffix for p in (out / "figures").iterdir()} == {".svg"}
    bad = runner.invoke(
        app, ["audit", "cpfe", "--predictions", str(path), "--reference", "kaggle", "--out", str(tmp_path / "nope")]
    )
    assert bad.exit_code == 2 and "reference platform 'kaggle'" in bad.stderr
    assert not (tmp_path / "nope").exists()


def test_flags_pair_groups_by_platform_and_data_set():
    """Two platforms may share a data-set name; flags must still compare each with the reference."""
    preds = synthetic_predictions(models=("m1",), seeds=(0,)).frame
    away2 = preds["platform"] == "away2"
    home = preds[preds["platform"] == "home"]
    preds.loc[away2, [f"logit_{c}" for c in CLASSES]] = home[[f"logit_{c}" for c in CLASSES]].to_numpy()
    preds.loc[away2, "label"] = home["label"].to_numpy()  # away2 is a copy of home: nothing to flag
    preds["dataset"] = "corpus"
    verdicts = audit_cpfe(CPFEInputs(PredictionSet(preds, CLASSES)), CPFEOptions(reference="home", **FAST)).verdicts
    auc = verdicts[verdicts["statistic"] == "macro_auc_drop"].set_index("target")
    assert auc.loc["away1 (corpus)", "severity"] == "fail" and auc.loc["away1 (corpus)", "value"] > 0.1
    assert auc.loc["away2 (corpus)", "severity"] == "pass"
    assert auc.loc["away2 (corpus)", "value"] == pytest.approx(0, abs=1e-12)
    di = verdicts[verdicts["axis"] == "equity"].drop_duplicates("target").set_index("target")
    assert di.loc["away2 (corpus)", "value"] == 1.0 and di.loc["away2 (corpus)", "severity"] == "pass"


def test_macro_averages_are_undefined_when_a_class_is_absent_not_averaged_over_the_rest():
    preds = synthetic_predictions(models=("m1",), seeds=(0,)).frame
    away = preds["platform"] == "away1"
    two = away & preds["label"].isin(["normal", "depression"])
    preds = preds[~away | two].copy()
    codes = pd.Categorical(preds.loc[preds["platform"] == "away1", "label"], categories=CLASSES).codes
    preds.loc[preds["platform"] == "away1", [f"logit_{c}" for c in CLASSES]] = 10.0 * np.eye(4)[codes]  # perfect
    result = audit_cpfe(CPFEInputs(PredictionSet(preds, CLASSES)), CPFEOptions(reference="home", **FAST))
    row = result.table("discrimination").set_index("platform").loc["away1"]
    # sklearn's default (no labels=) would say 1.0 over the two classes present: that is not the 4-class macro
    assert np.isnan(row["macro_f1"]) and np.isnan(row["macro_auc"]) and row["accuracy"] == 1.0
    assert "macro-F1 undefined: anxiety, stress neither occurs nor is predicted" in row["reason"]
    assert row["weighted_f1"] == 1.0
    per_class = result.table("per_class_auc").query("platform == 'away1'").set_index("class")
    assert per_class.loc["normal", "f1"] == 1.0 and per_class.loc["normal", "auc"] == 1.0
    assert np.isnan(per_class.loc["stress", "f1"]) and np.isnan(per_class.loc["stress", "auc"])


def test_reference_without_a_class_is_reported_not_a_crash():
    preds = synthetic_predictions(models=("m1",), seeds=(0,)).frame
    preds = preds[~((preds["platform"] == "home") & (preds["label"] == "stress"))]
    shift = audit_cpfe(CPFEInputs(PredictionSet(preds, CLASSES)), CPFEOptions(reference="home", **FAST)).table(
        "label_shift"
    )
    assert shift["prevalence_em"].isna().all() and shift["em_note"].str.contains("absent on the reference").all()


def test_length_and_attribution_axes_with_texts_and_attributions():
    preds = synthetic_predictions(models=("m1",), seeds=(0, 1), n=40)
    ids = preds.frame["id"].unique()
    texts = pd.Series([" ".join(["w"] * (1 + i % 80)) for i in range(len(ids))], index=ids)
    words = {
        "home": ["sad", "tired", "empty", "alone"],
        "away1": ["sad", "lol", "tbh", "ok"],
        "away2": ["sad", "tired", "ok", "meh"],
    }
    attributions = pd.DataFrame(
        [
            {
                "model": "m1",
                "seed": s,
                "platform": p,
                "dataset": p,
                "class": "depression",
                "word": w,
                "score": 10.0 - r,
                "count": 3,
                "method": "linear",
            }
            for s in (0, 1)
            for p, ws in words.items()
            for r, w in enumerate(ws)
        ]
    )
    result = audit_cpfe(
        CPFEInputs(preds, texts=texts, attributions=attributions), CPFEOptions(reference="home", top_ks=(2, 4), **FAST)
    )
    stab = result.table("attribution_stability").query("seed == 0").set_index(["platform_a", "platform_b", "k"])
    assert stab.loc[("away1", "home", 4), "jaccard"] == pytest.approx(1 / 7)
    assert stab.loc[("away2", "home", 2), "jaccard"] == pytest.approx(1.0)
    assert stab.loc[("away1", "away2", 2), "jaccard"] == pytest.approx(1 / 3)
    retention = result.table("clinical_retention").set_index(["seed", "platform"])["retained"]
    assert retention[(0, "home")] >= 3 and retention[(0, "away1")] == 1  # sad
    length = result.table("length")
    home = length[(length["platform"] == "home") & (length["seed"] == 0)]
    expected = np.array([1 + i % 80 for i in range(len(ids))])[:40]
    assert home["mean_words"].iat[0] == pytest.approx(expected.mean())
    assert set(home["quartile"]) == {"Q1", "Q2", "Q3", "Q4"} and home["quartile_n"].sum() == 40
    assert "fewer than" not in str(home.get("reason", ""))
    with pytest.raises(InputError, match="the corpus has no text for 40 prediction id"):
        audit_cpfe(CPFEInputs(preds, texts=texts.drop(texts.index[40:80])), CPFEOptions(reference="home", **FAST))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(n_bins=0), "n_bins 0"),
        (dict(n_boot_ece=1), "n_boot_ece 1 must be at least 2"),
        (dict(calibration_fraction=-0.2), "strictly between 0 and 1"),
        (dict(correction="holm"), "bonferroni"),
        (dict(reference=" "), "reference ' ' must be a platform or data set name"),
    ],
)
def test_options_are_checked_when_made(change, message):
    with pytest.raises(InputError, match=message):
        CPFEOptions(**{"reference": "home", **FAST, **change})


def test_equity_summary_names_the_worst_class(result):
    equity, summary = result.table("equity"), result.table("equity_summary")
    assert len(summary) == 4 * 2  # (model, seed) x targets
    for _, row in summary.iterrows():
        cells = equity[
            (equity["model"] == row["model"])
            & (equity["seed"] == row["seed"])
            & (equity["platform"] == row["platform"])
        ].set_index("class")
        assert row["min_disparate_impact"] == cells["disparate_impact"].min()
        assert cells.loc[row["min_disparate_impact_class"], "disparate_impact"] == row["min_disparate_impact"]
        assert row["max_equal_opportunity_gap"] == cells["equal_opportunity_gap"].max()
        assert row["max_equalized_odds_gap"] == cells["equalized_odds_gap"].max()


def test_multiplicity_adjustment_is_statsmodels():
    """Bonferroni and Benjamini-Hochberg written out (the audit never imports statsmodels) equal
    statsmodels' multipletests on random families, ties and p = 1 included."""
    from statsmodels.stats.multitest import multipletests

    from mhaudit.audits.cpfe.significance import adjust

    rng = np.random.default_rng(5)
    for case in range(500):
        p = rng.uniform(0, 1, int(rng.integers(1, 30))) ** rng.uniform(0.5, 4)
        if case % 3 == 0:  # ties and ones
            p = np.round(p, 1)
        alpha = float(rng.choice([0.01, 0.05, 0.1]))
        for ours, theirs in (("bonferroni", "bonferroni"), ("bh", "fdr_bh")):
            reject, adjusted = adjust(p, alpha, ours)
            want_reject, want_adjusted, *_ = multipletests(p, alpha, theirs)
            assert (reject == want_reject).all() and np.array_equal(adjusted, want_adjusted)


def test_a_degenerate_temperature_is_its_own_verdict_and_no_repair():
    """Signal-free logits on a target: the NLL is least with every probability flattened (T runs to its
    bound), ECE after scaling is low, but nothing was repaired; the summary must not count it."""
    from mhaudit.audits.cpfe.calibration import degenerate_temperature

    frame = synthetic_predictions(n=2000, models=("m1",), seeds=(0,)).frame
    away = frame["platform"] == "away1"
    noise = np.random.default_rng(3).normal(size=(int(away.sum()), 4)) * 3  # no signal at all
    frame.loc[away, [f"logit_{c}" for c in CLASSES]] = noise
    result = audit_cpfe(CPFEInputs(PredictionSet(frame, CLASSES)), CPFEOptions(reference="home", **FAST))
    scaled = result.table("temperature_scaling").set_index("platform")
    assert scaled.loc["away1", "degenerate"] != "" and scaled.loc["away2", "degenerate"] == ""
    assert scaled.loc["away1", "ece_after"] < scaled.loc["away1", "ece_before"]  # looks repaired, is not
    flagged = result.verdicts.query("statistic == 'temperature'").set_index("target")["severity"]
    assert flagged["away1"] == "warn" and flagged["away2"] == "pass"
    # its ECE after scaling is no "pass": undefined, and the reason says why
    after = result.verdicts.query("statistic == 'ece_after_ts'").set_index("target")
    assert after.loc["away1", "severity"] == "undefined" and np.isnan(after.loc["away1", "value"])
    assert (
        "undefined: the temperature is degenerate (T = 148.4 at its search bound), so its ECE is no repair"
        == after.loc["away1", "reason"]
    )
    assert after.loc["away2", "value"] == scaled.loc["away2", "ece_after"]
    assert "Of 2 temperature fits off the reference platform, 1 degenerate (at the search bound" in result.summary
    assert "m1 seed 0 on away1; they are left out of what follows." in result.summary
    away2 = scaled.loc["away2", "ece_reduction_pct"]
    assert f"On the 1 target run with a usable fit, temperature scaling cut ECE by {away2:.0f}%" in result.summary
    # the two ways to be degenerate, directly
    flat = np.full((50, 2), 0.5) + np.linspace(0, 0.05, 50)[:, None] * [1, -1]
    assert "near-uniform" in degenerate_temperature(3.0, flat)
    assert "at its search bound" in degenerate_temperature(float(np.exp(5.0)), flat)
    assert degenerate_temperature(1.3, np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])) == ""


def test_the_predictions_are_validated_once_at_the_door(monkeypatch):
    """The PredictionSet checks its frame when built; the audit splits it and computes on it without checking
    again: one `check_predictions` per input, and the macro-AUCs, per-class AUCs, ECEs and their bootstraps
    (each of which re-checked its inputs before) call the unchecked kernels behind the public functions."""
    import mhaudit.stats.auc as auc
    import mhaudit.stats.bootstrap as bootstrap
    import mhaudit.stats.calibration as calibration
    import mhaudit.tables.predictions as predictions

    calls = {"predictions": 0, "codes": 0, "probabilities": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(predictions, "check_predictions", counted("predictions", predictions.check_predictions))
    for module in (auc, bootstrap):
        monkeypatch.setattr(module, "check_codes", counted("codes", module.check_codes))
    monkeypatch.setattr(calibration, "_inputs", counted("probabilities", calibration._inputs))
    preds = synthetic_predictions(n=200, seeds=(0,))
    assert calls["predictions"] == 1
    audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="home", **FAST))
    assert calls == {"predictions": 1, "codes": 0, "probabilities": 0}


def test_unlabelled_rows_are_refused_before_any_statistic():
    frame = synthetic_predictions(n=50, models=("m1",), seeds=(0,)).frame
    frame.loc[3, "label"] = None
    with pytest.raises(InputError, match="row 4 of the predictions has no label"):
        audit_cpfe(CPFEInputs(PredictionSet(frame, CLASSES)), CPFEOptions(reference="home", **FAST))


def test_place_bootstraps_in_blocks_equal_the_whole_count_matrix(monkeypatch):
    """The bootstrap draws its counts a block at a time (bounded memory at 1M rows): the same macro-AUCs and
    ECEs, to the last bit, as one (resamples x n) matrix used whole."""
    from mhaudit.audits.cpfe.groups import make_groups
    from mhaudit.audits.cpfe.significance import place_bootstraps
    from mhaudit.stats import bootstrap
    from mhaudit.stats.bootstrap import bias_corrected, bootstrap_macro_auc, resample_counts
    from mhaudit.stats.calibration import bootstrap_ece, ece

    rng = np.random.default_rng(4)
    n, k = 120, 3
    y = rng.integers(0, k, n)
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)] * 2,
            "model": ["a"] * n + ["b"] * n,
            "seed": 0,
            "platform": "home",
            "dataset": "home",
            "split": "test",
            "label": np.array(["x", "y", "z"])[np.r_[y, y]],
        }
    )
    logits = rng.normal(size=(2 * n, k))
    for c, name in enumerate(["x", "y", "z"]):
        frame[f"logit_{name}"] = logits[:, c]
    groups = make_groups(PredictionSet(frame, ["x", "y", "z"]), "home")
    monkeypatch.setattr(bootstrap, "_BLOCK_BYTES", 4 * n * 7)  # blocks of 7 resamples, the last one short
    aucs, eces = place_bootstraps(groups, k, 50, 30, 10, np.random.default_rng(9))
    counts = resample_counts(groups[0].y, 50, np.random.default_rng(9))
    for g in groups:
        assert np.array_equal(aucs[id(g)], bootstrap_macro_auc(g.y, g.probs, k, counts))
        assert eces[id(g)] == bias_corrected(
            ece(g.probs, g.y, 10), bootstrap_ece(g.probs, g.y, counts[:30], 10), floor=0.0
        )
