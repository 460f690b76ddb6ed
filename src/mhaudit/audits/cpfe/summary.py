"""Seed aggregation (mean and SD), the named flags the verdicts are made from, and the report's warnings about the
home runs (the plain-words summary beside them: `summary_words`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.numbers import format_number
from mhaudit.stats.normal import quantile

ECE_LIMIT = 0.10
DI_FOUR_FIFTHS, DI_SEVERE = 0.80, 0.50


def mean_sd(table: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """Long table: one row per group and metric with mean, SD (ddof 1; NaN for one seed) and n_seeds."""
    if table.empty:
        return pd.DataFrame()
    present = [m for m in metrics if m in table.columns]
    long = table.melt(id_vars=by, value_vars=present, var_name="metric").dropna(subset=["value"])
    long["value"] = long["value"].astype(float)
    out = long.groupby([*by, "metric"], sort=False)["value"].agg(mean="mean", sd="std", n_seeds="count")
    return out.reset_index()


KEY = ("model", "seed", "platform", "dataset")


def _select(table: pd.DataFrame, row) -> pd.DataFrame:
    """Rows of `table` for one evaluation group (all four key columns match)."""
    if table.empty:
        return table
    mask = np.ones(len(table), dtype=bool)
    for k in KEY:
        mask &= (table[k] == row[k]).to_numpy()
    return table[mask]


def _pair(significance: pd.DataFrame, target, home) -> tuple[pd.Series, int] | None:
    """The significance row comparing a target group with its reference, and the sign that turns its
    difference into reference minus target."""
    if significance.empty:
        return None
    same = (significance["model"] == target["model"]) & (significance["seed"] == target["seed"])
    for a, b, sign in ((target, home, -1), (home, target, 1)):
        hit = significance[
            same
            & (significance["platform_a"] == a["platform"])
            & (significance["dataset_a"] == a["dataset"])
            & (significance["platform_b"] == b["platform"])
            & (significance["dataset_b"] == b["dataset"])
        ]
        if not hit.empty:
            return hit.iloc[0], sign
    return None


def flags(
    discrimination: pd.DataFrame,
    significance: pd.DataFrame,
    calibration: pd.DataFrame,
    equity: pd.DataFrame,
    temperature: pd.DataFrame | None = None,
    attribution: pd.DataFrame | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Named flags per model, seed and target platform, each with its value and (where it has one) CI: the home
    baselines (macro-AUC at chance, debiased ECE above 0.10), the macro-AUC drop beyond its corrected CI and its
    significance, the ECE above 0.10 beyond the home value, the ECE after temperature scaling and a degenerate
    temperature, the worst class's disparate-impact CI below 0.80 / 0.50, and the top-10 attribution Jaccard below
    0.30 / 0.10. Each flag becomes one verdict; the rules, in the verdicts' names, are the table of docs/cpfe.md,
    "Verdicts and the summary"."""
    rows = []
    jaccards = _mean_jaccards(attribution)
    is_ref = discrimination["is_reference"].astype(bool)
    home_of = {(r["model"], r["seed"]): r for _, r in discrimination[is_ref].iterrows()}
    for _, d in discrimination[~is_ref].iterrows():
        key = {k: d[k] for k in KEY}
        home = home_of[(d["model"], d["seed"])]
        pair = _pair(significance, d, home)
        if pair is not None:
            rows += _drop_flags(key, *pair, alpha)
        cal, home_cal = _select(calibration, d), _select(calibration, home)
        baseline = _home_flags(key, home, home_cal)
        rows.append(baseline[0])
        if not cal.empty and not home_cal.empty:
            rows.append(_ece_flag(key, cal.iloc[0], float(home_cal["ece_debiased"].iat[0])))
        scaled = _select(temperature, d) if temperature is not None else pd.DataFrame()
        if not scaled.empty:  # no temperature fitted (no column where none was anywhere): undefined, with why
            rows += _temperature_flags(key, scaled)
        rows += baseline[1:]
        rows += _disparate_impact_flags(key, _select(equity, d))
        places = ((d["platform"], d["dataset"]), (home["platform"], home["dataset"]))
        jaccard = jaccards.get((d["model"], d["seed"], frozenset(places)))
        if jaccard is not None and places[0] != places[1]:
            rows += _jaccard_flags(key, jaccard)
    return pd.DataFrame(rows)


def _ece_flag(key: dict, c: pd.Series, home_ece: float) -> dict:
    """A target's debiased ECE above the limit and beyond the reference's (`ece_raised`)."""
    return {
        **key,
        "flag": "ece_above_0.10",
        "value": c["ece_debiased"],
        "ci_low": c["ece_ci_low"],
        "ci_high": c["ece_ci_high"],
        "threshold": f"debiased ECE > {ECE_LIMIT} and CI above the reference's {home_ece:.3f}",
        "raised": ece_raised(c["ece_debiased"], c["ece_ci_low"], home_ece),
    }


def _temperature_flags(key: dict, scaled: pd.DataFrame) -> list[dict]:
    """The ECE left after temperature scaling (no repair where the temperature is degenerate), and the
    degenerate temperature itself."""
    after, t = (float(scaled[c].iat[0]) if c in scaled else np.nan for c in ("ece_after", "temperature"))
    why = scaled["degenerate"].fillna("").astype(str).iat[0] if "degenerate" in scaled else ""
    return [
        {
            **key,
            "flag": "ece_after_ts_above_0.10",
            "value": np.nan if why else after,  # no repair
            "why": f"the temperature is degenerate ({why}), so its ECE is no repair"
            if why
            else scaled["reason"].iat[0],
            "threshold": f"ECE after temperature scaling > {ECE_LIMIT}",
            "raised": bool(after > ECE_LIMIT) and not why,
        },
        {
            **key,
            "flag": "temperature_degenerate",
            "value": t,
            "why": why or scaled["reason"].iat[0],
            "threshold": "T inside its search bounds and scaled probabilities not flat",
            "raised": bool(why),
        },
    ]


def _disparate_impact_flags(key: dict, eq: pd.DataFrame) -> list[dict]:
    """The worst class's disparate impact (lowest CI upper end) against the four-fifths and the severe limit."""
    high = eq["di_ci_high"].astype(float) if not eq.empty else pd.Series(dtype=float)
    worst = eq.loc[high.idxmin()] if high.notna().any() else None
    return [
        {
            **key,
            "flag": name,
            "value": float(worst["disparate_impact"]) if worst is not None else np.nan,
            "ci_low": worst["di_ci_low"] if worst is not None else np.nan,
            "ci_high": worst["di_ci_high"] if worst is not None else np.nan,
            "threshold": f"95% CI of DI below {limit}"
            + (f" (class {worst['class']}, CI upper {worst['di_ci_high']:.3f})" if worst is not None else ""),
            "raised": bool(worst is not None and worst["di_ci_high"] < limit),
        }
        for name, limit in (("di_below_0.80", DI_FOUR_FIFTHS), ("di_below_0.50", DI_SEVERE))
    ]


def _jaccard_flags(key: dict, jaccard: float) -> list[dict]:
    """The mean top-10 attribution Jaccard between a target and its reference, against the low and the none limit."""
    return [
        {
            **key,
            "flag": name,
            "value": jaccard,
            "threshold": f"mean top-{JACCARD_K} Jaccard over classes < {limit}",
            "raised": bool(jaccard < limit),
        }
        for name, limit in (("jaccard_below_0.30", JACCARD_LOW), ("jaccard_below_0.10", JACCARD_NONE))
    ]


CORRECTIONS = {"bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}


def _drop_flags(key: dict, p: pd.Series, sign: int, alpha: float) -> list[dict]:
    """The AUC-drop and significance flags of one target, worded from the test that decides them."""
    drop = sign * p["difference"]  # reference minus target
    half = quantile(1 - p["alpha_adjusted"] / 2) * p["se"]
    raised = bool(drop > 0 and p["significant"])
    said = f"{CORRECTIONS[p['correction']]}-adjusted p {format_number(p['p_adjusted'], 'p')}"
    rule = f"{CORRECTIONS[p['correction']]}-adjusted p < {alpha:g}"
    family = f"{p['test']}; family: the {p['family_size']} reference-vs-target comparisons of this model and seed"
    reason = (
        f"macro-AUC lower than at home by {drop:.3f}, {said} < {alpha:g}"
        if raised
        else f"the drop is not significant: {said} >= {alpha:g}"
        if drop > 0
        else f"macro-AUC not lower than at home (drop {drop:.3f}, {said})"
    )
    return [
        {
            **key,
            "flag": "auc_drop_beyond_ci",
            "value": drop,
            "ci_low": drop - half,
            "ci_high": drop + half,
            "threshold": f"drop > 0 with {rule} ({family}); CI at the corrected level {1 - p['alpha_adjusted']:.2%}",
            "raised": raised,
            "reason": reason,
            "rule": rule,
            "test": p["test"],
        },
        {
            **key,
            "flag": "significant_difference",
            "value": p["p_adjusted"],
            "statistic": f"{p['correction']}_p",
            "threshold": f"{rule} ({family})",
            "raised": raised,
            "reason": reason,
        },
    ]


def _home_flags(key: dict, home, calibration: pd.DataFrame) -> list[dict]:
    """A target's baseline: the reference's macro-AUC, where its drop starts, and ECE, its ECE flag's baseline."""
    rows = [
        {
            **key,
            "flag": "home_auc_at_chance",
            "value": home["macro_auc"],
            "threshold": "the reference's macro-AUC > 0.5 (chance)",
            "raised": bool(home["macro_auc"] <= 0.5),
        }
    ]
    if not calibration.empty:
        c = calibration.iloc[0]
        rows.append(
            {
                **key,
                "flag": "home_ece_above_0.10",
                "value": c["ece_debiased"],
                "ci_low": c["ece_ci_low"],
                "ci_high": c["ece_ci_high"],
                "threshold": f"the reference's debiased ECE <= {ECE_LIMIT}",
                "raised": bool(c["ece_debiased"] > ECE_LIMIT),
            }
        )
    return rows


JACCARD_K, JACCARD_LOW, JACCARD_NONE = 10, 0.30, 0.10


def ece_raised(ece_debiased: float, ci_low: float, home_ece_debiased: float) -> bool:
    """The ece_above_0.10 rule on one target: debiased ECE above the limit and the low end of its
    bias-corrected CI above home's debiased ECE (benchmarks/ece_false_alarm.py measures its false alarms)."""
    return bool(ece_debiased > ECE_LIMIT and ci_low > home_ece_debiased)


def _mean_jaccards(attribution: pd.DataFrame | None) -> dict[tuple, float]:
    """(model, seed, {(platform, data set), (platform, data set)}) -> mean over classes of the top-K Jaccard."""
    if attribution is None or attribution.empty:
        return {}
    top = attribution[attribution["k"] == JACCARD_K].dropna(subset=["jaccard"])
    pair = [
        frozenset(((pa, da), (pb, db)))
        for pa, da, pb, db in zip(top["platform_a"], top["dataset_a"], top["platform_b"], top["dataset_b"])
    ]
    means = top["jaccard"].astype(float).groupby([top["model"], top["seed"], pair]).mean()
    return means.to_dict()


def home_notes(discrimination: pd.DataFrame, calibration: pd.DataFrame, temperature: pd.DataFrame) -> list[str]:
    """Warnings for the report's notes: a run not calibrated at home, or with no temperature fitted there."""
    notes = []
    for _, h in discrimination[discrimination["is_reference"].astype(bool)].iterrows():
        run, cal, scaled = f"{h['model']} seed {h['seed']}", _select(calibration, h), _select(temperature, h)
        if not cal.empty and cal["ece_debiased"].iat[0] > ECE_LIMIT:
            notes.append(
                f"warning: {run} is not calibrated at home ({h['platform']}: debiased ECE "
                f"{cal['ece_debiased'].iat[0]:.3f} > {ECE_LIMIT}), so the ECE verdicts compare each target "
                "with a miscalibrated reference. A model fits its home temperature on the validation rows "
                "(split 'val') of the platform it is trained on; trained without them it fits none."
            )
        if not scaled.empty and isinstance(scaled["reason"].iat[0], str) and scaled["reason"].iat[0]:
            notes.append(f"warning: no temperature was fitted on the reference for {run}: {scaled['reason'].iat[0]}.")
    return notes
