"""The plain-words summary at the top of the CPFE report: how the macro-AUC changed off the home platform, what
the flags found, and what temperature scaling repaired."""

from __future__ import annotations

import pandas as pd

from mhaudit.audits.cpfe.summary import ECE_LIMIT


FINDINGS = {  # flag id -> the finding in words, for the summary (the AUC drop's, with its rule: `_drop_rule`)
    "home_auc_at_chance": "macro-AUC no better than chance at home",
    "home_ece_above_0.10": "debiased ECE above 0.10 at home (the ECE verdicts' baseline)",
    "ece_above_0.10": "ECE above 0.10 beyond the reference's",
    "di_below_0.80": "disparate impact under 0.80 (the four-fifths rule)",
    "di_below_0.50": "disparate impact under 0.50",
    "ece_after_ts_above_0.10": "ECE still above 0.10 after temperature scaling",
    "temperature_degenerate": "a degenerate temperature (at its bound, or flattening every probability)",
    "jaccard_below_0.30": "top-10 attribution overlap with the reference under 0.30 (Jaccard)",
    "jaccard_below_0.10": "top-10 attribution overlap with the reference under 0.10 (Jaccard)",
}
SUMMARISED_APART = {"significant_difference"}  # the AUC-drop finding already says it


def _span(values: pd.Series, fmt: str, joiner: str = " to ") -> str:
    """'a to b', or one value when they print the same (one model, one run)."""
    low, high = format(values.min(), fmt), format(values.max(), fmt)
    return low if low == high else f"{low}{joiner}{high}"


def _drop_rule(flag_table: pd.DataFrame) -> str:
    """The AUC-drop rule as the flags applied it (one correction, test and alpha per audit)."""
    said = flag_table.dropna(subset=["rule"]) if "rule" in flag_table else flag_table.iloc[:0]
    return (
        f"with {said['rule'].iat[0]} ({said['test'].iat[0]}; family: each model and seed's reference-vs-target "
        "comparisons)"
        if len(said)
        else "significant after the multiplicity correction"
    )


def plain_words(
    discrimination: pd.DataFrame, flag_table: pd.DataFrame, temperature: pd.DataFrame, reference: str
) -> str:
    """Two to four sentences saying what failed and how badly; non-independent rows are left out."""
    if discrimination.empty:
        return "No predictions to summarise."
    independent = discrimination[~discrimination.get("non_independent", False)]
    targets = independent[~independent["is_reference"].astype(bool)]
    if targets.empty:
        return f"Only the reference platform ({reference}) was scored; nothing to compare."
    if not flag_table.empty and "non_independent" in flag_table:
        flag_table = flag_table[~flag_table["non_independent"].astype(bool)]
    home_ece = (
        flag_table.loc[flag_table["flag"] == "home_ece_above_0.10", "value"].dropna()
        if not flag_table.empty
        else pd.Series(dtype=float)
    )
    ref = independent[independent["is_reference"].astype(bool)]["macro_auc"].dropna()
    delta, pct = targets["delta_macro_auc"].dropna(), targets["delta_auc_pct"].dropna()
    home = (f"macro-AUC {_span(ref, '.3f')}" if len(ref) else "macro-AUC undefined") + (
        f", debiased ECE {_span(home_ece, '.3f')}" if len(home_ece) else ""
    )
    owner, models = ("their", "the models'") if independent["model"].nunique() > 1 else ("its", "the model's")
    change = (
        f"changes by {_span(delta, '+.3f')} on the other platforms ({_span(pct, '+.1f', '% to ')}% of {owner} "
        "home value)"
        if len(delta)
        else "cannot be compared (undefined: see the reason column of the discrimination table)"
    )
    parts = [f"Off {owner} home platform ({reference}: {home}), {models} macro-AUC {change}."]
    raised = flag_table[flag_table["raised"]] if not flag_table.empty else flag_table
    if raised.empty:
        parts.append(
            f"No finding: no macro-AUC drop {_drop_rule(flag_table)}, no ECE above 0.10 beyond the "
            "reference's, no disparate impact under 0.80."
        )
    else:
        raised = raised[~raised["flag"].isin(SUMMARISED_APART)]
        counts, total = _count(raised), _count(flag_table)
        words = {**FINDINGS, "auc_drop_beyond_ci": f"a macro-AUC drop {_drop_rule(flag_table)}"}
        parts.append(
            "Found: "
            + "; ".join(
                f"{words.get(f, f)} in {counts[f]} of {total[f]} "
                + ("runs" if f.startswith("home_") else "target runs")
                for f in counts.index
            )
            + "."
        )
    if not temperature.empty:
        parts += _repair_words(temperature, independent)
    return " ".join(parts)


def _count(flag_table: pd.DataFrame) -> pd.Series:
    """Rows per flag; a baseline flag (home_*) once per run, as every target of the run repeats it."""
    home = flag_table["flag"].str.startswith("home_")
    once = flag_table[home].drop_duplicates(["flag", "model", "seed"])
    return pd.concat([flag_table[~home], once]).groupby("flag").size()


def _runs(rows: pd.DataFrame, most: int = 3) -> str:
    """'m seed 0 on twitter (tss); ...' for at most `most` rows, then how many more."""
    named = [
        f"{m} seed {s} on {p}" + ("" if p == d else f" ({d})")
        for m, s, p, d in zip(rows["model"], rows["seed"], rows["platform"], rows["dataset"])
    ]
    return "; ".join(named[:most]) + (f"; and {len(named) - most} more" if len(named) > most else "")


def _repair_words(temperature: pd.DataFrame, independent: pd.DataFrame) -> list[str]:
    """What temperature scaling repaired, said of the target runs where a usable temperature was fitted only."""
    home = set(
        zip(
            independent.loc[independent["is_reference"].astype(bool), "platform"],
            independent.loc[independent["is_reference"].astype(bool), "dataset"],
        )
    )
    off = temperature[[(p, d) not in home for p, d in zip(temperature["platform"], temperature["dataset"])]]
    if "non_independent" in off:
        off = off[~off["non_independent"].astype(bool)]
    fitted = off["temperature"].notna() if "temperature" in off else pd.Series(False, index=off.index)
    flat = fitted & (off["degenerate"].fillna("").astype(str) != "") if "degenerate" in off else fitted & False
    usable = off[fitted & ~flat]
    left = (
        [f"{int(flat.sum())} degenerate (at the search bound, or flattening every probability): {_runs(off[flat])}"]
        if flat.any()
        else []
    ) + (
        [f"{int((~fitted).sum())} not fitted ({off.loc[~fitted, 'reason'].iat[0]}): {_runs(off[~fitted])}"]
        if (~fitted).any()
        else []
    )
    out = (
        [
            f"Of {len(off)} temperature fits off the reference platform, " + " and ".join(left) + "; they are left "
            "out of what follows" + (", so there is no repair to report." if usable.empty else ".")
        ]
        if left
        else []
    )
    if usable.empty:
        return out
    red, dauc = usable["ece_reduction_pct"].dropna(), usable["delta_auc"].dropna()
    ranged = f"range {_span(red, '.0f', '% to ')}%" if len(red) > 1 else ""
    repaired = int((usable["ece_after"] <= ECE_LIMIT).sum())
    where = (
        f"On the {len(usable)} target run{'s' if len(usable) != 1 else ''} with a usable fit,"
        if left
        else "On the other platforms"
    )
    if len(red) and red.mean() > 0:
        out.append(
            f"{where} temperature scaling cut ECE by {red.mean():.0f}%"
            + (f" on average ({ranged})" if ranged else "")
            + f" and brought it to {ECE_LIMIT:.2f} or under in {repaired} of {len(usable)}, while "
            f"macro-AUC moved by {_span(dauc, '+.3f')}: "
            + (
                "calibration was repaired there"
                if repaired == len(usable)
                else f"calibration was repaired in {repaired} of them"
            )
            + ", discrimination was not."
        )
    elif len(red):  # calibrated already, or too few calibration rows to fit a temperature on
        out.append(
            f"{where} temperature scaling did not lower ECE on average (reduction {red.mean():.0f}%"
            + (f", {ranged}" if ranged else "")
            + ")."
        )
    return out
