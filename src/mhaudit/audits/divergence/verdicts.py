"""Degree of Divergence as verdict rows: subject = the channel contrast (e.g. C-A), or the model for a baseline's
DoD against channel A (so a combined report puts it in that model's row), target = the label sources."""

from __future__ import annotations

import pandas as pd

from mhaudit.audits.divergence.thresholds import holds
from mhaudit.report import verdict, verdict_table

NAMES = {"auc": "AUC", "pr_auc_gain": "PR-AUC gain"}  # the threshold-free DoDs a Macro-F1 divergence must survive


def divergence_verdicts(
    dod: pd.DataFrame, threshold_free: pd.DataFrame | None = None, control: pd.DataFrame | None = None
) -> pd.DataFrame:
    """fail where the 95% CI of DoD excludes 0: the human and automatic labels reward different evidence; warn
    where that Macro-F1 divergence does not hold on AUC and PR-AUC gain (threshold or prevalence?), and where
    the random-POS control does not cost more than the POS-only mask."""
    rows = []
    for _, d in dod.iterrows():
        low, high = float(d["ci_low"]), float(d["ci_high"])
        apart = low > 0 or high < 0
        model = (
            d["contrast"].removeprefix("baseline:").removesuffix("-A")
            if d["contrast"].startswith("baseline:")
            else None
        )
        what = "the model's gain over channel A" if model else "the channel's gain"
        rows.append(
            verdict(
                "divergence",
                "label source",
                model or d["contrast"],
                "human vs automatic labels",
                "dod vs A" if model else "dod",
                d["estimate"],
                "95% CI of DoD excludes 0",
                "fail" if apart else "pass",
                (
                    f"{what} differs between human and automatic labels: they reward different evidence"
                    if apart
                    else "no divergence beyond the bootstrap interval"
                ),
                ci_low=low,
                ci_high=high,
            )
        )
        rows += _threshold_free_verdict(threshold_free, d["contrast"], model, apart)
    rows += _control_verdicts(control)
    return verdict_table(rows)


def _threshold_free_verdict(table: pd.DataFrame | None, contrast: str, model: str | None, apart: bool) -> list[dict]:
    if table is None or table.empty or contrast not in set(table["contrast"]):
        return []
    rows = table[table["contrast"] == contrast].set_index("metric")
    sign = rows.loc["macro_f1", "estimate"]
    auc, survives = rows.loc["auc"], holds(table[table["contrast"] == contrast].to_dict("records"), sign)
    # the statistic's name says what the number is to the Macro-F1 verdict beside it: the divergence seen on AUC too
    statistic = (
        "dod on AUC"
        if not apart
        else "also on AUC"
        if auc["apart"] and (auc["estimate"] > 0) == (sign > 0)
        else "not on AUC"
    )
    if not apart:
        reason = "no Macro-F1 divergence to explain"
    elif survives:
        reason = "the Macro-F1 divergence holds on AUC and PR-AUC gain: not a threshold effect"
    else:
        lost = [
            f"{NAMES[m]} {rows.loc[m, 'estimate']:+.3f} [{rows.loc[m, 'ci_low']:+.3f}, {rows.loc[m, 'ci_high']:+.3f}]"
            for m in NAMES
            if not (rows.loc[m, "apart"] and (rows.loc[m, "estimate"] > 0) == (sign > 0))
        ]
        reason = (
            f"the Macro-F1 divergence does not hold on {' and '.join(lost)}: it may be the training threshold "
            "meeting another prevalence or score scale; see threshold_diagnostic"
        )
    return [
        verdict(
            "divergence",
            "label source",
            model or contrast,
            "human vs automatic labels",
            statistic,
            float(auc["estimate"]),
            "Macro-F1 DoD holds on AUC and PR-AUC gain",
            "warn" if apart and not survives else "pass",
            reason,
            ci_low=float(auc["ci_low"]),
            ci_high=float(auc["ci_high"]),
        )
    ]


def _control_verdicts(control: pd.DataFrame | None) -> list[dict]:
    rows = []
    for _, c in (control if control is not None else pd.DataFrame()).iterrows():
        reason = {
            "works": "random POS tags cost more than the real ones: the channel reads syntax",
            "inconclusive": "random POS tags cost no more than the real ones within the CI: the masks' drop "
            "is no evidence that the channel reads syntax",
            "fails": "random POS tags cost less than the real ones: the control does not work here, and "
            "the masks' drop is no evidence that the channel reads syntax",
        }[c["status"]]
        rows.append(
            verdict(
                "divergence",
                "label source",
                f"{c['channel']} random-POS control",
                c["dataset"],
                "random_pos - pos_only",
                float(c["random_minus_pos_only"]),
                "random POS costs more than POS-only (CI below 0)",
                "pass" if c["status"] == "works" else "warn",
                reason,
                ci_low=float(c["ci_low"]),
                ci_high=float(c["ci_high"]),
            )
        )
    return rows
