"""Figures for the CPFE report, each drawn from a table that is also in report.json (SVG bytes, no matplotlib:
importing and drawing it cost the audit more than its statistics)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mhaudit.report.svg import COLOURS, Axis, Panel, categories, figure, heatmap as heatmap_panel, nice_range


def with_place(table: pd.DataFrame) -> pd.DataFrame:
    """Add `place`: the data set's name, or 'platform/data set' where one name spans several platforms."""
    spans = table.groupby("dataset")["platform"].nunique()
    ambiguous = table["dataset"].map(spans) > 1
    return table.assign(place=table["dataset"].where(~ambiguous, table["platform"] + "/" + table["dataset"]))


def place_title(places) -> str:
    """The axis title of `with_place`'s names: what the ticks show."""
    return "data set" + (
        " (platform/data set where a name is on several platforms)" if any("/" in str(p) for p in places) else ""
    )


def _undrawn(count: int, what: str) -> str:
    return f"{count} {what} without a value (NaN) not drawn." if count else ""


def auc_degradation(discrimination: pd.DataFrame) -> bytes:
    """Bars of each model's macro AUC per data set (mean +- SD over its seeds, where it has several), the
    reference's marked, chance (0.5) dashed."""
    table = with_place(discrimination)
    stats = table.groupby(["model", "place"])["macro_auc"].agg(["mean", "std"]).reset_index()
    models, places = sorted(stats["model"].unique()), sorted(stats["place"].unique())
    home = set(table.loc[table["is_reference"].astype(bool), "place"]) if "is_reference" in table else set()
    width = 0.8 / max(1, len(models))
    several = discrimination.groupby("model")["seed"].nunique().max() > 1  # else no SD to show
    low = (stats["mean"] - stats["std"].fillna(0)).min()
    axis_lo = min(0.4, nice_range(low, 1.0, 6)[0]) if math.isfinite(low) else 0.4
    panel = Panel(
        categories([f"{p} (reference)" if p in home else p for p in places], place_title(places)),
        Axis(axis_lo, 1.0, "macro one-vs-rest AUC" + (" (mean ± SD over seeds)" if several else "")),
        width=max(260.0, len(places) * (26.0 * len(models) + 40)),
        height=240,
    )
    for i, model in enumerate(models):
        s = stats[stats["model"] == model].set_index("place").reindex(places)
        offsets = np.arange(len(places)) + (i - (len(models) - 1) / 2) * width
        panel.bars(offsets, s["mean"], width * 0.92, COLOURS[i % len(COLOURS)], errors=s["std"], base=axis_lo)
    panel.reference(y=0.5)
    legend = [(m, COLOURS[i % len(COLOURS)], "bar") for i, m in enumerate(models)] + [("chance (0.5)", "#666", "dash")]
    missing = len(models) * len(places) - int(stats["mean"].notna().sum())
    return figure([[panel]], "Macro AUC by model and data set", legend, note=_undrawn(missing, "model-platform pairs"))


def forest(per_class: pd.DataFrame) -> bytes:
    """Each (model, platform, class) AUC of the first seed with its 95% DeLong CI, one row each; 0.5 dashed."""
    per_class = with_place(per_class)
    seed = int(per_class["seed"].min())
    first = per_class[per_class["seed"] == seed]
    rows = first.dropna(subset=["auc"]).reset_index(drop=True)
    names = [" · ".join(map(str, r)) for r in zip(rows["model"], rows["place"], rows["class"])]
    finite = pd.concat([rows["ci_low"], rows["ci_high"], rows["auc"], pd.Series([0.5])]).dropna()
    lo, hi = nice_range(float(finite.min()), float(finite.max()), 6)
    panel = Panel(
        Axis(lo, hi, f"one-vs-rest AUC with 95% DeLong CI (seed {seed})"),
        categories(names, reverse=True),
        width=380,
        height=max(60.0, 17.0 * len(rows)),
    )
    panel.points(rows["auc"], len(rows) - 1 - np.arange(len(rows)), COLOURS[0], rows["ci_low"], rows["ci_high"])
    panel.reference(x=0.5)
    return figure(
        [[panel]],
        "Per-class AUC",
        [("AUC, 95% CI", COLOURS[0], "circle"), ("chance (0.5)", "#666", "dash")],
        note=_undrawn(len(first) - len(rows), "classes"),
    )


def reliability(curves: pd.DataFrame) -> bytes:
    """One row of panels per model (its first seed: the panel says which), one panel per platform."""
    curves = with_place(curves)
    models, places = sorted(curves["model"].unique()), sorted(curves["place"].unique())
    styles = (("before", COLOURS[0], "circle"), ("after", COLOURS[1], "square"))
    grid = []
    for r, model in enumerate(models):
        seed = curves.loc[curves["model"] == model, "seed"].min()
        mine = curves[(curves["model"] == model) & (curves["seed"] == seed)]
        row = []
        for c, place in enumerate(places):
            panel = Panel(
                Axis(0, 1, "confidence (top label)" if r == len(models) - 1 else ""),
                Axis(0, 1, "accuracy" if c == 0 else ""),
                width=200,
                height=200,
                title=f"{model}, seed {seed} · {place}",
            )
            panel.reference(points=((0, 0), (1, 1)))
            for stage, colour, marker in styles:
                line = mine[(mine["place"] == place) & (mine["stage"] == stage) & (mine["n"] > 0)]
                panel.line(line["confidence"].to_numpy(float), line["accuracy"].to_numpy(float), colour, marker)
            row.append(panel)
        grid.append(row)
    legend = [(f"{stage} temperature scaling", colour, marker) for stage, colour, marker in styles]
    return figure(
        grid, "Reliability: accuracy against confidence per bin", legend + [("perfect calibration", "#666", "dash")]
    )


def heatmap(
    table: pd.DataFrame,
    value: str,
    title: str,
    index: str = "place",
    columns: str = "class",
    vmin: float = 0,
    vmax: float = 1,
) -> bytes:
    """The mean of `value` per (index, columns) cell; the title says over which models and seeds."""
    if index == "place":
        table = with_place(table)
    seeds = table.groupby("model")["seed"].nunique() if {"model", "seed"} <= set(table) else pd.Series([1])
    each = f"{seeds.iat[0]} seed{'s' if seeds.iat[0] > 1 else ''} each" if seeds.nunique() == 1 else "their seeds"
    grid = table.groupby([index, columns], sort=False)[value].mean().unstack()
    panel = heatmap_panel(
        grid.to_numpy(dtype=float).tolist(),
        list(grid.index),
        list(grid.columns),
        vmin,
        vmax,
        title,
        x_label=columns,
        y_label=place_title(grid.index) if index == "place" else index,
    )
    models = f"{len(seeds)} model{'s' if len(seeds) > 1 else ''}"
    return figure(
        [[panel]],
        title + (f", mean over {seeds.sum()} runs ({models}, {each})" if seeds.sum() > 1 else ""),
        note="n/a: undefined in every run (the table gives the reason)." if grid.isna().any(axis=None) else "",
    )


def lengths(words: dict[str, np.ndarray]) -> bytes:
    """A histogram of words per example for each platform (share of its examples, log-spaced bins), median
    dashed; one panel each, on the same axes."""
    names = sorted(words)
    logs = {n: np.log10(1 + np.asarray(words[n], dtype=float)) for n in names}
    top = max([float(v.max()) for v in logs.values() if len(v)] + [1.0])
    edges = np.linspace(0, math.ceil(top * 4) / 4, 25)
    shares = {n: np.histogram(logs[n], edges)[0] / max(1, len(logs[n])) * 100 for n in names}
    y_hi = nice_range(0, max([float(s.max()) for s in shares.values()] + [1.0]))[1]
    ticks = [(math.log10(1 + w), f"{w:,}") for w in (0, 10, 100, 1000, 10000, 100000) if math.log10(1 + w) <= edges[-1]]
    grid, per_row = [], 3
    for i, name in enumerate(names):
        median = float(np.median(words[name])) if len(words[name]) else math.nan
        panel = Panel(
            Axis(0, edges[-1], "words per example (log scale)", ticks),
            Axis(0, y_hi, "% of examples" if i % per_row == 0 else ""),
            width=240,
            height=160,
            title=f"{name}\nn = {len(words[name]):,}, median {median:g} words",
        )
        panel.bars((edges[:-1] + edges[1:]) / 2, shares[name], edges[1] - edges[0], COLOURS[i % len(COLOURS)])
        if math.isfinite(median):
            panel.reference(x=math.log10(1 + median))
        grid.append(panel)
    rows = [grid[i : i + per_row] for i in range(0, len(grid), per_row)]
    return figure(rows, "Text length by platform", [("median", "#666", "dash")])
