"""The monitor's alerts as records: one per judged window and kind of alarm (docs/monitor.md, "Alerts").

Two kinds: `change` (the self-starting CUSUM alarmed on the window; severity fail) and `drift` (the window's
score PSI against the reference reached `psi_warn`; warn, or fail from `psi_fail`). Windows under `min_posts`
posts are never judged. Each record carries what a person needs to act on it without opening the report: the
window's EM prevalence of the followed class and its estimated macro-F1, each with its 95% CI, and the
estimate's trust verdict.

What the post store already holds (`recorded`: window, kind, acknowledged) sets each alert's status:
- `new`: not recorded before;
- `recorded`: seen in an earlier round (delivered then, or still pending delivery);
- `acknowledged`: a person acknowledged it (`mhaudit audit monitor-ack`);
- `continuing`: an acknowledged alarm of the same kind has fired in every judged window since, so this is the
  same lasting shift: recorded, never delivered, and no validation sample is drawn for it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.numbers import format_number

__all__ = [
    "ALERT_COLUMNS",
    "KINDS",
    "window_alerts",
    "alerts_text",
    "alerts_shown",
    "alert_status",
    "alert_message",
    "alert_id",
]

KINDS = {"change": "change alarm (self-starting CUSUM of the mean probability)", "drift": "score drift (PSI)"}
ALERT_COLUMNS = [
    "window",
    "kind",
    "severity",
    "statistic",
    "value",
    "n_posts",
    "em_prevalence",
    "em_ci_low",
    "em_ci_high",
    "expected_macro_f1",
    "expected_ci_low",
    "expected_ci_high",
    "estimate_trusted",
    "untrusted_because",
]


def alarms(table: pd.DataFrame, options) -> tuple[pd.Series, pd.Series]:
    """The rule of an alert, per window: (change, drift), each True where that kind fires on a judged window
    (`options`: min_posts, psi_warn; a drift fails from psi_fail)."""
    judged = table["n_posts"] >= options.min_posts
    change = judged & table["change_alarm"].fillna(False).astype(bool)
    drift = judged & (pd.to_numeric(table["psi_score"], errors="coerce") >= options.psi_warn)
    return change, drift


def window_alerts(table: pd.DataFrame, options) -> pd.DataFrame:
    """The alerts of a windows table (audits.monitor.windows.window_table), in window order, change before drift."""
    fires_change, fires_drift = alarms(table, options)
    name = next(c for c in table.columns if c.startswith("em_prior_")).removeprefix("em_prior_")
    change = table[fires_change].assign(
        kind="change", severity="fail", statistic="change_z", value=lambda w: w["cusum_z"]
    )
    drift = table[fires_drift].assign(
        kind="drift",
        severity=lambda w: np.where(w["psi_score"] >= options.psi_fail, "fail", "warn"),
        statistic="psi_score",
        value=lambda w: w["psi_score"],
    )
    both = pd.concat([change, drift]).rename(
        columns={
            f"em_prior_{name}": "em_prevalence",
            f"em_ci_low_{name}": "em_ci_low",
            f"em_ci_high_{name}": "em_ci_high",
        }
    )
    if both.empty:
        return pd.DataFrame(columns=ALERT_COLUMNS)
    order = both["kind"].map({"change": 0, "drift": 1})
    both = both.assign(_order=order).sort_values(["window", "_order"], kind="stable")
    return both[ALERT_COLUMNS].reset_index(drop=True)


def alerts_text(options) -> str:
    """The report's words above the alerts table."""
    return (
        "One row per judged window and kind of alarm: change (the self-starting CUSUM alarmed; fail) or drift "
        f"(score PSI against the reference >= {options.psi_warn:.2f}; fail from {options.psi_fail:.2f}), with "
        "the window's EM prevalence and expected macro-F1 and their 95% CIs. Status: new (first seen in this "
        "round), recorded (seen in an earlier round), acknowledged (mhaudit audit monitor-ack), continuing (the "
        "same lasting alarm as an acknowledged one: not delivered, no new sample). Where the monitor delivers "
        'alerts (--notify), each is delivered once per target (docs/monitor.md, "Alerts").'
    )


def alerts_shown(alerts: pd.DataFrame) -> pd.DataFrame:
    """The alerts as the report's table shows them: what each is and its record first (status, first seen to the
    second, deliveries), then the window's numbers; without the untrusted estimate's reason (the windows table
    has it)."""
    shown = alerts.drop(columns=["untrusted_because"])
    if "first_seen" in shown:
        shown["first_seen"] = shown["first_seen"].str.slice(0, 19).str.replace("T", " ")
    first = ["window", "kind", "severity", "statistic", "value", "status", "first_seen", "delivered", "last_error"]
    first = [c for c in first if c in shown]
    return shown[first + [c for c in shown.columns if c not in first]]


def alert_status(alerts: pd.DataFrame, recorded: pd.DataFrame | None, judged_windows: list[str]) -> pd.Series:
    """Each alert's status (the module docstring) given the alerts the store `recorded` (window, kind,
    acknowledged: bool) and the judged windows in order."""
    if recorded is None or recorded.empty:
        return pd.Series("new", index=alerts.index, dtype=object)
    seen = {(w, k): bool(a) for w, k, a in recorded[["window", "kind", "acknowledged"]].itertuples(index=False)}
    firing = {(w, k) for w, k in alerts[["window", "kind"]].itertuples(index=False)}
    position = {w: i for i, w in enumerate(judged_windows)}
    status = []
    for window, kind in alerts[["window", "kind"]].itertuples(index=False):
        if seen.get((window, kind)):
            status.append("acknowledged")
        elif _continues_acknowledged(window, kind, seen, firing, judged_windows, position):
            status.append("continuing")
        else:
            status.append("recorded" if (window, kind) in seen else "new")
    return pd.Series(status, index=alerts.index, dtype=object)


def _continues_acknowledged(window, kind, seen, firing, judged, position) -> bool:
    """Whether an acknowledged alert of `kind` starts an unbroken run of firing judged windows up to `window`."""
    i = position.get(window)
    while i is not None and i > 0:
        i -= 1
        earlier = judged[i]
        if (earlier, kind) not in firing:
            return False
        if seen.get((earlier, kind)):
            return True
    return False


def alert_message(alert: dict, *, model: str, followed: str, report: str, sample: str | None) -> tuple[str, str]:
    """The title and body of an alert's notification: what changed, in which window, the numbers with their CIs,
    the report's path and the suggested sample. Counts and statistics only: no post text, no author."""
    title = f"mhaudit monitor: {alert['kind']} alarm ({alert['severity']}) for {model}, window {alert['window']}"
    value = format_number(alert["value"], alert["statistic"])
    lines = [
        f"{KINDS[alert['kind']][0].upper()}{KINDS[alert['kind']][1:]} on the window {alert['window']} "
        f"({int(alert['n_posts']):,} posts): {alert['statistic']} = {value}.",
        f"Prevalence of {followed} among the kept posts (EM): {_with_ci(alert, 'em_prevalence', 'em_ci')}.",
        f"Expected macro-F1 (label-free): {_with_ci(alert, 'expected_macro_f1', 'expected_ci')}, "
        + (
            "trusted."
            if bool(alert["estimate_trusted"])
            else f"not trusted ({alert['untrusted_because'] or 'undefined'})."
        ),
        f"Report: {report}",
        f"Suggested validation sample: {sample}" if sample else "No validation sample was drawn for this window.",
        f"Alert id: {alert_id(alert, model)}",
    ]
    return title, "\n".join(lines)


def alert_id(alert: dict, model: str) -> str:
    """A stable id a receiver can drop repeats by: model, window and kind."""
    return f"{model}/{alert['window']}/{alert['kind']}".replace(" ", "T")


def _with_ci(alert: dict, value: str, ci: str) -> str:
    number, low, high = (alert[value], alert[f"{ci}_low"], alert[f"{ci}_high"])
    if pd.isna(number):
        return "n/a"
    interval = f" [{low:.3f}, {high:.3f}]" if pd.notna(low) and pd.notna(high) else ""
    return f"{number:.3f}{interval}"
