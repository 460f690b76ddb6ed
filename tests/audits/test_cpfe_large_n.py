"""The CPFE macro-AUC SE switch: groups at or over `delong_min_rows` use DeLong's placement values, groups
under it the label-stratified bootstrap (unchanged: the golden demo test holds it bit-equal)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.core.errors import InputError
from mhaudit.stats.macro_delong import macro_auc_delong, paired_macro_auc_delong
from tests.audits.test_cpfe import CLASSES, FAST, synthetic_predictions

N = 400  # rows per group


def _codes_probs(frame: pd.DataFrame, model: str, platform: str) -> tuple[np.ndarray, np.ndarray]:
    rows = frame[(frame["model"] == model) & (frame["platform"] == platform) & (frame["seed"] == 0)]
    logits = rows[[f"logit_{c}" for c in CLASSES]].to_numpy()
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    return pd.Categorical(rows["label"], categories=CLASSES).codes.astype(np.int64), probs / probs.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def runs():
    preds = synthetic_predictions(n=N, seeds=(0,))
    return preds, {
        threshold: audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="home", delong_min_rows=threshold, **FAST))
        for threshold in (N, N + 1)
    }


def test_every_group_at_the_threshold_uses_delong(runs):
    preds, results = runs
    result = results[N]
    assert result.options["macro_auc_se"] == "DeLong" and result.options["delong_min_rows"] == N
    sig = result.table("significance")
    assert (sig["n_boot"] == 0).all()
    frame = preds.frame
    for row in sig.itertuples():
        se_a = macro_auc_delong(*_codes_probs(frame, row.model, row.platform_a), 4)["se"]
        se_b = macro_auc_delong(*_codes_probs(frame, row.model, row.platform_b), 4)["se"]
        assert math.isclose(row.se, math.hypot(se_a, se_b), rel_tol=1e-12)
    models = result.table("model_comparison")
    macro = models[models["class"] == ""]
    assert set(macro["test"]) == {"paired DeLong, macro-AUC"}
    for row in macro.itertuples():
        y, pa = _codes_probs(frame, row.model_a, row.platform)
        _, pb = _codes_probs(frame, row.model_b, row.platform)
        assert math.isclose(row.se, paired_macro_auc_delong(y, pa, pb, 4)["se"], rel_tol=1e-12)
    text = next(s.text for s in result.sections if s.title == "Axis 3: significance")
    assert "DeLong SE (every platform has at least 400 rows" in text


def test_a_group_under_the_threshold_keeps_the_bootstrap_and_both_agree(runs):
    _, results = runs
    boot, delong = results[N + 1], results[N]
    assert boot.options["macro_auc_se"] == "bootstrap"
    assert (boot.table("significance")["n_boot"] == FAST["n_boot_significance"]).all()
    models = boot.table("model_comparison")
    assert set(models.loc[models["class"] == "", "test"]) == {"paired bootstrap, macro-AUC"}
    assert "bootstrap SE (B = 300" in next(s.text for s in boot.sections if s.title == "Axis 3: significance")
    # the same differences; SEs within the 300-resample bootstrap's Monte Carlo error (~4% per SE; seen 0.96-1.02)
    sb, sd = boot.table("significance"), delong.table("significance")
    assert np.array_equal(sb["difference"], sd["difference"])
    ratio = sd["se"] / sb["se"]
    assert ((ratio > 0.85) & (ratio < 1.15)).all(), ratio.tolist()


def test_the_threshold_must_be_positive():
    with pytest.raises(InputError, match="delong_min_rows 0 must be at least 1"):
        CPFEOptions(reference="home", delong_min_rows=0)
