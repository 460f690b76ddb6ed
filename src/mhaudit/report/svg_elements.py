"""The small pieces the SVG figures of `report.svg` are made of: escaped text and numbers at one decimal, text
widths estimated without a font engine (for DejaVu Sans, the widest common sans-serif, so margins err wide) and
wrapping, nice ticks, the viridis colour scale, and single <text>, <line> and marker elements."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from html import escape

FONT, TITLE = 11, 12  # px: ticks, labels, legend; panel titles (the figure's title is 13)
GREY, INK = "#666", "#222"
_VIRIDIS = (
    (68, 1, 84),
    (72, 40, 120),
    (62, 73, 137),
    (49, 104, 142),
    (38, 130, 142),
    (31, 158, 137),
    (53, 183, 121),
    (110, 206, 88),
    (181, 222, 43),
    (253, 231, 37),
)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # not allowed in XML, even escaped
_NARROW, _WIDE = set("fijlrtI!|.,:;'()[] "), set("mwMW@%")


def esc(text) -> str:
    return escape(_CONTROL.sub("", str(text)))


def num(value: float) -> str:
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def text_width(text: str, size: float = FONT) -> float:
    """Estimated width in px (DejaVu Sans: narrow glyphs ~0.3 em, capitals and digits ~0.68, most others 0.6)."""
    return size * sum(
        0.32 if c in _NARROW else 0.95 if c in _WIDE else 0.68 if c.isupper() or c.isdigit() else 0.6 for c in str(text)
    )


def wrap(text: str, width: float, size: float = FONT) -> list[str]:
    """Lines that fit `width` px, broken after a space, '-' or '/' (a longer piece keeps a line to itself);
    '\n' always breaks."""
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        start = len(lines)
        for piece in re.split(r"(?<=[ /-])", paragraph):
            if len(lines) > start and text_width((lines[-1] + piece).rstrip(), size) <= width:
                lines[-1] += piece
            else:
                lines.append(piece)
    return [line.rstrip() for line in lines]


def _step(lo: float, hi: float, count: int) -> float:
    """1, 2, 2.5 or 5 times a power of ten: the first of them at least (hi - lo) / count."""
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` ticks inside [lo, hi] at a nice step."""
    if not finite(lo, hi) or hi <= lo:
        return [lo] if finite(lo) else []
    step = _step(lo, hi, count)
    first = math.ceil(lo / step - 1e-9)
    return [round((first + i) * step, 12) for i in range(int(math.floor(hi / step + 1e-9)) - first + 1)]


def nice_range(lo: float, hi: float, count: int = 5) -> tuple[float, float]:
    """[lo, hi] widened to the nice steps around it (a flat range by half a unit each way; no data: [0, 1])."""
    if not finite(lo, hi):
        return 0.0, 1.0
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    step = _step(lo, hi, count)
    return round(math.floor(lo / step + 1e-9) * step, 12), round(math.ceil(hi / step - 1e-9) * step, 12)


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """As few decimals as tell the ticks apart (0.25 steps get two)."""
    step = min((b - a for a, b in zip(ticks, ticks[1:])), default=1.0)
    decimals = next((d for d in range(7) if abs(round(step, d) - step) <= 1e-9 * max(1.0, abs(step))), 6)
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def text_element(
    x: float,
    y: float,
    text,
    size: float = FONT,
    anchor: str = "middle",
    rotate: float = 0,
    bold: bool = False,
    fill: str = INK,
) -> str:
    attrs = f'x="{num(x)}" y="{num(y)}" font-size="{size}" text-anchor="{anchor}"'
    attrs += f' transform="rotate({rotate:g} {num(x)} {num(y)})"' if rotate else ""
    attrs += ' font-weight="bold"' if bold else ""
    return f'<text {attrs} fill="{fill}">{esc(text)}</text>'


def marker_element(x: float, y: float, colour: str, kind: str, r: float = 3.2) -> str:
    """A square, an open circle (white inside), a vertical tick (a reference value), else a filled circle."""
    if kind == "square":
        return f'<rect x="{num(x - r)}" y="{num(y - r)}" width="{num(2 * r)}" height="{num(2 * r)}" fill="{colour}"/>'
    if kind == "tick":
        return line_element(x, y - 2.5 * r, x, y + 2.5 * r, colour, 2)
    inside = "#fff" if kind == "open" else colour
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="{inside}" stroke="{colour}" stroke-width="1.3"/>'


def line_element(x0, y0, x1, y1, colour: str = INK, width: float = 1, dashed: bool = False) -> str:
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    return (
        f'<line x1="{num(x0)}" y1="{num(y0)}" x2="{num(x1)}" y2="{num(y1)}" stroke="{colour}" '
        f'stroke-width="{width:g}"{dash}/>'
    )


def viridis(share: float) -> str:
    """The viridis colour at `share` in [0, 1] (clipped), interpolated between ten stops."""
    at = min(max(share, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(at), len(_VIRIDIS) - 2)
    rgb = [round(a + (b - a) * (at - i)) for a, b in zip(_VIRIDIS[i], _VIRIDIS[i + 1])]
    return "#" + "".join(f"{c:02x}" for c in rgb)
