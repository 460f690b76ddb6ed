"""Agreement as verdict rows: subject = a labeler (the weak one, or an annotator), target = what it is compared
with (the reference labels, or the other annotator). Cohen's kappa bands follow Landis & Koch (1977): at least
0.61 (substantial) passes, 0.41-0.60 (moderate) warns, below 0.41 fails."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report import verdict, verdict_table

KAPPA_PASS, KAPPA_WARN = 0.61, 0.41
THRESHOLD = f"Cohen's kappa >= {KAPPA_PASS} passes, >= {KAPPA_WARN} warns (Landis & Koch)"


def _severity(kappa: float) -> str:
    return "pass" if kappa >= KAPPA_PASS else "warn" if kappa >= KAPPA_WARN else "fail"


def _row(axis: str, subject: str, target: str, estimate: float, low: float, high: float, reason: str) -> dict:
    estimate = float(estimate) if estimate is not None else np.nan
    severity = _severity(estimate) if np.isfinite(estimate) else "undefined"
    said = reason or (f"kappa {estimate:.3f}" if np.isfinite(estimate) else "kappa undefined")
    return verdict(
        "agreement", axis, subject, target, "cohen_kappa", estimate, THRESHOLD, severity, said, ci_low=low, ci_high=high
    )


def agreement_verdicts(
    weak: str,
    metrics: pd.DataFrame,
    pairs: pd.DataFrame,
    models: pd.DataFrame | None = None,
    combined: pd.Series | None = None,
) -> pd.DataFrame:
    """The weak labeler's kappa against the reference, a combined labeler's when it is not the weak one (axis "weak
    labels"; `combined`: its row of the side-by-side table), each model's (axis "human validation"), each annotator
    pair's."""
    k = metrics.set_index("metric").loc["kappa"]
    rows = [_row("weak labels", weak, "reference labels", k["estimate"], k["ci_low"], k["ci_high"], k["reason"])]
    if combined is not None and combined["labeler"] != weak:
        c = combined
        said = str(c.get("reason", "") or "")  # the table has a reason column only where a metric is undefined
        reason = "; ".join(r for r in said.split("; ") if r.startswith("kappa: ")).removeprefix("kappa: ")
        if not reason and np.isfinite(c["kappa"]):  # scored unlike the weak labeler: say how
            reason = f"kappa {c['kappa']:.3f}, an abstention read as 0 (combined_vs_reference)"
        rows.append(
            _row("weak labels", c["labeler"], "reference labels", c["kappa"], c["kappa_lo"], c["kappa_hi"], reason)
        )
    if models is not None and not models.empty:
        for _, m in models[models["metric"] == "kappa"].iterrows():
            rows.append(
                _row(
                    "human validation",
                    m["labeler"],
                    "reference labels",
                    m["estimate"],
                    m["ci_low"],
                    m["ci_high"],
                    m["reason"],
                )
            )
    for _, p in pairs.iterrows():
        rows.append(
            _row(
                "human agreement",
                p["annotator_a"],
                p["annotator_b"],
                p["kappa"],
                p["ci_low"],
                p["ci_high"],
                p["reason"] if isinstance(p["reason"], str) else "",
            )
        )
    return verdict_table(rows)
