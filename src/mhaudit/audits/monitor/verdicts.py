"""The monitor's verdict rows and summary: a row for each window that crosses a threshold, else one pass row.

Axis "drift on the stream"; subject the model; target "stream, windows of W". A window's score PSI against
the reference warns from `psi_warn` and fails from `psi_fail`; a change-detector alarm fails. The latest
window's label-free estimate is reported beside them (warn when untrusted).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.result import verdict, verdict_table

__all__ = ["AXIS", "monitor_verdicts", "summarise"]

AXIS = "drift on the stream"


def monitor_verdicts(table: pd.DataFrame, options, *, model_name: str, target: str) -> pd.DataFrame:
    rows = []
    judged = table[table["n_posts"] >= options.min_posts]
    for _, w in table.iterrows():
        if w["psi_score"] >= options.psi_warn and w["n_posts"] >= options.min_posts:
            severity = "fail" if w["psi_score"] >= options.psi_fail else "warn"
            rows.append(verdict("monitor", AXIS, model_name, target, "psi_score", w["psi_score"],
                                f"PSI >= {options.psi_warn:.2f} warn, >= {options.psi_fail:.2f} fail", severity,
                                f"window {w['window']}: the score distribution moved from the reference's "
                                f"(PSI {w['psi_score']:.3f})"))
        if w["change_alarm"]:
            rows.append(verdict("monitor", AXIS, model_name, target, "change_z", w["cusum_z"],
                                "self-starting CUSUM, k = 0.5, h = 5", "fail",
                                f"window {w['window']}: the mean probability of the positive class changed (CUSUM alarm, "
                                f"z = {w['cusum_z']:.1f})"))
    if not rows and judged.empty:
        rows.append(verdict("monitor", AXIS, model_name, target, "max_psi_score", np.nan,
                            f"PSI < {options.psi_warn:.2f} and no change alarm", "undefined",
                            f"no window of at least {options.min_posts} posts to judge"))
    elif not rows:
        rows.append(verdict("monitor", AXIS, model_name, target, "max_psi_score", judged["psi_score"].max(),
                            f"PSI < {options.psi_warn:.2f} and no change alarm", "pass",
                            f"{len(judged)} windows of at least {options.min_posts} posts, none crossed a threshold"))
    if judged.empty:
        return verdict_table(rows)
    last = judged.iloc[-1]
    trusted = bool(last["estimate_trusted"])
    severity = "undefined" if np.isnan(last["expected_macro_f1"]) else "pass" if trusted else "warn"
    rows.append(verdict("monitor", AXIS, model_name, target, "expected_macro_f1_latest", last["expected_macro_f1"],
                        "untrusted: warn", severity,
                        f"latest window of at least {options.min_posts} posts, {last['window']}: "
                        + ("estimate trusted" if trusted else f"estimate untrusted ({last['untrusted_because']})"),
                        ci_low=last["expected_ci_low"], ci_high=last["expected_ci_high"]))
    return verdict_table(rows)


def summarise(table: pd.DataFrame, options, scored_now: int) -> str:
    judged = table[table["n_posts"] >= options.min_posts]
    alarms = table.loc[table["change_alarm"], "window"].tolist()
    drifted = judged.loc[judged["psi_score"] >= options.psi_warn, "window"].tolist()
    small = len(table) - len(judged)
    text = (f"{int(table['n_posts'].sum()):,} posts in {len(table)} windows of {options.window} ({scored_now:,} "
            f"scored in this run" + (f"; {small} windows under {options.min_posts} posts are not judged" if small else "")
            + f"). Change alarms: {', '.join(alarms) or 'none'}. Score drift (PSI >= {options.psi_warn:.2f}): "
            f"{', '.join(drifted) or 'none'}.")
    if judged.empty:
        return text
    last = judged.iloc[-1]
    expected = "n/a" if np.isnan(last["expected_macro_f1"]) else \
        f"{last['expected_macro_f1']:.3f} [{last['expected_ci_low']:.3f}, {last['expected_ci_high']:.3f}]"
    return text + (f" Latest judged window ({last['window']}): macro-F1 expected {expected}, "
                   + ("trusted." if last["estimate_trusted"] else "untrusted."))
