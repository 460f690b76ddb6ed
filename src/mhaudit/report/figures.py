"""What every audit's figures share: matplotlib without a display, and a figure as PNG bytes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display; figures are written to bytes
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "png_bytes"]


def png_bytes(fig, crop: bool = True) -> bytes:
    """The figure as PNG bytes (110 dpi, tight), then closed; the benchmark's figures use it too.

    crop=False for a figure already laid out by tight_layout: cropping to the tight box costs one more
    layout pass and draw (~40% of a grid of panels) and would only trim the layout's padding."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, **({"bbox_inches": "tight"} if crop else {}))
    plt.close(fig)
    return buffer.getvalue()
