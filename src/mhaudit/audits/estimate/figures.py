"""The estimate's figure: each target's estimated macro-F1 by method, with its 95% CI and the reference."""

from __future__ import annotations

import pandas as pd

from mhaudit.report.figures import plt, png_bytes

__all__ = ["estimate_forest"]

COLOURS = {"cbpe": "#1f77b4", "atc": "#ff7f0e", "doc": "#2ca02c"}
LABELS = {"cbpe": "CBPE", "atc": "ATC", "doc": "DoC"}
SHARE_TICKS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)


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


def agreement_lines(pairs: pd.DataFrame, ensemble: pd.DataFrame, lines: pd.DataFrame) -> bytes:
    """One panel per target, probit axes labelled as shares: each pair of runs' agreement on the reference (x)
    and the target (y), the fitted line, and each run's reference accuracy against its ALine-D estimate."""
    import numpy as np
    from scipy.special import ndtri

    targets = list(pairs.groupby(["platform", "dataset"], sort=False).groups)
    n = len(targets)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n + 0.6, 3.8), squeeze=False)
    fitted = lines.set_index(["platform", "dataset"])
    for ax, key in zip(axes[0], targets):
        here = pairs[(pairs["platform"] == key[0]) & (pairs["dataset"] == key[1])]
        runs = ensemble[(ensemble["platform"] == key[0]) & (ensemble["dataset"] == key[1])
                        & (ensemble["method"] == "aline-d")]
        line = fitted.loc[key]
        clip = lambda p: ndtri(np.clip(np.asarray(p, dtype=float), 1e-4, 1 - 1e-4))  # noqa: E731
        ax.scatter(clip(here["agreement_reference"]), clip(here["agreement_target"]), s=12, color="#999999",
                   label="agreement of a pair of runs")
        ax.scatter(clip(runs["reference_value"]), clip(runs["estimate"]), s=18, color="#1f77b4",
                   label="a run's accuracy (ALine-D estimate)", zorder=3)
        xs = np.linspace(*ax.get_xlim(), 50)
        ax.plot(xs, line["slope"] * xs + line["intercept"], color="black", linewidth=1,
                label="agreement line (probit)")
        for limits, set_ticks in ((ax.get_xlim(), ax.set_xticks), (ax.get_ylim(), ax.set_yticks)):
            shares = [p for p in SHARE_TICKS if limits[0] <= ndtri(p) <= limits[1]]
            set_ticks(ndtri(shares), [f"{p:g}" for p in shares])  # probit axes, labelled as shares
        trust = "trusted" if line["trusted"] else "untrusted"
        ax.set_title(f"{key[1]}: R² {line['r2']:.2f}, {trust}", fontsize=9)
        ax.set_xlabel("on the reference (labelled)")
    axes[0][0].set_ylabel("on the target (unlabelled)")
    axes[0][-1].legend(loc="lower right", fontsize=7, frameon=False)
    fig.suptitle("Agreement on the line: each grey point one pair of runs, each blue point one run", fontsize=10)
    fig.tight_layout()
    return png_bytes(fig)
