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
        "label-shift-adjusted and unadjusted CBPE differ by 0.081 > 0.05: the estimate hinges on the kind of shift")
    gap = untrusted_because({"prior_gap": 0.1234}, TrustOptions(), ["a"])
    assert gap == "EM and BBSE priors differ by 0.123 > 0.10"
