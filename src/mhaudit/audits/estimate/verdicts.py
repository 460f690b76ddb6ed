"""The verdict rows and the plain-words summary of the label-free estimate (the trust rule: stats.pair_estimate).

Verdict rows: subject = "<model> seed <n>", target = the platform (and data set), axis "expected on the
target, before labels". The headline is CBPE's macro-F1; it fails when trusted and its whole CI lies more
than 0.10 below the reference's macro-F1, warns when trusted with a point drop over 0.05, and warns when
untrusted (an estimate outside its assumptions is not a finding either way). One row per target: the
diagnostic's numbers are in the shift table and, where they fail, in the reason. With an ensemble, each run also
gets a row on ALine-D's accuracy, graded the same way when the agreement line is trusted (stats.agreement_line).
"""

from __future__ import annotations

import pandas as pd

from mhaudit.attribution.stability import place_name
from mhaudit.report.result import verdict, verdict_table

__all__ = ["AXIS", "estimate_verdicts", "summarise"]

AXIS = "expected on the target, before labels"
FAIL_DROP, WARN_DROP = 0.10, 0.05
HEADLINE_ENSEMBLE = "aline-d"  # fixed before the real transfers were scored: Baek et al.'s better of the two


def _target(row) -> str:
    return place_name(row["platform"], row["dataset"])


def estimate_verdicts(tables: dict, options) -> pd.DataFrame:
    rows = []
    if "estimates" in tables:  # CBPE's macro-F1, graded when the shift diagnostic trusts the target
        est = tables["estimates"]
        rows += _graded(
            est[(est["method"] == "cbpe") & (est["metric"] == "macro_f1")],
            tables["shift"],
            ["model", "seed", "platform", "dataset"],
            "estimated_macro_f1",
            "macro-F1",
            f"trusted and CI > {FAIL_DROP} below the reference: fail; drop > {WARN_DROP} or untrusted: warn",
            "estimate untrusted",
        )
    ensemble = tables.get("ensemble", pd.DataFrame())
    if not ensemble.empty:  # ALine-D's accuracy, graded when the agreement line is trusted
        rows += _graded(
            ensemble[ensemble["method"] == HEADLINE_ENSEMBLE],
            tables["agreement_line"],
            ["platform", "dataset"],
            "estimated_accuracy",
            "accuracy",
            f"ALine-D; trusted and CI > "
            f"{FAIL_DROP} below the reference: fail; drop > {WARN_DROP} or untrusted line: warn",
            "agreement line untrusted",
        )
    return verdict_table(rows)


def _grade(drop: float, ci_high: float, reference: float, metric: str) -> tuple[str, str]:
    """pass, warn or fail of a trusted estimate by its drop from the reference."""
    if reference - ci_high > FAIL_DROP:
        return "fail", f"{metric} expected {drop:.3f} below the reference, its CI wholly > {FAIL_DROP} below"
    if drop > WARN_DROP:
        return "warn", f"{metric} expected {drop:.3f} below the reference ({reference:.3f})"
    return "pass", f"{metric} expected within {WARN_DROP} of the reference ({reference:.3f})"


def _graded(
    estimates: pd.DataFrame,
    trust: pd.DataFrame,
    keys: list[str],
    statistic: str,
    metric: str,
    threshold: str,
    untrusted: str,
) -> list:
    """One row per run and target: the estimate graded by its drop from the reference where its row of `trust`
    (found by `keys`) is trusted, else a warning that says why not."""
    trust = trust.set_index(keys)
    rows = []
    for _, e in estimates.iterrows():
        t = trust.loc[tuple(e[keys])]
        severity, reason = (
            _grade(e["reference_value"] - e["estimate"], e["ci_high"], e["reference_value"], metric)
            if t["trusted"]
            else ("warn", f"{untrusted}: {t['untrusted_because']}")
        )
        rows.append(
            verdict(
                "estimate",
                AXIS,
                f"{e['model']} seed {e['seed']}",
                _target(e),
                statistic,
                e["estimate"],
                threshold,
                severity,
                reason,
                ci_low=e["ci_low"],
                ci_high=e["ci_high"],
            )
        )
    return rows


def summarise(tables: dict, verdicts: pd.DataFrame, synthetic: bool) -> str:
    """The answer first, one line each, to fit a screen: the ensemble's accuracy from the agreement line per target,
    then CBPE's macro-F1 per model and target with its seeds folded (mean ± SD over seeds, as the scorecard folds
    them), each line with its verdicts and how many of its runs are trusted."""
    lines = []
    if not tables.get("agreement_line", pd.DataFrame()).empty:
        lines += [_ensemble_line(line, tables["ensemble"], verdicts) for _, line in tables["agreement_line"].iterrows()]
    if "estimates" in tables:
        est = tables["estimates"]
        head = est[(est["method"] == "cbpe") & (est["metric"] == "macro_f1")]
        lines.append(
            f"Per run, CBPE's macro-F1 without the target's labels ({int(head['trusted'].sum())} of "
            f"{len(head)} trusted):"
        )
        for (model, target), runs in head.groupby(["model", head.apply(_target, axis=1)], sort=False):
            counts = _counts(verdicts, "estimated_macro_f1", runs, target)
            lines.append(f"- {model} on {target}: {_folded(runs)}; {counts}")
    return ("SYNTHETIC data. " if synthetic else "") + "\n".join(lines)


def _counts(verdicts: pd.DataFrame, statistic: str, runs: pd.DataFrame, target: str) -> str:
    """The runs' verdicts on `statistic`, worst first: "1 fail, 4 warn"."""
    subjects = [f"{m} seed {s}" for m, s in zip(runs["model"], runs["seed"])]
    found = verdicts.loc[
        (verdicts["statistic"] == statistic) & (verdicts["target"] == target) & verdicts["subject"].isin(subjects),
        "severity",
    ]
    return ", ".join(f"{n} {s}" for s in ("fail", "warn", "undefined", "pass") if (n := int((found == s).sum())))


def _folded(runs: pd.DataFrame) -> str:
    """One run: its estimate and CI; several seeds: mean ± SD (ddof 1) and how many are trusted."""
    trusted = int(runs["trusted"].sum())
    if len(runs) == 1:
        r = runs.iloc[0]
        return (
            f"seed {r['seed']}, {r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (reference "
            f"{r['reference_value']:.3f}), " + ("trusted" if trusted else "untrusted")
        )
    return (
        f"{len(runs)} seeds, {runs['estimate'].mean():.3f} ± {runs['estimate'].std(ddof=1):.3f} (reference "
        f"{runs['reference_value'].mean():.3f}), {trusted} of {len(runs)} trusted"
    )


def _ensemble_line(line, ens: pd.DataFrame, verdicts: pd.DataFrame) -> str:
    """One target's answer from the agreement line: the runs' accuracy range and verdicts, and the line's trust."""
    if not line["dataset"]:
        return f"Ensemble of {int(line['n_runs'])} runs: no agreement line ({line['untrusted_because']})."
    head = f"Ensemble of {int(line['n_runs'])} runs on {_target(line)}"
    here = (
        ens
        if ens.empty
        else ens[
            (ens["platform"] == line["platform"])
            & (ens["dataset"] == line["dataset"])
            & (ens["method"] == HEADLINE_ENSEMBLE)
        ]
    )
    if here.empty:
        return f"{head}: no agreement line ({line['untrusted_because']})."
    trust = "trusted" if line["trusted"] else f"untrusted: {line['untrusted_because']}"
    return (
        f"{head}: accuracy expected {here['estimate'].min():.3f}–{here['estimate'].max():.3f} over the runs "
        f"(reference {here['reference_value'].min():.3f}–{here['reference_value'].max():.3f}), "
        f"{_counts(verdicts, 'estimated_accuracy', here, _target(line))}; agreement line {trust}."
    )
