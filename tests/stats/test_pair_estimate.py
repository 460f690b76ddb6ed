"""The trust rule: typed cut-offs in (TrustOptions, checked when made), the failed checks and their values out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mhaudit.core.errors import InputError
from mhaudit.stats.pair_estimate import TrustOptions, estimate_pair, reference_draws, trust

TRUSTED = {"domain_auc": 0.55, "prior_gap": 0.04, "vanishing_class": -1, "assumption_gap": 0.01}


def test_trust_returns_the_failed_checks_with_their_values_in_order():
    assert trust(TRUSTED, TrustOptions()) == {}
    failed = trust(
        {"domain_auc": 0.71, "prior_gap": np.nan, "vanishing_class": 2, "assumption_gap": 0.08}, TrustOptions()
    )
    assert list(failed) == ["domain_auc", "prior_gap", "vanishing_class", "assumption_gap"]
    assert failed["domain_auc"] == 0.71 and math.isnan(failed["prior_gap"]) and failed["vanishing_class"] == 2
    assert failed["assumption_gap"] == 0.08
    # at the cut-off is trusted; a stricter cut-off fails the same diagnostic
    assert trust(dict(TRUSTED, domain_auc=0.60), TrustOptions()) == {}
    assert trust(TRUSTED, TrustOptions(domain_auc_cutoff=0.5, assumption_gap_cutoff=0.005)) == {
        "domain_auc": 0.55,
        "assumption_gap": 0.01,
    }


@pytest.mark.parametrize(
    "field, value",
    [("domain_auc_cutoff", 0.49), ("domain_auc_cutoff", 1.01), ("prior_gap_cutoff", 0), ("assumption_gap_cutoff", 1.5)],
)
def test_trust_options_are_checked_when_made(field, value):
    """Domain AUC cut-off in [0.5, 1] (below 0.5 no target could be trusted), gaps in (0, 1] (differences of
    shares)."""
    with pytest.raises(InputError, match=rf"^{field} {value} must be"):
        TrustOptions(**{field: value})


def test_trust_options_defaults_and_bounds():
    assert TrustOptions() == TrustOptions(domain_auc_cutoff=0.60, prior_gap_cutoff=0.10, assumption_gap_cutoff=0.05)
    TrustOptions(domain_auc_cutoff=0.5, prior_gap_cutoff=1, assumption_gap_cutoff=1)  # the closed ends are allowed
    TrustOptions(domain_auc_cutoff=1)


def test_the_pair_carries_its_failed_checks():
    """estimate_pair's `failed` is trust() of its own diagnostic under the cut-offs it was given."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    logits = np.c_[np.zeros(600), 2.0 * y - 1 + rng.normal(size=600)]
    target = np.c_[np.zeros(500), rng.normal(1.5, 1.0, 500)]  # scores far from the reference's mixture
    draws = reference_draws(y, logits, 50, np.random.default_rng(1))
    loose = estimate_pair(draws, target, rng=np.random.default_rng(2), seed=0, cutoffs=TrustOptions(1, 1, 1))
    strict = estimate_pair(draws, target, rng=np.random.default_rng(2), seed=0)
    assert loose.failed == trust(loose.shift, TrustOptions(1, 1, 1)) == {"vanishing_class": 0}  # no cut-off
    assert strict.failed == trust(strict.shift, TrustOptions())
    assert list(strict.failed) == ["vanishing_class", "assumption_gap"] and strict.failed["assumption_gap"] > 0.2
