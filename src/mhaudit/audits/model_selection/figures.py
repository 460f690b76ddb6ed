"""The report's figures, each drawn from its table: the protocol effect on F1, the efficiency frontier and
the recall / precision trade-off."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.figures import plt, png_bytes


def figure_protocol_effect(effect: pd.DataFrame) -> bytes:
    """Bars: CV minus holdout F1 per model, one group per label source and CV protocol."""
    table = effect[effect["metric"] == "f1"]
    groups = list(dict.fromkeys(zip(table["scored_against"], table["cv"])))
    models = list(dict.fromkeys(table["model"]))
    fig, ax = plt.subplots(figsize=(1.5 + 0.5 * len(models) * len(groups), 3.4))
    width = 0.8 / max(len(groups), 1)
    for i, (source, cv) in enumerate(groups):
        part = table[(table["scored_against"] == source) & (table["cv"] == cv)].set_index("model").reindex(models)
        ax.bar(np.arange(len(models)) + i * width, part["difference"], width, label=f"{cv} vs holdout, {source}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(models)) + width * (len(groups) - 1) / 2, models, rotation=20, ha="right")
    ax.set_ylabel("F1: CV mean − holdout")
    ax.legend(fontsize=7)
    return png_bytes(fig)


def figure_efficiency(efficiency: pd.DataFrame) -> bytes:
    """F1 against training time (log scale), one panel per protocol; frontier models joined by a line."""
    protocols = list(dict.fromkeys(efficiency["protocol"]))
    fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 3.4), squeeze=False)
    for ax, protocol in zip(axes[0], protocols):
        part = efficiency[efficiency["protocol"] == protocol]
        ax.scatter(part["train_seconds"], part["f1"], c=np.where(part["on_frontier"], "C3", "C0"))
        for _, row in part.iterrows():
            ax.annotate(
                row["model"], (row["train_seconds"], row["f1"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
        front = part[part["on_frontier"]].sort_values("train_seconds")
        ax.plot(front["train_seconds"], front["f1"], color="C3", lw=0.8)
        seconds = part["train_seconds"]
        if (seconds > 0).all() and seconds.max() > 10 * seconds.min():  # log only where times span decades
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel("training time per fold (s)")
        ax.set_ylabel("F1 (training labels)")
        ax.set_title(protocol, fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def figure_tradeoff(tradeoff: pd.DataFrame) -> bytes:
    """Recall against precision, one panel per label source, one marker per protocol, F1 iso-lines."""
    sources = list(dict.fromkeys(tradeoff["scored_against"]))
    protocols = list(dict.fromkeys(tradeoff["protocol"]))
    markers = "osD^v<>"
    fig, axes = plt.subplots(1, len(sources), figsize=(4.2 * len(sources), 3.8), squeeze=False)
    grid = np.linspace(0.01, 1, 200)
    for ax, source in zip(axes[0], sources):
        for f in (0.2, 0.4, 0.6, 0.8):
            r = f * grid / (2 * grid - f)
            ok = (r > 0) & (r <= 1)
            ax.plot(grid[ok], r[ok], color="lightgrey", lw=0.7)
        part = tradeoff[tradeoff["scored_against"] == source]
        for j, protocol in enumerate(protocols):
            sub = part[part["protocol"] == protocol]
            ax.scatter(sub["precision"], sub["recall"], marker=markers[j % len(markers)], label=protocol)
            for _, row in sub.iterrows():
                ax.annotate(
                    row["model"],
                    (row["precision"], row["recall"]),
                    fontsize=6,
                    xytext=(2, 2),
                    textcoords="offset points",
                )
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("precision")
        ax.set_ylabel("recall")
        ax.set_title(f"scored against {source}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


__all__ = ["figure_efficiency", "figure_protocol_effect", "figure_tradeoff"]
