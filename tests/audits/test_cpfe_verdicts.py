"""The CPFE verdicts say the rule that decided them: the test, its correction and its family in each significance
cell, a CI that agrees with the verdict, the rule in the summary, the repair sentence only where a repair was
fitted, drops the same way in table and summary, the reference's own row, and a warning where home is not
calibrated or has no temperature (SYNTHETIC logits throughout)."""

import json

import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.audits.cpfe.summary import flags
from mhaudit.report import write_report
from mhaudit.report.scorecard import scorecard
from mhaudit.stats.normal import two_sided_p
from mhaudit.tables.predictions import PredictionSet

CLASSES = ["normal", "depression", "anxiety", "stress"]
FAST = dict(n_boot_significance=300, n_boot_ece=200, figures=False)


def predictions(signal: dict[str, float], n=300, scale: dict[str, float] | None = None, seed: int = 0):
    """SYNTHETIC logits per platform, `signal` how far one class stands out; each label is drawn from the logits'
    softmax (calibrated), and then the logits are multiplied by `scale` (below 1: underconfident)."""
    rng = np.random.default_rng(seed)
    parts = []
    for platform, strength in signal.items():
        size = n if isinstance(n, int) else n[platform]
        logits = strength * np.eye(4)[rng.integers(0, 4, size)] + rng.normal(size=(size, 4))
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        y = (rng.uniform(size=(size, 1)) > probs.cumsum(axis=1)).sum(axis=1)
        logits = logits * (scale or {}).get(platform, 1.0)
        frame = pd.DataFrame(logits, columns=[f"logit_{c}" for c in CLASSES])
        parts.append(
            frame.assign(
                id=[f"{platform}-{i}" for i in range(size)],
                model="m",
                seed=0,
                platform=platform,
                dataset=platform,
                split="test",
                label=np.array(CLASSES)[y],
            )
        )
    return PredictionSet(pd.concat(parts, ignore_index=True), CLASSES)


def test_a_cell_that_passes_on_the_adjusted_p_shows_the_ci_at_the_corrected_level():
    """The issue's cell: drop 0.040, unadjusted 95% CI [0.007, 0.073] (excludes 0), Bonferroni-adjusted p 0.056
    over 3 comparisons: a pass, so its CI (at 1 - 0.05/3) must hold 0 and its words must name the rule."""
    se = 0.017
    p = two_sided_p(0.040 / se)
    discrimination = pd.DataFrame(
        [
            {
                "model": "m",
                "seed": 0,
                "platform": p_,
                "dataset": p_,
                "is_reference": p_ == "home",
                "macro_auc": 0.9 - (0.04 if p_ == "t1" else 0),
            }
            for p_ in ("home", "t1")
        ]
    )
    significance = pd.DataFrame(
        [
            {
                "model": "m",
                "seed": 0,
                "platform_a": "t1",
                "dataset_a": "t1",
                "platform_b": "home",
                "dataset_b": "home",
                "difference": -0.040,
                "se": se,
                "ci_low": -0.040 - 1.96 * se,
                "ci_high": -0.040 + 1.96 * se,
                "p": p,
                "test": "two-sided Z test, bootstrap SE",
                "family": "reference vs target",
                "correction": "bonferroni",
                "family_size": 3,
                "alpha_adjusted": 0.05 / 3,
                "p_adjusted": 3 * p,
                "significant": False,
            }
        ]
    )
    assert -0.040 + 1.96 * se < 0  # the unadjusted 95% CI of the drop, [0.007, 0.073], excludes 0
    table = flags(discrimination, significance, pd.DataFrame(), pd.DataFrame()).set_index("flag")
    drop = table.loc["auc_drop_beyond_ci"]
    assert not drop["raised"] and drop["value"] == pytest.approx(0.040)
    assert drop["ci_low"] == pytest.approx(0.040 - 2.394 * se, abs=1e-4) and drop["ci_low"] < 0 < drop["ci_high"]
    assert drop["reason"] == f"the drop is not significant: Bonferroni-adjusted p {3 * p:.3f} >= 0.05"
    assert drop["threshold"] == (
        "drop > 0 with Bonferroni-adjusted p < 0.05 (two-sided Z test, bootstrap SE; family: "
        "the 3 reference-vs-target comparisons of this model and seed); CI at the corrected "
        "level 98.33%"
    )
    assert table.loc["significant_difference", "statistic"] == "bonferroni_p"


@pytest.fixture(scope="module")
def weak():
    """A home and four targets from no shift to a large one: some drops significant after correction, some not, and
    t2 the issue's case (p 0.014: its unadjusted 95% CI excludes 0; Bonferroni-adjusted over 4, 0.054)."""
    return predictions({"home": 3.0, "t0": 3.0, "t1": 2.6, "t2": 2.4, "t3": 1.5}, n=300)


@pytest.mark.parametrize("correction", ["bonferroni", "bh"])
def test_the_verdicts_ci_excludes_0_exactly_when_the_corrected_test_rejects(weak, correction):
    result = audit_cpfe(CPFEInputs(weak), CPFEOptions(reference="home", correction=correction, **FAST))
    sig = result.table("significance")
    home = sig[sig["family"] == "reference vs target"]
    assert len(home) == 4 and (home["family_size"] == 4).all()  # the four targets against home, no other pair
    between = sig[sig["family"] == "between targets"]
    assert len(between) == 6 and (between["family_size"] == 6).all()  # apart, and not counted in the verdicts'
    m, rejected = 4, int(home["significant"].sum())
    assert 0 < rejected < m  # the fixture has both kinds
    level = 0.05 / m if correction == "bonferroni" else rejected * 0.05 / m
    assert np.allclose(home["alpha_adjusted"], level)
    drops = result.verdicts[result.verdicts["statistic"] == "macro_auc_drop"]
    excludes = (drops["ci_low"] > 0) | (drops["ci_high"] < 0)
    assert list(excludes) == list(drops["severity"] == "fail")
    assert (home["platform_a"] == "home").all()  # so each difference is home minus the target: the drop
    t2 = home.set_index("platform_b").loc["t2"]
    assert t2["ci_low"] > 0 and t2["p"] < 0.05  # the drop's unadjusted 95% CI excludes 0
    cell = drops.set_index("target").loc["t2"]
    if correction == "bonferroni":  # a pass on the adjusted p, and its CI says so
        assert t2["p_adjusted"] > 0.05 and cell["severity"] == "pass" and cell["ci_low"] < 0 < cell["ci_high"]
        assert cell["reason"] == f"the drop is not significant: Bonferroni-adjusted p {t2['p_adjusted']:.3f} >= 0.05"
    name = {"bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}[correction]
    cells = result.verdicts[result.verdicts["axis"] == "significance"]
    assert set(cells["statistic"]) == {f"{correction}_p"}
    assert (
        cells["threshold"]
        .str.contains(
            f"{name}-adjusted p < 0.05 \\(two-sided Z test, bootstrap SE; family: the 4 reference-vs-target comparisons"
        )
        .all()
    )
    assert cells["reason"].str.contains(f"{name}-adjusted p ").all()
    assert (
        f"a macro-AUC drop with {name}-adjusted p < 0.05 (two-sided Z test, bootstrap SE; family: each model "
        "and seed's reference-vs-target comparisons) in" in result.summary
    )
    assert "95% CI" not in result.summary


def test_drops_are_absolute_in_table_verdict_and_summary_with_the_percent_labelled():
    result = audit_cpfe(CPFEInputs(predictions({"home": 2.0, "away": 1.0})), CPFEOptions(reference="home", **FAST))
    disc = result.table("discrimination").set_index("platform")
    change = disc.loc["away", "macro_auc"] - disc.loc["home", "macro_auc"]
    assert disc.loc["away", "delta_macro_auc"] == pytest.approx(change) and disc.loc["home", "delta_macro_auc"] == 0
    drop = result.verdicts.set_index("statistic").loc["macro_auc_drop", "value"]
    assert drop == pytest.approx(-change)
    assert (
        f"changes by {change:+.3f} on the other platforms ({disc.loc['away', 'delta_auc_pct']:+.1f}% of its home value)"
    ) in result.summary


def test_each_target_shows_the_reference_macro_auc_and_ece_it_is_compared_with():
    """Beside each target's drop on the scorecard, not as a row of its own: the first screen holds the scorecard."""
    result = audit_cpfe(
        CPFEInputs(predictions({"home": 2.0, "a1": 1.0, "a2": 1.5})), CPFEOptions(reference="home", **FAST)
    )
    disc = result.table("discrimination").set_index("platform").loc["home"]
    cal = result.table("calibration").set_index("platform").loc["home"]
    for target in ("a1", "a2"):
        rows = result.verdicts[result.verdicts["target"] == target].set_index("statistic")
        assert rows.loc["home_macro_auc", "value"] == disc["macro_auc"]
        assert rows.loc["home_macro_auc", "severity"] == "pass"
        assert rows.loc["home_macro_auc", "axis"] == "discrimination"
        assert rows.loc["home_ece_debiased", "value"] == cal["ece_debiased"]
        assert rows.loc["home_ece_debiased", "ci_low"] == cal["ece_ci_low"]
    card = scorecard(result.verdicts).set_index("target")
    assert list(card.index) == ["a1", "a2"]  # no row of its own
    assert card.loc["a1", "discrimination"].endswith(f"; home_macro_auc {disc['macro_auc']:.3f}")  # passes: no word
    assert f"(home: macro-AUC {disc['macro_auc']:.3f}, debiased ECE {cal['ece_debiased']:.3f})" in result.summary


def test_a_home_not_calibrated_is_a_warning_in_the_verdicts_and_the_reports_notes(tmp_path):
    """Logits at a fifth of their scale at home (a model with no temperature fitted there is underconfident)."""
    preds = predictions({"home": 2.0, "away": 1.0}, scale={"home": 0.3})
    result = audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="home", **FAST))
    ece = result.table("calibration").set_index("platform").loc["home", "ece_debiased"]
    assert ece > 0.10
    home = result.verdicts[result.verdicts["target"] == "away"].set_index("statistic")
    assert home.loc["home_ece_debiased", "severity"] == "warn"
    card = scorecard(result.verdicts).set_index("target")  # a baseline not passing shows in the cell
    assert card.loc["away", "calibration"].endswith(f"; home_ece_debiased {ece:.3f} (warn)")
    assert result.notes == [
        f"warning: m seed 0 is not calibrated at home (home: debiased ECE {ece:.3f} > 0.1), so "
        "the ECE verdicts compare each target with a miscalibrated reference. A model fits its "
        "home temperature on the validation rows (split 'val') of the platform it is trained on; "
        "trained without them it fits none."
    ]
    assert "debiased ECE above 0.10 at home (the ECE verdicts' baseline) in 1 of 1 runs" in result.summary
    write_report(result, tmp_path)
    assert json.loads((tmp_path / "report.json").read_text())["notes"] == result.notes
    calibrated = audit_cpfe(CPFEInputs(predictions({"home": 2.0, "away": 1.0})), CPFEOptions(reference="home", **FAST))
    assert calibrated.notes == []


def test_no_temperature_at_home_and_none_on_a_target_are_said_not_repaired():
    """Ten rows at home and on one target: a 10% calibration split of one row fits no temperature."""
    preds = predictions({"home": 2.0, "small": 1.0, "away": 1.0}, n={"home": 10, "small": 10, "away": 300})
    result = audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="home", **FAST))
    reason = "calibration split too small or one class: temperature not fitted"
    assert f"warning: no temperature was fitted on the reference for m seed 0: {reason}." in result.notes
    assert (
        f"Of 2 temperature fits off the reference platform, 1 not fitted ({reason}): m seed 0 on small; they are "
        "left out of what follows."
    ) in result.summary
    assert "On the 1 target run with a usable fit, temperature scaling" in result.summary
    assert "calibration can be repaired" not in result.summary
    only_small = predictions({"home": 2.0, "small": 1.0}, n=10)
    summary = audit_cpfe(CPFEInputs(only_small), CPFEOptions(reference="home", **FAST)).summary
    assert "so there is no repair to report." in summary and "repaired" not in summary.split("report.")[-1]
