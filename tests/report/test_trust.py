"""The trust rule's failed checks in words, as the estimate's shift table and the monitor's windows give them."""

from __future__ import annotations

import numpy as np

from mhaudit.report.trust import untrusted_because
from mhaudit.stats.pair_estimate import TrustOptions


def test_each_failed_check_is_one_reason_with_its_number_and_cut_off():
    assert untrusted_because({}, TrustOptions(), ["a", "b"]) == ""
    failed = {"domain_auc": 0.7123, "prior_gap": np.nan, "vanishing_class": 1, "assumption_gap": 0.0812}
    assert untrusted_because(failed, TrustOptions(domain_auc_cutoff=0.65), ["a", "b"]) == (
        "domain AUC 0.712 > 0.65: the scores shifted beyond what the prior shift explains; "
        "EM and BBSE priors differ by undefined > 0.10; "
        "an estimated prior of class b is near 0: no prior shift explains the target's scores; "
        "label-shift-adjusted and unadjusted CBPE differ by 0.081 > 0.05: the estimate hinges on the kind of shift"
    )
    gap = untrusted_because({"prior_gap": 0.1234}, TrustOptions(), ["a"])
    assert gap == "EM and BBSE priors differ by 0.123 > 0.10"


def test_the_agreement_lines_rule_in_words_names_its_cut_offs():
    from mhaudit.report.trust import line_rule
    from mhaudit.stats.agreement_line import MAX_AGREEMENT, MIN_R2, MIN_RUNS

    text = line_rule("window's")
    assert text.startswith(
        f"The line is trusted when there are at least {MIN_RUNS} distinct runs that agree on at "
        f"most {MAX_AGREEMENT:.0%} of the reference"
    )
    assert f"R² ≥ {MIN_R2} of the window's agreements" in text and text.endswith("(docs/estimate.md).")


def test_each_failed_check_of_the_line_is_one_reason_with_its_numbers():
    from mhaudit.report.trust import line_untrusted_because

    assert line_untrusted_because({}) == ""
    failed = {"n_runs": 3, "too_similar": (0.9951, 0.0312), "r2": np.nan, "residual_sd": 0.0712, "method_gap": 0.0523}
    assert line_untrusted_because(failed) == (
        "3 runs < 4: too few to see a line; "
        "the runs are too similar to fit a slope: they agree on 99.5% of the reference (at most 99%), probit SD 0.031 "
        "over pairs (at least 0.05); "
        "the agreement line explains R² undefined < 0.93 of the target agreements; "
        "the pairs scatter 0.071 probit about the line > 0.05; "
        "ALine-S and ALine-D differ by 0.052 > 0.04: the accuracies are off the line"
    )
    r2 = line_untrusted_because({"r2": 0.9012})
    assert r2 == "the agreement line explains R² 0.90 < 0.93 of the target agreements"
