"""The monitor's figure: three panels over the windows, each point one window's value; windows with fewer than
`min_posts` posts are drawn grey and hollow (not judged), and the PSI axis is scaled to the judged windows. With
an ensemble of runs, a fourth panel shows the deployed run's accuracy from the agreement line, with its CI."""

from __future__ import annotations

import pandas as pd

from mhaudit.report.figures import plt, png_bytes

__all__ = ["window_figures"]


def window_figures(table: pd.DataFrame, positive: str, options, deployed: str | None = None) -> dict[str, bytes]:
    """The figure, by name; `deployed`: the deployed run's name, with an ensemble."""
    t = pd.to_datetime(table["window"]).dt.tz_localize("UTC")
    small = (table["n_posts"] < options.min_posts).to_numpy()
    ensemble = "ensemble_accuracy" in table.columns
    fig, axes = plt.subplots(4 if ensemble else 3, 1, figsize=(9, 10 if ensemble else 7.5), sharex=True)
    share, mean = table[f"predicted_{positive}"], table[f"mean_posterior_{positive}"]
    axes[0].plot(t[~small], share[~small], marker=".", color="#aaaaaa", label=f"share predicted {positive}")
    axes[0].plot(t[~small], mean[~small], marker=".", color="#1f77b4",
                 label=f"mean calibrated P({positive}) (the CUSUM's input)")
    alarm = table["change_alarm"].astype(bool)
    axes[0].scatter(t[alarm], mean[alarm], color="#d62728", zorder=3, s=40, label="change alarm (CUSUM)")
    axes[0].set_ylabel("mean over the window's posts")
    axes[0].legend(fontsize=8, frameon=False)
    psi = table["psi_score"]
    axes[1].plot(t[~small], psi[~small], marker=".", color="#444444", label="PSI of the scores vs the reference")
    top = max(options.psi_fail * 1.4, float(psi[~small].max()) * 1.2 if (~small).any() else 0.0)
    axes[1].scatter(t[small], psi[small].clip(upper=top), facecolors="white", edgecolors="#999999", zorder=3,
                    label=f"window under {options.min_posts} posts (not judged; clipped to the axis)")
    for level, colour, word in ((options.psi_warn, "#ff7f0e", "warn"), (options.psi_fail, "#d62728", "fail")):
        axes[1].axhline(level, color=colour, linestyle="--", linewidth=1, label=f"{word} at {level:.2f}")
    axes[1].set_ylim(0, top)
    axes[1].set_ylabel("PSI")
    axes[1].legend(fontsize=8, frameon=False)
    trusted = table["estimate_trusted"].astype(bool)
    judged = ~small
    if judged.any():  # matplotlib cannot fill between no points
        axes[2].fill_between(t[judged], table["expected_ci_low"][judged], table["expected_ci_high"][judged],
                             color="#1f77b4", alpha=0.2, label="95% CI")
    axes[2].plot(t[judged], table["expected_macro_f1"][judged], color="#1f77b4", label="expected macro-F1 (CBPE)")
    hollow = judged & ~trusted.to_numpy()
    axes[2].scatter(t[hollow], table.loc[hollow, "expected_macro_f1"], facecolors="white", edgecolors="#1f77b4",
                    zorder=3, label="untrusted estimate")
    axes[2].set_ylabel("macro-F1, no labels")
    axes[2].legend(fontsize=8, frameon=False)
    if ensemble:
        _ensemble_panel(axes[3], t, table, judged, deployed or "the deployed run")
    axes[-1].set_xlabel(f"window start (UTC), windows of {options.window}")
    fig.suptitle(f"Per window of the stream (each point: one window's posts; lines: windows of at least "
                 f"{options.min_posts} posts): prevalence signals, score drift, expected macro-F1"
                 + (", accuracy from the runs' agreement" if ensemble else ""), fontsize=9)
    fig.autofmt_xdate()
    fig.tight_layout()
    return {"the stream by window": png_bytes(fig)}


def _ensemble_panel(ax, t: pd.Series, table: pd.DataFrame, judged, deployed: str) -> None:
    """The deployed run's accuracy from the agreement line (ALine-D) per judged window, its 95% CI as a band;
    windows whose line is untrusted hollow."""
    est, low, high = table["ensemble_accuracy"], table["ensemble_ci_low"], table["ensemble_ci_high"]
    if judged.any():
        ax.fill_between(t[judged], low[judged], high[judged], color="#2ca02c", alpha=0.2, label="95% CI")
    ax.plot(t[judged], est[judged], color="#2ca02c", label=f"{deployed}'s accuracy from the runs' agreement (ALine-D)")
    hollow = judged & ~table["ensemble_trusted"].astype(bool).to_numpy()
    ax.scatter(t[hollow], est[hollow], facecolors="white", edgecolors="#2ca02c", zorder=3,
               label="agreement line untrusted")
    ax.set_ylabel("accuracy, no labels")
    ax.legend(fontsize=8, frameon=False)
