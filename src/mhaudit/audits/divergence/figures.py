"""Figures for the label-source report, each drawn from a table that is also in report.json (PNG bytes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.figures import forest, plt, png_bytes

__all__ = ["dod_forest", "channel_heatmap", "masking_effects"]


def dod_forest(dod: pd.DataFrame, stratified: pd.DataFrame) -> bytes:
    """DoD per contrast with its 95% bootstrap CI (all data sets), then each platform alone."""
    parts = [("all data sets", dod)]
    if not stratified.empty:
        parts += [(f"{platform} alone", g) for platform, g in stratified.groupby("platform", sort=True)]
    fig, axes = plt.subplots(
        1, len(parts), figsize=(3.2 * len(parts), 0.6 + 0.35 * len(dod)), sharey=True, squeeze=False
    )
    for ax, (title, table) in zip(axes[0], parts):
        table = table.set_index("contrast").reindex(dod["contrast"])
        forest(
            ax, list(dod["contrast"]), table["estimate"], table["ci_low"], table["ci_high"], "DoD (Macro-F1), 95% CI"
        )
        ax.set_title(title, fontsize=9)
    axes[0][0].set_ylabel("contrast X-A")
    fig.tight_layout()
    return png_bytes(fig)


def channel_heatmap(scores: pd.DataFrame) -> bytes:
    """Macro-F1 of each channel (rows) on each data set (columns, human-labelled first)."""
    order = scores.sort_values("side", key=lambda s: s != "human", kind="stable")["dataset"].unique()
    grid = scores.pivot_table(index="channel", columns="dataset", values="macro_f1", sort=False)[list(order)]
    fig, ax = plt.subplots(figsize=(1.5 + 1.3 * grid.shape[1], 0.8 + 0.4 * grid.shape[0]))
    im = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    side = scores.drop_duplicates("dataset").set_index("dataset")["side"]
    ax.set_xticks(
        range(grid.shape[1]), [f"{d}\n({side[d]})" for d in grid.columns], rotation=20, ha="right", fontsize=8
    )
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
    for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7, color="white")
    ax.set_xlabel("data set (label source)")
    ax.set_ylabel("channel")
    ax.set_title("Macro-F1 by channel and data set", fontsize=9)
    fig.colorbar(im, ax=ax)
    return png_bytes(fig)


def masking_effects(masking: pd.DataFrame) -> bytes:
    """Macro-F1 change under each mask against the unmasked run, with its 95% paired-bootstrap CI."""
    masked = masking[masking["mask"] != "none"]
    labels = [f"{r.channel} · {r.mask} · {r.dataset}" for r in masked.itertuples()]
    fig, ax = plt.subplots(figsize=(5.5, 0.7 + 0.35 * len(masked)))
    forest(
        ax,
        labels,
        masked["delta_vs_none"],
        masked["delta_ci_low"],
        masked["delta_ci_high"],
        "Macro-F1 masked minus unmasked, 95% CI",
    )
    ax.set_title("Masking effects (human-labelled data)", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)
