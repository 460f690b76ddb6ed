"""Why a label-free estimate is not trusted, in words: the sentence of the estimate audit's shift table and the
monitor's windows, from the failed checks of the trust rule (stats.pair_estimate.trust) and its cut-offs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mhaudit.stats.pair_estimate import TrustOptions

__all__ = ["untrusted_because"]


def untrusted_because(failed: dict, cutoffs: TrustOptions, classes: Sequence[str]) -> str:
    """One reason per failed check, joined by '; ' ('' when trusted); `classes` name the vanishing class."""
    reasons = {
        "domain_auc": lambda v: f"domain AUC {v:.3f} > {cutoffs.domain_auc_cutoff:.2f}: the scores shifted beyond "
                                "what the prior shift explains",
        "prior_gap": lambda v: f"EM and BBSE priors differ by {'undefined' if np.isnan(v) else f'{v:.3f}'} > "
                               f"{cutoffs.prior_gap_cutoff:.2f}",
        "vanishing_class": lambda v: f"an estimated prior of class {classes[v]} is near 0: no prior shift explains "
                                     "the target's scores",
        "assumption_gap": lambda v: f"label-shift-adjusted and unadjusted CBPE differ by {v:.3f} > "
                                    f"{cutoffs.assumption_gap_cutoff:.2f}: the estimate hinges on the kind of shift",
    }
    return "; ".join(reasons[name](value) for name, value in failed.items())
