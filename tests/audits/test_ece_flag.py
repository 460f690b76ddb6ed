"""The ECE flag on calibrated models and the bias-corrected ECE interval: a short run of
benchmarks/ece_false_alarm.py (synthetic scores; the benchmark runs 1,000 simulations, docs/benchmarks.md)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mhaudit.stats.bootstrap import bias_corrected, summarise

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "ece_false_alarm.py"


@pytest.fixture(scope="module")
def sims():
    spec = importlib.util.spec_from_file_location("ece_false_alarm", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flag_false_alarm_rate_on_calibrated_models_is_bounded_under_5_percent(sims):
    result = sims.false_alarms(sims=150, n=300, n_boot=300, seed=3)
    assert sims.upper_bound(result["raised"], result["sims"]) <= 0.05
    # The debiased ECE removes part of the plug-in's upward bias (true ECE 0 here).
    assert result["mean_debiased"] < result["mean_plug_in"] - 0.01


def test_bias_corrected_interval_covers_a_known_ece_and_the_estimate_is_unbiased(sims):
    c = sims.coverage(sims=120, n=300, n_boot=300, sharpen=1.5, seed=4)
    assert c["true_ece"] == pytest.approx(0.0585, abs=0.002)
    assert c["covered"] >= 0.88  # 95% nominal; 120 draws
    assert abs(c["mean_debiased"] - c["true_ece"]) < 0.006 < c["mean_plug_in"] - c["true_ece"]


def test_bias_corrected_is_the_shifted_percentile_interval():
    rng = np.random.default_rng(0)
    boot = rng.gamma(2.0, 0.02, 500)
    point = 0.03
    r, s = bias_corrected(point, boot), summarise(boot)
    bias = boot.mean() - point
    assert r["bias"] == pytest.approx(bias) and r["estimate"] == pytest.approx(point - bias)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((s["ci_low"] - bias, s["ci_high"] - bias))
    assert r["ci_low"] <= r["estimate"] <= r["ci_high"]
    floored = bias_corrected(0.001, boot, floor=0.0)  # a big bias: clipped at 0, still inside
    assert floored["estimate"] == 0.0 and floored["ci_low"] == 0.0 <= floored["ci_high"]
