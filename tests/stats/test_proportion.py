"""The Wilson interval against statsmodels' proportion_confint(method="wilson")."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from mhaudit.stats.proportion import wilson_interval
from mhaudit.stats.undefined import UndefinedStatisticWarning


@pytest.mark.parametrize(
    "k, n", [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (136, 514), (470, 514), (1, 4568), (4567, 4568)]
)
def test_wilson_interval_equals_statsmodels(k, n):
    low, high = wilson_interval(k, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(ref_low, abs=1e-12) and high == pytest.approx(ref_high, abs=1e-12)
    with pytest.warns(UndefinedStatisticWarning, match="no trials"):
        assert all(math.isnan(v) for v in wilson_interval(0, 0))
