"""The divergence audit in plain words: what each label source rewards, and how sure we are."""

from __future__ import annotations

import pandas as pd

from mhaudit.audits.divergence.design import Design

__all__ = ["summarise"]


def _ci(row) -> str:
    return f"{row['estimate']:+.3f} [95% CI {row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


def _p(row) -> str:
    q = row.get("q")
    return f"p = {row['p']:.2g}" + (f", FDR q = {q:.2g}" if q is not None and q == q else "")


def summarise(tables: dict[str, pd.DataFrame], design: Design, n_tests: int, notes: list[str]) -> str:
    human, auto = ", ".join(design.human), ", ".join(design.auto)
    lines = [
        f"Channels were fitted on {len(design.train):,} training rows of {design.train_dataset}; human-labelled: "
        f"{human}; auto-labelled: {auto}. Positive class: {design.positive}."
    ]
    dod = tables.get("dod", pd.DataFrame())
    # The headline contrast: style (C, the paper's principal channel), else structure + style, else structure.
    rows = {r["contrast"]: r for _, r in dod.iterrows()} if not dod.empty else {}
    style = next((rows[c] for c in ("C-A", "BC-A", "B-A") if c in rows), None)
    if style is not None:
        x = style["contrast"].split("-")[0]
        significant = style["ci_low"] > 0
        h, a = style["human_delta"], style["auto_delta"]
        if h > 0:
            lines.append(
                f"Human labels reward style over lexicon: on human data channel {x} scores {h:+.3f} "
                f"Macro-F1 against lexical A; on auto data {a:+.3f}"
                + ("; auto labels the reverse" if a < 0 else "")
                + "."
            )
        else:
            lines.append(
                f"On human data channel {x} scores {h:+.3f} Macro-F1 against lexical A; on auto data {a:+.3f}."
            )
        lines.append(
            f"Degree of Divergence DoD_{x}-A = {_ci(style)} ({_p(style)}): "
            + (
                "the label sources reward different evidence."
                if significant
                else "no divergence shown at the 95% level."
            )
        )
        perm_min = style.get("permutation_min_p")
        if perm_min is not None and perm_min > 0.05:
            lines.append(
                f"With {len(design.human)} + {len(design.auto)} data sets the regime permutation cannot "
                f"go below p = {perm_min:.3g} (observed {style['permutation_p']:.3g}); "
                "label source is confounded with domain, so read the per-data-set differences."
            )
    ac = dod[dod["contrast"] == "AC-A"] if not dod.empty else dod
    inter = tables.get("interference", pd.DataFrame())
    if not inter.empty:
        row = inter[(inter["scope"] == "human")].iloc[0]
        lines.append(f"Lexical interference on human labels: adding A to C changes Macro-F1 by {_ci(row)} ({_p(row)}).")
    if not ac.empty:
        lines.append(
            f"DoD_AC-A = {_ci(ac.iloc[0])}: a negative value means lexical augmentation costs more on human "
            "labels than on auto labels."
        )
    plat = tables.get("dod_platform_stratified", pd.DataFrame())
    if style is not None and not plat.empty:
        same = plat[plat["contrast"] == style["contrast"]]
        for _, r in same.iterrows():
            lines.append(f"On {r['platform']} alone ({r['human']} vs {r['auto']}): {style['contrast']} DoD = {_ci(r)}.")
    if "repeats" in dod.columns:
        lines.append(
            f"Estimates, CIs and p-values of the DoD pool {int(dod['repeats'].iat[0])} repeated fits "
            "(training variance included)."
        )
    lines.append(f"Benjamini-Hochberg FDR across {n_tests} tests.")
    lines.extend(notes)
    return " ".join(lines)
