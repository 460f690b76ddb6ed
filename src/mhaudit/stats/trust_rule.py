"""The trust rule's cut-offs and the fewest bootstrap resamples, shared by the estimate audit and the monitor: a
module of its own, light to import, since their options (and so the command line's flags) hold them; the rule
itself is stats.pair_estimate.trust."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.options import between, check, option

__all__ = ["MIN_BOOT", "TrustOptions"]


# The fewest bootstrap resamples the estimate audit and the monitor take: a 95% percentile interval needs a resample
# in each 2.5% tail, and below 40 its ends are the extremes of the draws.
MIN_BOOT = 40


@dataclass(frozen=True)
class TrustOptions:
    """The trust rule's cut-offs, shared by the estimate audit and the monitor (each options holds one). The first
    two were fixed before any real-data run, the third added after the first (docs/estimate.md says which came
    when)."""

    domain_auc_cutoff: float = option(
        0.60,
        help="Trusted only when the prior-shift-weighted domain classifier "
        "tells reference from target scores with an AUC of at most this.",
        rule=between(0.5, 1, low_open=False, high_open=False),
    )
    prior_gap_cutoff: float = option(
        0.10,
        help="Trusted only when the EM and BBSE class priors differ by at most this.",
        rule=between(0, 1, high_open=False),
    )
    assumption_gap_cutoff: float = option(
        0.05,
        help="Trusted only when the label-shift-adjusted and unadjusted CBPE macro-F1 differ by at most this.",
        rule=between(0, 1, high_open=False),
    )

    def __post_init__(self) -> None:
        check(self)
