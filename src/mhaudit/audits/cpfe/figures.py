"""Figures for the CPFE report, each drawn from a table that is also in report.json (PNG bytes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.figures import plt, png_bytes


def with_place(table: pd.DataFrame) -> pd.DataFrame:
    """Add `place`: the data set's name, or 'platform/data set' where one name spans several platforms."""
    spans = table.groupby("dataset")["platform"].nunique()
    ambiguous = table["dataset"].map(spans) > 1
    return table.assign(place=table["dataset"].where(~ambiguous, table["platform"] + "/" + table["dataset"]))


def auc_degradation(discrimination: pd.DataFrame) -> bytes:
    stats = (with_place(discrimination).groupby(["model", "place"])["macro_auc"].agg(["mean", "std"])
             .reset_index().rename(columns={"place": "dataset"}))
    models, datasets = sorted(stats["model"].unique()), sorted(stats["dataset"].unique())
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(datasets) * max(1, len(models)) / 2, 3.4))
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        s = stats[stats["model"] == model].set_index("dataset").reindex(datasets)
        ax.bar(np.arange(len(datasets)) + i * width, s["mean"], width, yerr=s["std"].fillna(0), label=model, capsize=3)
    ax.set_xticks(np.arange(len(datasets)) + width * (len(models) - 1) / 2, datasets, rotation=20, ha="right")
    ax.set_ylabel("macro one-vs-rest AUC (mean ± SD over seeds)")
    ax.set_ylim(0.4, 1.0)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def forest(per_class: pd.DataFrame) -> bytes:
    per_class = with_place(per_class)
    rows = per_class[per_class["seed"] == per_class["seed"].min()].dropna(subset=["auc"]).reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6, 0.22 * len(rows) + 1))
    y = np.arange(len(rows))[::-1]
    ax.errorbar(rows["auc"], y, xerr=[rows["auc"] - rows["ci_low"], rows["ci_high"] - rows["auc"]], fmt="o", ms=3)
    ax.set_yticks(y, [f"{r.model} · {r.place} · {r['class']}" for _, r in rows.iterrows()], fontsize=7)
    ax.axvline(0.5, color="red", lw=0.8, ls="--")
    ax.set_xlabel(f"one-vs-rest AUC, 95% DeLong CI (seed {int(per_class['seed'].min())})")
    return png_bytes(fig)


def reliability(curves: pd.DataFrame) -> bytes:
    """One row of panels per model (its first seed: the figure says which), one panel per platform."""
    curves = with_place(curves)
    models = sorted(curves["model"].unique())
    places = sorted(curves["place"].unique())
    fig, axes = plt.subplots(len(models), len(places), figsize=(3 * len(places), 3 * len(models)), squeeze=False)
    for row, model in zip(axes, models):
        seed = curves.loc[curves["model"] == model, "seed"].min()
        mine = curves[(curves["model"] == model) & (curves["seed"] == seed)]
        for ax, place in zip(row, places):
            for stage, style in (("before", "o-"), ("after", "s-")):
                c = mine[(mine["place"] == place) & (mine["stage"] == stage) & (mine["n"] > 0)]
                ax.plot(c["confidence"], c["accuracy"], style, ms=3, label=f"{stage} temperature scaling")
            ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
            ax.set_title(f"{model}, seed {seed} · {place}", fontsize=8)
            ax.set_xlabel("confidence (top-label)")
        row[0].set_ylabel("accuracy")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig, crop=False)


def heatmap(table: pd.DataFrame, value: str, title: str, index: str = "place", columns: str = "class",
            vmin: float = 0, vmax: float = 1) -> bytes:
    if index == "place":
        table = with_place(table)
    runs = table[["model", "seed"]].drop_duplicates().shape[0] if {"model", "seed"} <= set(table) else 1
    grid = table.groupby([index, columns], sort=False)[value].mean().unstack()
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * grid.shape[1], 0.9 + 0.45 * grid.shape[0]))
    im = ax.imshow(grid.to_numpy(dtype=float), vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
    for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7, color="white")
    ax.set_title(title + (f"\nmean over {runs} model-seed runs" if runs > 1 else ""), fontsize=9)
    ax.set_xlabel(columns)
    ax.set_ylabel("platform (data set)" if index == "place" else index)
    fig.colorbar(im, ax=ax)
    return png_bytes(fig)


def lengths(words: dict[str, np.ndarray]) -> bytes:
    names = sorted(words)
    fig, ax = plt.subplots(figsize=(1.5 + 1.1 * len(names), 3))
    ax.violinplot([np.log10(1 + words[n]) for n in names], showmedians=True)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("log10(1 + words per example)")
    return png_bytes(fig)
