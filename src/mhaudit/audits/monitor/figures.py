"""The monitor's figure: three panels over the windows, each point one window's value."""

from __future__ import annotations

import pandas as pd

from mhaudit.audits.cpfe.figures import plt, png_bytes

__all__ = ["window_figures"]


def window_figures(table: pd.DataFrame, positive: str, options) -> dict[str, bytes]:
    t = pd.to_datetime(table["window"]).dt.tz_localize("UTC")
    fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
    share, mean = table[f"predicted_{positive}"], table[f"mean_posterior_{positive}"]
    axes[0].plot(t, share, marker=".", color="#aaaaaa", label=f"share predicted {positive}")
    axes[0].plot(t, mean, marker=".", color="#1f77b4", label=f"mean calibrated P({positive}) (the CUSUM's input)")
    alarm = table["change_alarm"].astype(bool)
    axes[0].scatter(t[alarm], mean[alarm], color="#d62728", zorder=3, s=40, label="change alarm (CUSUM)")
    axes[0].set_ylabel("mean over the window's posts")
    axes[0].legend(fontsize=8, frameon=False)
    axes[1].plot(t, table["psi_score"], marker=".", color="#444444", label="PSI of the scores vs the reference")
    for level, colour, word in ((options.psi_warn, "#ff7f0e", "warn"), (options.psi_fail, "#d62728", "fail")):
        axes[1].axhline(level, color=colour, linestyle="--", linewidth=1, label=f"{word} at {level:.2f}")
    axes[1].set_ylabel("PSI")
    axes[1].legend(fontsize=8, frameon=False)
    trusted = table["estimate_trusted"].astype(bool)
    axes[2].fill_between(t, table["expected_ci_low"], table["expected_ci_high"], color="#1f77b4", alpha=0.2,
                         label="95% CI")
    axes[2].plot(t, table["expected_macro_f1"], color="#1f77b4", label="expected macro-F1 (CBPE)")
    axes[2].scatter(t[~trusted], table.loc[~trusted, "expected_macro_f1"], facecolors="white", edgecolors="#1f77b4",
                    zorder=3, label="untrusted estimate")
    axes[2].set_ylabel("macro-F1, no labels")
    axes[2].legend(fontsize=8, frameon=False)
    axes[2].set_xlabel(f"window start (UTC), windows of {options.window}")
    fig.suptitle("Per window of the stream (each point: one window's posts): prevalence signals, score drift, "
                 "expected macro-F1", fontsize=10)
    fig.autofmt_xdate()
    fig.tight_layout()
    return {"the stream by window": png_bytes(fig)}
