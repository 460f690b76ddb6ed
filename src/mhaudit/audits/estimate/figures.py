"""The estimate's figures (SVG, no matplotlib): each target's estimated macro-F1 by method with its 95% CI and
the reference, and the agreement-on-the-line panels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mhaudit.report.svg import Axis, Panel, categories, figure, nice_range

__all__ = ["estimate_forest", "agreement_lines"]

COLOURS = {"cbpe": "#0072B2", "atc": "#E69F00", "doc": "#009E73"}
LABELS = {"cbpe": "CBPE", "atc": "ATC", "doc": "DoC"}
SHARE_TICKS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)


def estimate_forest(estimates: pd.DataFrame) -> bytes:
    """One row per model x target; a filled marker when the target is trusted, an open one when not, and the
    metric on the labelled reference as a black tick."""
    f1 = estimates[estimates["metric"] == "macro_f1"].copy()
    f1["row"] = f1["model"] + " seed " + f1["seed"].astype(str) + " → " + f1["dataset"].astype(str)
    rows = list(dict.fromkeys(f1["row"]))
    values = pd.concat([f1["estimate"], f1["ci_low"], f1["ci_high"], f1["reference_value"]]).dropna()
    lo, hi = nice_range(float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    panel = Panel(
        Axis(max(lo, 0.0), min(hi, 1.0), "macro-F1 on the target: estimate and 95% CI, without its labels"),
        categories(rows, reverse=True),
        width=420,
        height=max(60.0, 40.0 * len(rows)),
    )
    at = {row: len(rows) - 1 - i for i, row in enumerate(rows)}
    legend, untrusted = [], False
    for offset, (method, group) in zip((0.22, 0.0, -0.22), f1.groupby("method", sort=False)):
        y = group["row"].map(at).to_numpy(float) + offset
        trusted = group["trusted"].fillna(False).astype(bool).to_numpy()
        for keep, kind in ((trusted, "circle"), (~trusted, "open")):
            part = group[keep]
            panel.points(part["estimate"], y[keep], COLOURS[method], part["ci_low"], part["ci_high"], marker=kind)
        legend.append((LABELS[method], COLOURS[method], "circle"))
        untrusted |= bool((~trusted).any())
    reference = f1.drop_duplicates("row").set_index("row")["reference_value"].reindex(rows)
    panel.points(reference.to_numpy(float), [at[r] for r in rows], "#000", marker="tick")
    legend += [("untrusted target (open)", "#666", "open")] if untrusted else []
    return figure(
        [[panel]],
        "Expected macro-F1 on each target, per method (one model and seed per row)",
        legend + [("reference (labelled)", "#000", "tick")],
    )


def _probit_axis(values: np.ndarray, label: str):
    """A probit axis around the finite `values`, its ticks at SHARE_TICKS inside it, labelled as shares."""
    from scipy.special import ndtri

    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    pad = max(0.05 * (hi - lo), 0.1)
    lo, hi = lo - pad, hi + pad
    return Axis(lo, hi, label, [(float(ndtri(p)), f"{p:g}") for p in SHARE_TICKS if lo <= ndtri(p) <= hi])


def agreement_lines(pairs: pd.DataFrame, ensemble: pd.DataFrame, lines: pd.DataFrame) -> bytes:
    """One panel per target, probit axes labelled as shares: each pair of runs' agreement on the reference (x)
    and the target (y), the fitted line, and each run's reference accuracy against its ALine-D estimate."""
    from scipy.special import ndtri

    def probit(p):
        return ndtri(np.clip(np.asarray(p, dtype=float), 1e-4, 1 - 1e-4))

    fitted = lines.set_index(["platform", "dataset"])
    panels = []
    for i, key in enumerate(pairs.groupby(["platform", "dataset"], sort=False).groups):
        here = pairs[(pairs["platform"] == key[0]) & (pairs["dataset"] == key[1])]
        runs = ensemble[
            (ensemble["platform"] == key[0]) & (ensemble["dataset"] == key[1]) & (ensemble["method"] == "aline-d")
        ]
        points = [
            (probit(here["agreement_reference"]), probit(here["agreement_target"]), "#999"),
            (probit(runs["reference_value"]), probit(runs["estimate"]), "#0072B2"),
        ]
        line = fitted.loc[key]
        trust = "trusted" if line["trusted"] else "untrusted"
        r2 = f"R² {line['r2']:.2f}" if math.isfinite(line.get("r2", math.nan)) else "no line"
        panel = Panel(
            _probit_axis(np.concatenate([p[0] for p in points]), "on the reference (labelled)"),
            _probit_axis(np.concatenate([p[1] for p in points]), "on the target (unlabelled)" if i == 0 else ""),
            width=240,
            height=240,
            title=f"{key[1]}: {r2}, {trust}",
        )
        slope, intercept = line.get("slope", math.nan), line.get("intercept", math.nan)
        if math.isfinite(slope) and math.isfinite(intercept):  # the line where it is inside the box
            xs = np.linspace(panel.x.lo, panel.x.hi, 200)
            ys = slope * xs + intercept
            panel.line(xs, np.where((ys >= panel.y.lo) & (ys <= panel.y.hi), ys, np.nan), "#000", marker="")
        for x, y, colour in points:
            panel.points(x, y, colour)
        panels.append(panel)
    legend = [
        ("agreement of a pair of runs", "#999", "dot"),
        ("a run's accuracy (ALine-D estimate)", "#0072B2", "dot"),
        ("agreement line (probit)", "#000", "line"),
    ]
    return figure(
        [panels[i : i + 4] for i in range(0, len(panels), 4)],
        "Agreement on the line: each grey point one pair of runs, each blue point one run",
        legend,
    )
