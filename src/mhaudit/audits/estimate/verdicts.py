"""The verdict rows and the plain-words summary of the label-free estimate (the trust rule: stats.pair_estimate).

Verdict rows: subject = "<model> seed <n>", target = the platform (and data set), axis "expected on the
target, before labels". The headline is CBPE's macro-F1; it fails when trusted and its whole CI lies more
than 0.10 below the reference's macro-F1, warns when trusted with a point drop over 0.05, and warns when
untrusted (an estimate outside its assumptions is not a finding either way). One row per target: the
diagnostic's numbers are in the shift table and, where they fail, in the reason.
"""

from __future__ import annotations

import pandas as pd

from mhaudit.report.result import verdict, verdict_table

__all__ = ["AXIS", "estimate_verdicts", "summarise"]

AXIS = "expected on the target, before labels"
FAIL_DROP, WARN_DROP = 0.10, 0.05


def _target(row) -> str:
    return row["platform"] if row["dataset"] == row["platform"] else f"{row['platform']} ({row['dataset']})"


def estimate_verdicts(tables: dict, options) -> pd.DataFrame:
    shift = tables["shift"].set_index(["model", "seed", "platform", "dataset"])
    est = tables["estimates"]
    headline = est[(est["method"] == "cbpe") & (est["metric"] == "macro_f1")]
    rows = []
    for _, e in headline.iterrows():
        s = shift.loc[(e["model"], e["seed"], e["platform"], e["dataset"])]
        subject, target = f"{e['model']} seed {e['seed']}", _target(e)
        drop = e["reference_value"] - e["estimate"]
        if not s["trusted"]:
            severity, reason = "warn", f"estimate untrusted: {s['untrusted_because']}"
        elif e["reference_value"] - e["ci_high"] > FAIL_DROP:
            severity, reason = "fail", f"macro-F1 expected {drop:.3f} below the reference, its CI wholly > {FAIL_DROP} below"
        elif drop > WARN_DROP:
            severity, reason = "warn", f"macro-F1 expected {drop:.3f} below the reference ({e['reference_value']:.3f})"
        else:
            severity, reason = "pass", f"macro-F1 expected within {WARN_DROP} of the reference ({e['reference_value']:.3f})"
        rows.append(verdict("estimate", AXIS, subject, target, "estimated_macro_f1", e["estimate"],
                            f"trusted and CI > {FAIL_DROP} below the reference: fail; drop > {WARN_DROP} or "
                            "untrusted: warn", severity, reason, ci_low=e["ci_low"], ci_high=e["ci_high"]))
    return verdict_table(rows)


def summarise(tables: dict, synthetic: bool) -> str:
    shift, est = tables["shift"], tables["estimates"]
    head = est[(est["method"] == "cbpe") & (est["metric"] == "macro_f1")]
    parts = []
    for _, e in head.iterrows():
        parts.append(f"{e['model']} on {_target(e)}: macro-F1 expected {e['estimate']:.3f} "
                     f"[{e['ci_low']:.3f}, {e['ci_high']:.3f}] (reference {e['reference_value']:.3f})"
                     + ("" if e["trusted"] else ", untrusted"))
    n_trusted = int(shift["trusted"].sum())
    lead = ("SYNTHETIC data. " if synthetic else "") + (f"Label-free estimate on {len(shift)} target(s), "
                                                         f"{n_trusted} trusted. ")
    return lead + "; ".join(parts) + "."
