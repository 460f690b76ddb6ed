"""Figures as SVG text, without a plotting library: panels on linear axes ("nice" ticks, axis labels, a title)
holding bars with error bars, points with horizontal intervals, lines with markers, dashed reference lines or
heatmap cells with a colour scale, laid out as a grid under one title and legend.

Same input, same bytes: no ids, no timestamps, coordinates at one decimal. Every text is escaped, so a model or
class name cannot add markup. There is no font engine: text widths are estimated (`svg_elements`, which holds the
text, line and marker elements, ticks and colours these panels are drawn with), so margins err wide. A NaN value is
skipped, never drawn at 0; the caller says so where it matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mhaudit.report.svg_elements import (
    FONT,
    GREY,
    INK,
    TITLE,
    esc,
    finite,
    line_element,
    marker_element,
    nice_range,
    nice_ticks,
    num,
    text_element,
    text_width,
    tick_label,
    viridis,
    wrap,
)

__all__ = ["Axis", "Panel", "categories", "figure", "heatmap", "nice_range", "nice_ticks", "text_width", "COLOURS"]

ZOOM = 1.25  # shown 1.25 times the layout's size: 11 px text reads as ~14 px beside a page's 16 px
FAMILY = "'DejaVu Sans', Verdana, Arial, Helvetica, sans-serif"  # wide fonts first: the estimates assume them
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")  # Okabe-Ito
_SLANT = math.radians(35)  # rotated category labels


@dataclass
class Axis:
    """A linear axis over [lo, hi], its label, and its ticks: nice ones unless given as (value, label) pairs. On an
    x axis, tick labels that would not fit side by side are slanted."""

    lo: float
    hi: float
    label: str = ""
    ticks: Sequence[tuple[float, str]] | None = None

    def marks(self) -> list[tuple[float, str]]:
        if self.ticks is not None:
            return [(v, str(t)) for v, t in self.ticks]
        values = nice_ticks(self.lo, self.hi)
        return [(v, tick_label(v, values)) for v in values]


def categories(names: Sequence, label: str = "", reverse: bool = False) -> Axis:
    """An axis with one tick per name at 0, 1, 2, ... (top to bottom on a y axis with reverse=True)."""
    n = len(names)
    return Axis(-0.5, n - 0.5, label, [(n - 1 - i if reverse else i, str(name)) for i, name in enumerate(names)])


class Panel:
    """A plot box of `width` x `height` px on axes `x` and `y`. Marks take data coordinates; a value outside an
    axis is drawn at its edge, so the caller sets ranges that hold the data."""

    def __init__(self, x: Axis, y: Axis, width: float = 300, height: float = 220, title: str = "", grid: bool = True):
        self.x, self.y, self.width, self.height, self.title, self.grid = x, y, width, height, title, grid
        self.marks: list[Callable] = []
        self.scale: tuple[float, float, str] | None = None  # a heatmap's colour scale: lo, hi, label

    def bars(self, xs, heights, width: float, colour: str, errors=None, base: float = 0.0) -> None:
        """Bars from `base` to each finite height, with +- error whiskers where an error is finite."""
        errors = list(errors) if errors is not None else [math.nan] * len(xs)

        def draw(px, py):
            out = []
            for x, h, e in zip(xs, heights, errors):
                if not finite(x, h):
                    continue
                (x0, x1), (y0, y1) = (px(x - width / 2), px(x + width / 2)), sorted((py(base), py(h)))
                if y1 - y0 >= 0.05:  # an empty bin draws nothing
                    out.append(
                        f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(x1 - x0)}" '
                        f'height="{num(y1 - y0)}" fill="{colour}"/>'
                    )
                if finite(e) and e > 0:
                    out += [
                        line_element(px(x), py(h - e), px(x), py(h + e)),
                        *(line_element(px(x) - 3, py(v), px(x) + 3, py(v)) for v in (h - e, h + e)),
                    ]
            return out

        self.marks.append(draw)

    def points(self, xs, ys, colour: str, low=None, high=None, marker: str = "circle") -> None:
        """Markers at finite (x, y), each with a horizontal interval [low, high] where both ends are finite."""
        low, high = ([math.nan] * len(xs) if ends is None else list(ends) for ends in (low, high))

        def draw(px, py):
            out = []
            for x, y, a, b in zip(xs, ys, low, high):
                if finite(x, y):
                    if finite(a, b):
                        out += [
                            line_element(px(a), py(y), px(b), py(y), colour, 1.2),
                            *(line_element(px(v), py(y) - 3, px(v), py(y) + 3, colour, 1.2) for v in (a, b)),
                        ]
                    out.append(marker_element(px(x), py(y), colour, marker))
            return out

        self.marks.append(draw)

    def line(self, xs, ys, colour: str, marker: str = "circle") -> None:
        """A polyline through the finite points, broken where a value is NaN, with a marker at each point."""

        def draw(px, py):
            runs, out = [list[tuple[float, float]]()], []
            for x, y in zip(xs, ys):
                if finite(x, y):
                    runs[-1].append((px(x), py(y)))
                elif runs[-1]:
                    runs.append([])
            for run in (r for r in runs if len(r) > 1):
                path = " ".join(f"{num(a)},{num(b)}" for a, b in run)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
            return out + [marker_element(a, b, colour, marker, 2.6) for run in runs for a, b in run] if marker else out

        self.marks.append(draw)

    def reference(self, x: float | None = None, y: float | None = None, points=None) -> None:
        """A dashed grey reference line: vertical at x, horizontal at y, or through two (x, y) points."""
        (x0, y0), (x1, y1) = points or (
            ((x, self.y.lo), (x, self.y.hi)) if x is not None else ((self.x.lo, y), (self.x.hi, y))
        )
        self.marks.append(lambda px, py: [line_element(px(x0), py(y0), px(x1), py(y1), GREY, 1, dashed=True)])

    def cells(self, values: Sequence[Sequence[float]], lo: float, hi: float, label: str, digits: int = 2) -> None:
        """values[i][j] fills the cell at x = j, y = (rows - 1 - i) with its viridis colour on [lo, hi] and
        writes the value in it (white on dark, black on light); NaN is a grey 'n/a'. Adds the colour scale."""
        rows = len(values)
        self.scale = (lo, hi, label)

        def draw(px, py):
            out = []
            for i, row in enumerate(values):
                for j, v in enumerate(row):
                    x0, x1, y0, y1 = px(j - 0.5), px(j + 0.5), py(rows - 0.5 - i), py(rows - 1.5 - i)
                    share = (v - lo) / (hi - lo) if finite(v) else math.nan
                    fill = viridis(share) if finite(v) else "#e0e0e0"
                    out.append(
                        f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(x1 - x0)}" height="{num(y1 - y0)}" '
                        f'fill="{fill}" stroke="#fff"/>'
                    )
                    dark = finite(v) and share < 0.6  # viridis turns light (yellow-green) above ~0.6
                    out.append(
                        text_element(
                            (x0 + x1) / 2,
                            (y0 + y1) / 2 + FONT * 0.35,
                            f"{v:.{digits}f}" if finite(v) else "n/a",
                            fill="#fff" if dark else INK,
                        )
                    )
            return out

        self.marks.append(draw)

    def _rotated(self) -> bool:
        marks = self.x.marks()
        if len(marks) < 2:
            return False
        room = self.width / (self.x.hi - self.x.lo) * min(abs(b[0] - a[0]) for a, b in zip(marks, marks[1:]))
        return max(text_width(t) for _, t in marks) + 6 > room

    def _ylabel_lines(self) -> list[str]:
        return wrap(self.y.label, self.height) if self.y.label else []

    def margins(self) -> tuple[float, float, float, float]:
        """Room around the box (left, right, top, bottom) for ticks, labels, the title and a colour scale."""
        xmarks, span = self.x.marks(), self.x.hi - self.x.lo
        left = max((text_width(t) for _, t in self.y.marks()), default=0) + 10 + 15 * len(self._ylabel_lines())
        offsets = [((v - self.x.lo) / span * self.width, text_width(t)) for v, t in xmarks]
        if self._rotated():  # a slanted label hangs to the left of its tick
            left = max([left] + [w * math.cos(_SLANT) - at + 8 for at, w in offsets])
            right = 10.0
            bottom = max((w for _, w in offsets), default=0) * math.sin(_SLANT) + FONT + 10
        else:  # a centred label overhangs both ends of the axis by half its width
            left = max([left] + [w / 2 - at + 4 for at, w in offsets])
            right = max([10.0] + [w / 2 - (self.width - at) + 4 for at, w in offsets])
            bottom = FONT + 12.0
        if self.scale:
            right += (
                36
                + max(
                    text_width(tick_label(v, nice_ticks(*self.scale[:2]))) for v in nice_ticks(*self.scale[:2]) or [0]
                )
                + 15 * len(wrap(self.scale[2], self.height))
            )
        bottom += 15 * len(wrap(self.x.label, self.width + 16)) + 4 if self.x.label else 0
        top = 6 + (TITLE + 4) * len(wrap(self.title, self.width + 16, TITLE)) if self.title else 6
        return left, right, top, bottom

    def render(self, left: float, top: float) -> list[str]:
        """The panel's elements with the box's top-left corner at (left, top)."""
        x, y, w, h = self.x, self.y, self.width, self.height

        def px(v):
            return left + (min(max(v, x.lo), x.hi) - x.lo) / (x.hi - x.lo) * w

        def py(v):
            return top + h - (min(max(v, y.lo), y.hi) - y.lo) / (y.hi - y.lo) * h

        out = [f'<rect x="{num(left)}" y="{num(top)}" width="{num(w)}" height="{num(h)}" fill="#fff" stroke="#aaa"/>']
        if self.grid:
            out += [line_element(left, py(v), left + w, py(v), "#e8e8e8") for v, _ in y.marks() if y.lo < v < y.hi]
        for mark in self.marks:
            out += mark(px, py)
        out += self._axes(px, py, left, top)
        if self.scale:
            out += self._scale(self.scale, left + w + 14, top)
        return out

    def _axes(self, px, py, left: float, top: float) -> list[str]:
        """Ticks, their labels, the axis labels and the title."""
        out, bottom, slant = [], top + self.height, self._rotated()
        margin_left, _, margin_top, margin_bottom = self.margins()
        for v, label in self.y.marks():
            out += [
                line_element(left - 4, py(v), left, py(v), GREY),
                text_element(left - 6, py(v) + FONT * 0.35, label, anchor="end"),
            ]
        for v, label in self.x.marks():
            out += [
                line_element(px(v), bottom, px(v), bottom + 4, GREY),
                text_element(px(v) + 3, bottom + FONT + 4, label, anchor="end", rotate=-35)
                if slant
                else text_element(px(v), bottom + FONT + 5, label),
            ]
        below, outer = bottom + margin_bottom - 6, left - margin_left + FONT + 2
        out += [
            text_element(left + self.width / 2, below - 15 * i, line)
            for i, line in enumerate(reversed(wrap(self.x.label, self.width + 16)) if self.x.label else [])
        ]
        out += [
            text_element(outer + 15 * i, top + self.height / 2, line, rotate=-90)
            for i, line in enumerate(self._ylabel_lines())
        ]
        first = top - margin_top + TITLE + 4
        return out + [
            text_element(left + self.width / 2, first + (TITLE + 4) * i, line, TITLE, bold=True)
            for i, line in enumerate(wrap(self.title, self.width + 16, TITLE) if self.title else [])
        ]

    def _scale(self, scale: tuple[float, float, str], left: float, top: float) -> list[str]:
        """A heatmap's colour scale: a bar of 40 stripes with nice ticks and its label beside it."""
        lo, hi, label = scale
        stripes, h = 40, self.height
        out = [
            f'<rect x="{num(left)}" y="{num(top + h * (1 - (k + 1) / stripes))}" width="12" '
            f'height="{num(h / stripes + 0.5)}" fill="{viridis((k + 0.5) / stripes)}"/>'
            for k in range(stripes)
        ]
        ticks = nice_ticks(lo, hi)
        for v in ticks:
            at = top + h * (1 - (v - lo) / (hi - lo))
            out += [
                line_element(left + 12, at, left + 16, at, GREY),
                text_element(left + 18, at + FONT * 0.35, tick_label(v, ticks), anchor="start"),
            ]
        width = max(text_width(tick_label(v, ticks)) for v in ticks) if ticks else 0
        return out + [
            text_element(left + 30 + width + FONT + 15 * i, top + h / 2, line, rotate=-90)
            for i, line in enumerate(wrap(label, h))
        ]


def heatmap(
    values: Sequence[Sequence[float]],
    rows: Sequence,
    columns: Sequence,
    lo: float,
    hi: float,
    scale_label: str,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
) -> Panel:
    """A panel of cells (rows top to bottom), each wide enough for its column's name or value, and tall enough
    that the colour scale beside them reads (120 px at least)."""
    cell = max(52.0, min(120.0, max((text_width(c) + 10 for c in columns), default=0)))
    panel = Panel(
        categories(columns, x_label),
        categories(rows, y_label, reverse=True),
        width=cell * max(1, len(columns)),
        height=max(120.0, 28.0 * len(rows)),
        title=title,
        grid=False,
    )
    panel.cells(values, lo, hi, scale_label)
    return panel


def _legend(entries: Sequence[tuple[str, str, str]], width: float, top: float) -> tuple[list[str], float]:
    """Entries (label, colour, kind) in rows that fit `width`; returns the elements and their height. A kind is
    "bar" (a swatch), "dash" or "line" (a line alone), "tick" or "dot" (a marker alone), or a marker on a line
    ("circle", "square", "open")."""
    out, x, y = [], 12.0, top + 10
    for label, colour, kind in entries:
        size = 26 + text_width(label)
        if x > 12 and x + size > width:
            x, y = 12.0, y + 18
        if kind == "bar":
            out.append(f'<rect x="{num(x)}" y="{num(y - 5)}" width="10" height="10" fill="{colour}"/>')
        else:
            out += (
                [line_element(x - 2, y, x + 14, y, colour, 1.5, kind == "dash")] if kind not in ("tick", "dot") else []
            )
            out += [marker_element(x + 6, y, colour, kind, 2.8)] if kind not in ("dash", "line") else []
        out.append(text_element(x + 18, y + FONT * 0.35, label, anchor="start"))
        x += size + 14
    return out, (y - top + 12 if entries else 0)


def figure(
    grid: Sequence[Sequence[Panel | None]],
    title: str = "",
    legend: Sequence[tuple[str, str, str]] = (),
    note: str = "",
    alt: str = "",
) -> bytes:
    """The panels (rows of columns; None leaves a cell empty) as one SVG document in UTF-8 bytes, under `title`
    and a legend of (label, colour, kind) entries, with `note` beneath. `alt` (else the title) is its <title>."""
    cols = max(len(row) for row in grid)
    cells = [[row[c] if c < len(row) else None for c in range(cols)] for row in grid]
    # each column as wide as its widest panel and margins, each row as tall as its tallest
    room = [[(*p.margins(), p.width, p.height) if p else (0,) * 6 for p in row] for row in cells]
    left, right, width = ([max(row[c][k] for row in room) for c in range(cols)] for k in (0, 1, 4))
    top, bottom, height = ([max(box[k] for box in row) for row in room] for k in (2, 3, 5))
    total = max(320.0, 16 + sum(left) + sum(width) + sum(right))
    heading = wrap(title, total - 24, 13) if title else []
    out = [text_element(total / 2, 22 + 18 * i, line, 13, bold=True) for i, line in enumerate(heading)]
    keys, keys_height = _legend(legend, total - 12, 10 + 18 * len(heading))
    out += keys
    y = 12 + 18 * len(heading) + keys_height
    for r, row in enumerate(cells):
        x = 8.0
        for c, panel in enumerate(row):
            if panel:
                out += panel.render(x + left[c], y + top[r])
            x += left[c] + width[c] + right[c]
        y += top[r] + height[r] + bottom[r]
    foot = wrap(note, total - 24) if note else []
    out += [text_element(12, y + 14 + 15 * i, line, anchor="start", fill="#444") for i, line in enumerate(foot)]
    high = y + 15 * len(foot) + 10
    size = f'width="{num(total * ZOOM)}" height="{num(high * ZOOM)}" viewBox="0 0 {num(total)} {num(high)}"'
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" {size}'
        f' role="img" font-family="{FAMILY}"><title>{esc(alt or title or "figure")}</title>'
        '<rect width="100%" height="100%" fill="#fff"/>'
    )
    return "\n".join([head, *out, "</svg>"]).encode("utf-8")
