"""The monitor's verdict rows and summary: a row for each window that crosses a threshold, else one pass row.

Axis "drift on the stream"; subject the model; target "stream, windows of W". A window's score PSI against
the reference warns from `psi_warn` and fails from `psi_fail`; a change-detector alarm fails. The latest
window's label-free estimate is reported beside them (warn when untrusted), and so is, with an ensemble of runs,
the latest window's accuracy from the agreement line (warn when the line is untrusted). The summary opens with
the latest judged window's EM prevalence of the positive class, its 95% CI and where it started.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pandas as pd

from mhaudit.audits.monitor.coverage import coverage_sentence
from mhaudit.report.result import verdict, verdict_table
from mhaudit.report.scorecard import SEVERITY_RANK

__all__ = ["AXIS", "monitor_verdicts", "prevalence_sentence", "summarise"]

AXIS = "drift on the stream"


def monitor_verdicts(table: pd.DataFrame, options, *, model_name: str, target: str) -> pd.DataFrame:
    row = partial(verdict, "monitor", AXIS, model_name, target)
    rows = []
    judged = table[table["n_posts"] >= options.min_posts]
    for _, w in table.iterrows():
        if w["psi_score"] >= options.psi_warn and w["n_posts"] >= options.min_posts:
            rows.append(
                row(
                    "psi_score",
                    w["psi_score"],
                    f"PSI >= {options.psi_warn:.2f} warn, >= {options.psi_fail:.2f} fail",
                    "fail" if w["psi_score"] >= options.psi_fail else "warn",
                    f"window {w['window']}: the score distribution moved from the reference's "
                    f"(PSI {w['psi_score']:.3f})",
                )
            )
        if w["change_alarm"]:
            rows.append(
                row(
                    "change_z",
                    w["cusum_z"],
                    "self-starting CUSUM, k = 0.5, h = 5",
                    "fail",
                    f"window {w['window']}: the mean probability of the positive class changed (CUSUM alarm, "
                    f"z = {w['cusum_z']:.1f})",
                )
            )
    # The worst first, windows in order within a severity: the scorecard's cell shows the first row's statistic
    # at its worst severity, the first window that reached it (report.scorecard).
    rows.sort(key=lambda r: SEVERITY_RANK[r["severity"]])
    if not rows:  # without a judged window the value is NaN, so the row undefined
        rows.append(
            row(
                "max_psi_score",
                judged["psi_score"].max(),
                f"PSI < {options.psi_warn:.2f} and no change alarm",
                "pass",
                f"{len(judged)} windows of at least {options.min_posts} posts, none crossed a threshold"
                if len(judged)
                else f"no window of at least {options.min_posts} posts to judge",
            )
        )
    if judged.empty:
        return verdict_table(rows)
    last = judged.iloc[-1]
    trusted = bool(last["estimate_trusted"])  # a NaN estimate makes the row undefined (`verdict`)
    rows.append(
        row(
            "expected_macro_f1_latest",
            last["expected_macro_f1"],
            "untrusted: warn",
            "pass" if trusted else "warn",
            f"latest window of at least {options.min_posts} posts, "
            f"{last['window']}: "
            + ("estimate trusted" if trusted else f"estimate untrusted ({last['untrusted_because']})"),
            ci_low=last["expected_ci_low"],
            ci_high=last["expected_ci_high"],
        )
    )
    if "ensemble_accuracy" in table.columns:
        rows.append(_ensemble_row(last, options, row))
    return verdict_table(rows)


def _ensemble_row(last: pd.Series, options, row: Callable[..., dict]) -> dict:
    """The latest judged window's accuracy from the agreement line: pass when the line is trusted, else warn."""
    trusted = bool(last["ensemble_trusted"])
    return row(
        "ensemble_accuracy_latest",
        last["ensemble_accuracy"],
        "ALine-D; untrusted line: warn",
        "pass" if trusted else "warn",
        f"latest window of at least {options.min_posts} posts, {last['window']}: "
        "accuracy from the runs' agreement, "
        + ("line trusted" if trusted else f"line untrusted ({last['ensemble_untrusted_because']})"),
        ci_low=last["ensemble_ci_low"],
        ci_high=last["ensemble_ci_high"],
    )


def summarise(
    table: pd.DataFrame, options, scored_now: int, runs: pd.DataFrame | None = None, collection: Sequence = ()
) -> str:
    """The report's summary: the prevalence among the kept posts next to the collection filter's recall, the
    windows and their alarms, the latest judged window's estimate, the ensemble's, and the history kept."""
    text = _summary(table, options, scored_now, runs, collection)
    if options.history is not None:
        text += (
            f" History: the last {options.history} ({len(table):,} windows from {table['window'].iat[0]}); "
            "older posts are left out."
        )
    return text


def _summary(table: pd.DataFrame, options, scored_now: int, runs: pd.DataFrame | None, collection: Sequence) -> str:
    judged = table[table["n_posts"] >= options.min_posts]
    alarms = table.loc[table["change_alarm"], "window"].tolist()
    drifted = judged.loc[judged["psi_score"] >= options.psi_warn, "window"].tolist()
    small = len(table) - len(judged)
    text = (
        f"{int(table['n_posts'].sum()):,} posts in {len(table)} windows of {options.window} ({scored_now:,} "
        "scored in this run"
        + (f"; {small} windows under {options.min_posts} posts are not judged" if small else "")
        + f"). Change alarms: {', '.join(alarms) or 'none'}. Score drift (PSI >= {options.psi_warn:.2f}): "
        f"{', '.join(drifted) or 'none'}."
    )
    coverage = coverage_sentence(collection)
    if judged.empty:
        return (text + " " + coverage).rstrip()
    text = " ".join(filter(None, [prevalence_sentence(judged, kept=bool(collection)), coverage, text]))
    last = judged.iloc[-1]
    expected = (
        "n/a"
        if np.isnan(last["expected_macro_f1"])
        else f"{last['expected_macro_f1']:.3f} [{last['expected_ci_low']:.3f}, {last['expected_ci_high']:.3f}]"
    )
    text += f" Latest judged window ({last['window']}): macro-F1 expected {expected}, " + (
        "trusted." if last["estimate_trusted"] else "untrusted."
    )
    return text if runs is None else text + " " + _ensemble_summary(judged, runs)


def prevalence_sentence(judged: pd.DataFrame, first: int = 3, *, kept: bool = False) -> str:
    """The summary's first sentence: the latest judged window's EM prevalence of the followed class with its 95%
    CI, and the mean EM prevalence of the first `first` judged windows (fewer when there are few) it moved from.
    `kept`: the posts are those a collection filter kept, and the sentence says the prevalence is among them."""
    name = next(c for c in judged.columns if c.startswith("em_prior_")).removeprefix("em_prior_")
    last = judged.iloc[-1]
    low, high = last[f"em_ci_low_{name}"], last[f"em_ci_high_{name}"]
    ci = f" [{low:.3f}, {high:.3f}]" if np.isfinite(low) and np.isfinite(high) else ""
    text = (
        f"Prevalence of {name}{' among the posts the collection kept' if kept else ''} (EM estimate, 95% CI): "
        f"{last[f'em_prior_{name}']:.3f}{ci} in the latest judged "
        f"window ({last['window']})"
    )
    n = min(first, len(judged) - 1)
    if n:
        base = float(judged[f"em_prior_{name}"].iloc[:n].mean())
        text += f", from {base:.3f} in the first " + ("judged window" if n == 1 else f"{n} judged windows (mean)")
    return text + "."


def _ensemble_summary(judged: pd.DataFrame, runs: pd.DataFrame) -> str:
    """The ensemble's latest trusted estimate of the deployed run's accuracy, or why there is none."""
    deployed = runs.loc[runs["deployed"]].iloc[0]
    head = (
        f"Ensemble of {len(runs)} runs (deployed: {deployed['run']}, accuracy {deployed['accuracy_reference']:.3f} "
        "on the labelled sample): "
    )
    trusted = judged[judged["ensemble_trusted"].astype(bool)]
    if trusted.empty:
        last = judged.iloc[-1]
        return head + (
            f"no window's agreement line is trusted (latest, {last['window']}: {last['ensemble_untrusted_because']})."
        )
    t = trusted.iloc[-1]
    latest = "the latest judged window" if t["window"] == judged["window"].iat[-1] else "the latest trusted window"
    return head + (
        f"accuracy {t['ensemble_accuracy']:.3f} [{t['ensemble_ci_low']:.3f}, {t['ensemble_ci_high']:.3f}] "
        f"in {t['window']}, {latest}, from the agreement line."
    )
