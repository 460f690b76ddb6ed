"""The monitor's figure: three panels over the windows, each point one window's value; windows with fewer than
`min_posts` posts are drawn grey and hollow (not judged), and the PSI axis is scaled to the judged windows. The
first panel is the prevalence: the EM estimate with its 95% CI band beside the mean calibrated probability and the
share predicted; windows where the change detector alarmed are shaded in every panel. With
an ensemble of runs, a fourth panel shows the deployed run's accuracy from the agreement line, with its CI."""

from __future__ import annotations

import pandas as pd

from mhaudit.report.figures import plt, png_bytes

__all__ = ["window_figures"]


def window_figures(table: pd.DataFrame, positive: str, options, deployed: str | None = None) -> dict[str, bytes]:
    """The figure, by name; `deployed`: the deployed run's name, with an ensemble."""
    t = pd.to_datetime(table["window"]).dt.tz_localize("UTC")
    small = (table["n_posts"] < options.min_posts).to_numpy()
    judged = ~small
    ensemble = "ensemble_accuracy" in table.columns
    fig, axes = plt.subplots(4 if ensemble else 3, 1, figsize=(9, 10 if ensemble else 7.5), sharex=True)
    _prevalence_panel(axes[0], t, table, positive, judged, options)
    psi = table["psi_score"]
    axes[1].plot(t[judged], psi[judged], marker=".", color="#444444", label="PSI of the scores vs the reference")
    top = max(options.psi_fail * 1.4, float(psi[judged].max()) * 1.2 if judged.any() else 0.0)
    axes[1].scatter(
        t[small],
        psi[small].clip(upper=top),
        facecolors="white",
        edgecolors="#999999",
        zorder=3,
        label=f"window under {options.min_posts} posts (not judged; clipped to the axis)",
    )
    for level, colour, word in ((options.psi_warn, "#ff7f0e", "warn"), (options.psi_fail, "#d62728", "fail")):
        axes[1].axhline(level, color=colour, linestyle="--", linewidth=1, label=f"{word} at {level:.2f}")
    axes[1].set_ylim(0, top)
    axes[1].set_ylabel("PSI")
    axes[1].legend(fontsize=8, frameon=False)
    _estimate_panel(
        axes[2],
        t,
        table,
        judged,
        "expected_macro_f1",
        "expected",
        "estimate_trusted",
        "#1f77b4",
        ("expected macro-F1 (CBPE)", "untrusted estimate", "macro-F1, no labels"),
    )
    if ensemble:
        _estimate_panel(
            axes[3],
            t,
            table,
            judged,
            "ensemble_accuracy",
            "ensemble",
            "ensemble_trusted",
            "#2ca02c",
            (
                f"{deployed or 'the deployed run'}'s accuracy from the runs' agreement (ALine-D)",
                "agreement line untrusted",
                "accuracy, no labels",
            ),
        )
    axes[-1].set_xlabel(f"window start (UTC), windows of {options.window}")
    for ax in axes[1:]:
        _mark_alarms(ax, t, table, options, label=False)
    fig.suptitle(
        f"Per window of the stream (each point: one window's posts; lines: windows of at least "
        f"{options.min_posts} posts): prevalence of {positive}, score drift, expected macro-F1"
        + (", accuracy from the runs' agreement" if ensemble else ""),
        fontsize=9,
    )
    fig.autofmt_xdate()
    fig.tight_layout()
    return {"the stream by window": png_bytes(fig)}


def _prevalence_panel(ax, t: pd.Series, table: pd.DataFrame, positive: str, judged, options) -> None:
    """The EM estimate of the prevalence with its 95% CI band (the estimate to read), beside the mean calibrated
    probability (the change detector's input, pulled towards the reference's prevalence) and the share predicted."""
    em, low, high = (table[f"{c}_{positive}"] for c in ("em_prior", "em_ci_low", "em_ci_high"))
    if judged.any():
        ax.fill_between(
            t[judged],
            low[judged],
            high[judged],
            color="#d62728",
            alpha=0.18,
            label="95% CI of the EM estimate (bootstrap over the window's posts)",
        )
    ax.plot(
        t[judged],
        em[judged],
        marker="o",
        markersize=4,
        color="#d62728",
        linewidth=2,
        label=f"EM estimate of the prevalence of {positive} (the estimate to read)",
    )
    ax.plot(
        t[judged],
        table[f"mean_posterior_{positive}"][judged],
        marker=".",
        color="#1f77b4",
        linestyle="--",
        label=f"mean calibrated P({positive}): the change detector's input, damped towards the reference",
    )
    ax.plot(
        t[judged],
        table[f"predicted_{positive}"][judged],
        marker=".",
        color="#999999",
        linestyle=":",
        label=f"share of posts predicted {positive}",
    )
    _mark_alarms(ax, t, table, options, label=True)
    shown = pd.concat([high[judged], table[f"predicted_{positive}"][judged]]).max()
    ax.set_ylim(0, 2.1 * shown if pd.notna(shown) and shown > 0 else 1)  # the legend's room above the lines
    ax.set_ylabel(f"share of posts: {positive}")
    ax.legend(fontsize=8, frameon=False, loc="upper left")


def _mark_alarms(ax, t: pd.Series, table: pd.DataFrame, options, *, label: bool) -> None:
    """Shade each window where the change detector alarmed, from its start to the next window's."""
    length = options.window_length
    for i, start in enumerate(t[table["change_alarm"].astype(bool).to_numpy()]):
        ax.axvspan(
            start,
            start + length,
            color="#ffbf00",
            alpha=0.25,
            linewidth=0,
            label="change alarm (CUSUM): the window shaded" if label and i == 0 else None,
        )


def _estimate_panel(
    ax,
    t: pd.Series,
    table: pd.DataFrame,
    judged,
    column: str,
    ci: str,
    trusted: str,
    colour: str,
    labels: tuple[str, str, str],
) -> None:
    """A label-free estimate per judged window (`column`), its 95% CI (`{ci}_ci_low`, `{ci}_ci_high`) as a band;
    windows where `trusted` is false hollow. `labels`: the estimate's, the hollow points' and the y axis's."""
    est, low, high = table[column], table[f"{ci}_ci_low"], table[f"{ci}_ci_high"]
    if judged.any():  # matplotlib cannot fill between no points
        ax.fill_between(t[judged], low[judged], high[judged], color=colour, alpha=0.2, label="95% CI")
    ax.plot(t[judged], est[judged], color=colour, label=labels[0])
    hollow = judged & ~table[trusted].astype(bool).to_numpy()
    ax.scatter(t[hollow], est[hollow], facecolors="white", edgecolors=colour, zorder=3, label=labels[1])
    ax.set_ylabel(labels[2])
    ax.legend(fontsize=8, frameon=False)
