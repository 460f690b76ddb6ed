"""The trust rules in words, for the estimate audit and the monitor: why a label-free estimate is not trusted (the
estimate's shift table, the monitor's windows), from the failed checks of stats.pair_estimate.trust and its cut-offs;
when the agreement line is trusted, and why not (the failed checks of stats.agreement_line.line_trust)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mhaudit.stats.agreement_line import MAX_AGREEMENT, MAX_METHOD_GAP, MAX_RESIDUAL_SD, MIN_R2, MIN_RUNS, MIN_SPREAD
from mhaudit.stats.trust_rule import TrustOptions

__all__ = ["line_rule", "line_untrusted_because", "untrusted_because"]


def untrusted_because(failed: dict, cutoffs: TrustOptions, classes: Sequence[str]) -> str:
    """One reason per failed check, joined by '; ' ('' when trusted); `classes` name the vanishing class."""
    reasons = {
        "domain_auc": lambda v: (
            f"domain AUC {v:.3f} > {cutoffs.domain_auc_cutoff:.2f}: the scores shifted beyond "
            "what the prior shift explains"
        ),
        "prior_gap": lambda v: (
            f"EM and BBSE priors differ by {'undefined' if np.isnan(v) else f'{v:.3f}'} > "
            f"{cutoffs.prior_gap_cutoff:.2f}"
        ),
        "vanishing_class": lambda v: (
            f"an estimated prior of class {classes[v]} is near 0: no prior shift explains the target's scores"
        ),
        "assumption_gap": lambda v: (
            f"label-shift-adjusted and unadjusted CBPE differ by {v:.3f} > "
            f"{cutoffs.assumption_gap_cutoff:.2f}: the estimate hinges on the kind of shift"
        ),
    }
    return "; ".join(reasons[name](value) for name, value in failed.items())


def line_untrusted_because(failed: dict) -> str:
    """One reason per failed check of the agreement line (stats.agreement_line.line_trust), joined by '; ' ('' when
    trusted)."""
    reasons = {
        "n_runs": lambda v: f"{v} runs < {MIN_RUNS}: too few to see a line",
        "too_similar": lambda v: (
            f"the runs are too similar to fit a slope: they agree on {v[0]:.1%} of the "
            f"reference (at most {MAX_AGREEMENT:.0%}), probit SD {v[1]:.3f} over pairs (at least "
            f"{MIN_SPREAD})"
        ),
        "r2": lambda v: (
            f"the agreement line explains R² {'undefined' if np.isnan(v) else f'{v:.2f}'} < {MIN_R2} of "
            "the target agreements"
        ),
        "residual_sd": lambda v: f"the pairs scatter {v:.3f} probit about the line > {MAX_RESIDUAL_SD}",
        "method_gap": lambda v: (
            f"ALine-S and ALine-D differ by {v:.3f} > {MAX_METHOD_GAP}: the accuracies are off the line"
        ),
    }
    return "; ".join(reasons[name](value) for name, value in failed.items())


def line_rule(agreements: str) -> str:
    """When the agreement line is trusted; `agreements`: whose agreements it explains ("target", "window's")."""
    return (
        f"The line is trusted when there are at least {MIN_RUNS} distinct runs that agree on at most "
        f"{MAX_AGREEMENT:.0%} of the reference, their agreements spread at least {MIN_SPREAD} probit SD, the line "
        f"explains R² ≥ {MIN_R2} of the {agreements} agreements with residual SD ≤ {MAX_RESIDUAL_SD} probit, and "
        f"ALine-S and ALine-D agree within {MAX_METHOD_GAP} for every run (docs/estimate.md)."
    )
