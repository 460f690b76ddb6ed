"""The estimate's figure: each target's estimated macro-F1 by method, with its 95% CI and the reference."""

from __future__ import annotations

import pandas as pd

from mhaudit.report.figures import plt, png_bytes

__all__ = ["estimate_forest"]

COLOURS = {"cbpe": "#1f77b4", "atc": "#ff7f0e", "doc": "#2ca02c"}
LABELS = {"cbpe": "CBPE", "atc": "ATC", "doc": "DoC"}


def estimate_forest(estimates: pd.DataFrame) -> bytes:
    """One row per model x target; a filled marker when the target is trusted, hollow when not."""
    f1 = estimates[estimates["metric"] == "macro_f1"].copy()
    f1["row"] = f1["model"] + " seed " + f1["seed"].astype(str) + " → " + f1["dataset"].astype(str)
    rows = list(dict.fromkeys(f1["row"]))
    fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.45 * len(rows)))
    for offset, (method, group) in zip((-0.2, 0.0, 0.2), f1.groupby("method", sort=False)):
        y = [rows.index(r) + offset for r in group["row"]]
        trusted = group["trusted"].astype(bool).to_numpy()
        ax.errorbar(group["estimate"], y, xerr=[group["estimate"] - group["ci_low"], group["ci_high"] - group["estimate"]],
                    fmt="none", ecolor=COLOURS[method], alpha=0.7)
        ax.scatter(group["estimate"][trusted], [v for v, t in zip(y, trusted) if t], color=COLOURS[method],
                   label=LABELS[method], zorder=3)
        ax.scatter(group["estimate"][~trusted], [v for v, t in zip(y, trusted) if not t], facecolors="white",
                   edgecolors=COLOURS[method], zorder=3, label=f"{LABELS[method]} (untrusted)" if (~trusted).any() else None)
    reference = f1.drop_duplicates("row").set_index("row")["reference_value"]
    ax.scatter(reference.reindex(rows), range(len(rows)), marker="|", s=300, color="black", label="reference (labelled)")
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlabel("macro-F1 on the target: estimate and 95% CI, without its labels")
    ax.set_title("Expected macro-F1 on each target, per method (one model and seed per row)")
    ax.legend(loc="lower left", fontsize=8, frameon=False, bbox_to_anchor=(1.0, 0.0))
    fig.tight_layout()
    return png_bytes(fig)
