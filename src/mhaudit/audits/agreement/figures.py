"""Figures for the agreement report, each drawn from a table of its section (PNG bytes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report.figures import forest, plt, png_bytes

__all__ = ["kappa_forest", "weak_metrics", "confusion", "combined_kappa", "source_accuracy"]


def kappa_forest(pairs: pd.DataFrame, metrics: pd.DataFrame, weak: str, models: pd.DataFrame | None = None) -> bytes:
    """Cohen's kappa with its CI: each annotator pair, the weak labeler and each model against the reference."""
    rows = [metrics.set_index("metric").loc["kappa"].rename(weak)]
    if models is not None and not models.empty:
        rows += [m.rename(m["labeler"]) for _, m in models[models["metric"] == "kappa"].iterrows()]
    labels = [f"{a} vs {b}" for a, b in zip(pairs["annotator_a"], pairs["annotator_b"])]
    labels += [f"{r.name} vs reference" for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 1.3 + 0.45 * len(labels)))
    column = lambda pair, row: [*pairs[pair], *(r[row] for r in rows)]  # noqa: E731
    forest(
        ax,
        labels,
        column("kappa", "estimate"),
        column("ci_low", "ci_low"),
        column("ci_high", "ci_high"),
        "Cohen's kappa, bootstrap CI",
        unit_range=True,
    )
    ax.set_ylim(-0.9, len(labels) - 0.4)
    for edge in (0.41, 0.61):  # Landis & Koch, the verdicts' bands
        ax.axvline(edge, color="grey", lw=0.7, ls=":")
    for centre, name in ((0.51, "moderate"), (0.805, "substantial")):
        ax.text(centre, -0.85, name, fontsize=7, ha="center", va="bottom", color="grey")
    ax.set_title("Agreement beyond chance", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def weak_metrics(metrics: pd.DataFrame, weak: str) -> bytes:
    """Precision, recall, F1 and macro-F1 of the weak labeler against the reference, with CIs."""
    shown = metrics.set_index("metric").loc[["precision", "recall", "f1", "macro_f1", "specificity"]]
    fig, ax = plt.subplots(figsize=(5.5, 2.6))
    forest(
        ax,
        list(shown.index),
        shown["estimate"],
        shown["ci_low"],
        shown["ci_high"],
        "estimate, bootstrap CI",
        unit_range=True,
    )
    ax.set_title(f"{weak} against the reference labels (positive class = 1)", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def confusion(table: pd.DataFrame, weak: str) -> bytes:
    """The 2 x 2 counts, rows the reference, columns the weak labeler."""
    body = table[table["reference"] != "total"].set_index("reference")[["weak_0", "weak_1"]]
    counts = body.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    ax.imshow(counts, cmap="Blues")
    for (i, j), v in np.ndenumerate(counts):
        ax.text(
            j, i, f"{int(v)}", ha="center", va="center", fontsize=10, color="white" if v > counts.max() / 2 else "black"
        )
    ax.set_xticks([0, 1], ["0", "1"])
    ax.set_yticks([0, 1], ["0", "1"])
    ax.set_xlabel(f"{weak} label")
    ax.set_ylabel("reference label")
    ax.set_title("Confusion matrix (items)", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def combined_kappa(table: pd.DataFrame) -> bytes:
    """Cohen's kappa with its CI of each source, their majority vote and the combined labeler (the rows of
    `combined_vs_reference`), with the Landis & Koch bands the verdicts use."""
    fig, ax = plt.subplots(figsize=(6.0, 1.3 + 0.4 * len(table)))
    forest(
        ax,
        list(table["labeler"]),
        table["kappa"],
        table["kappa_lo"],
        table["kappa_hi"],
        "Cohen's kappa against the reference, bootstrap CI",
        unit_range=True,
    )
    for edge in (0.41, 0.61):
        ax.axvline(edge, color="grey", lw=0.7, ls=":")
    ax.set_title("Sources, their majority vote and the combined labeler (abstention = 0)", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def source_accuracy(accuracy: pd.DataFrame) -> bytes:
    """Each source's accuracy as the label model estimated it without labels (a cross) beside the measured one with
    its Wilson interval (a dot and bar): the distance between them is how far the label model was wrong."""
    fig, ax = plt.subplots(figsize=(6.0, 1.6 + 0.4 * len(accuracy)))
    forest(
        ax,
        list(accuracy["source"]),
        accuracy["measured"],
        accuracy["measured_lo"],
        accuracy["measured_hi"],
        "accuracy of the source's votes",
        unit_range=True,
    )
    y = np.arange(len(accuracy))[::-1]
    ax.plot(accuracy["estimated"], y, "x", color="C3", ms=7, label="estimated without labels")
    ax.plot([], [], "o", color="C0", label="measured on the reference (Wilson CI)")
    ax.set_ylim(-1.2, len(accuracy) - 0.4)  # a free band at the foot for the legend
    ax.legend(fontsize=7, loc="lower center", ncol=2, frameon=False)
    ax.set_title("Source accuracy: estimated vs measured", fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)
