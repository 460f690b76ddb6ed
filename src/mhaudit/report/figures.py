"""What every audit's figures share: matplotlib without a display, a figure as PNG bytes, the forest plot."""

from __future__ import annotations

import io

import matplotlib
import numpy as np

matplotlib.use("Agg")  # no display; figures are written to bytes
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "png_bytes", "forest"]


def png_bytes(fig, crop: bool = True) -> bytes:
    """The figure as PNG bytes (110 dpi, tight), then closed; the benchmark's figures use it too.

    crop=False for a figure already laid out by tight_layout: cropping to the tight box costs one more
    layout pass and draw (~40% of a grid of panels) and would only trim the layout's padding."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, **({"bbox_inches": "tight"} if crop else {}))
    plt.close(fig)
    return buffer.getvalue()


def forest(ax, labels: list[str], estimate, low, high, xlabel: str, unit_range: bool = False) -> None:
    """Each estimate (the first at the top) with its interval as a grey error bar. Differences get a dashed red
    line at 0; `unit_range` quantities (kappa, F1) an axis from 0, or just left of the lowest interval, to 1."""
    y = np.arange(len(labels))[::-1]
    estimate, low, high = (np.asarray(v, dtype=float) for v in (estimate, low, high))
    ax.errorbar(
        estimate,
        y,
        xerr=[np.nan_to_num(estimate - low), np.nan_to_num(high - estimate)],
        fmt="o",
        ms=5 if unit_range else 4,
        capsize=3,
        ecolor="grey",
        color="C0",
    )
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel(xlabel)
    if unit_range:
        ax.set_xlim(min(0.0, np.nanmin(low) - 0.05) if np.isfinite(low).any() else 0.0, 1.0)
    else:
        ax.axvline(0, color="red", lw=0.8, ls="--")
