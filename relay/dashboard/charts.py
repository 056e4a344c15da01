"""Server-rendered SVG charts (pure): no JavaScript, no CDN, every label escaped.

The output is a string of SVG markup meant to be inlined in a page; all text
that could come from a callback (backend names) goes through `escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Colour-blind-safe palette (Okabe-Ito, then two of Paul Tol's), cycled per series;
# dashboard.css has a matching .swatch-N per entry for the legend.
PALETTE = (
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
    "#d55e00", "#000000", "#c9b200", "#882255", "#44aa99",
)  # fmt: skip

WIDTH = 1000
HEIGHT = 240
PAD_LEFT = 56
PAD_RIGHT = 12
PAD_TOP = 12
PAD_BOTTOM = 28


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float | None]]  # (x, y); y None = no data that day


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def line_chart(
    title: str,
    series: Sequence[Series],
    x_range: tuple[float, float],
    y_max: float | None,
    y_format: Callable[[float], str],
    x_format: Callable[[float], str],
    x_ticks: Sequence[float] = (),
) -> Markup:
    """A multi-series line chart; gaps where a day has no data; y starts at 0.

    `x_ticks` are the x values to label (default: both ends)."""
    top = y_max if y_max is not None else _nice_max(series)
    scale = _Scale(x_range, top)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        *_grid(scale, top, y_format),
        *_x_labels(scale, x_format, x_ticks or x_range),
    ]
    for index, s in enumerate(series):
        parts.extend(_series(scale, s, colour(index), y_format, x_format))
    parts.append("</svg>")
    return Markup("".join(parts))


class _Scale:
    def __init__(self, x_range: tuple[float, float], top: float) -> None:
        self.x0, self.x1 = x_range
        self.top = top or 1.0

    def x(self, value: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return PAD_LEFT + (value - self.x0) / span * (WIDTH - PAD_LEFT - PAD_RIGHT)

    def y(self, value: float) -> float:
        return PAD_TOP + (1 - value / self.top) * (HEIGHT - PAD_TOP - PAD_BOTTOM)


def _nice_max(series: Sequence[Series]) -> float:
    values = [y for s in series for _, y in s.points if y is not None]
    peak = max(values, default=0.0)
    if peak <= 0:
        return 1.0
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600):
        if peak <= step * 4:
            return float(step * 4)
    return peak * 1.1


def _grid(scale: _Scale, top: float, y_format: Callable[[float], str]) -> list[str]:
    out = []
    for i in range(5):
        value = top * i / 4
        y = scale.y(value)
        out.append(
            f'<line class="grid" x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(y_format(value))}</text>"
        )
    return out


def _x_labels(scale: _Scale, x_format: Callable[[float], str], ticks: Sequence[float]) -> list[str]:
    out = []
    for value in ticks:
        x = scale.x(value)
        # Keep the end labels inside the drawing.
        anchor = "start" if x < PAD_LEFT + 20 else "end" if x > WIDTH - PAD_RIGHT - 20 else "middle"
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 8}" '
            f'text-anchor="{anchor}">{escape(x_format(value))}</text>'
        )
    return out


def _series(
    scale: _Scale,
    s: Series,
    stroke: str,
    y_format: Callable[[float], str],
    x_format: Callable[[float], str],
) -> list[str]:
    out: list[str] = []
    for run in _runs(s.points):
        coords = " ".join(f"{scale.x(x):.1f},{scale.y(y):.1f}" for x, y in run)
        out.append(f'<polyline fill="none" stroke="{stroke}" stroke-width="2" points="{coords}"/>')
    for x, y in s.points:
        if y is None:
            continue
        tip = f"{s.name} · {x_format(x)}: {y_format(y)}"
        out.append(
            f'<circle cx="{scale.x(x):.1f}" cy="{scale.y(y):.1f}" r="2.5" fill="{stroke}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return out


def _runs(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """Split a series at missing values so that a line never bridges a gap."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((x, y))
    return [r for r in runs if r]


def rate_bar(rate: float | None, label: str) -> Markup:
    """A small horizontal bar for a pass rate (0..1); grey outline when no data."""
    width = 120
    filled = 0.0 if rate is None else max(0.0, min(1.0, rate)) * width
    tone = "none" if rate is None else "good" if rate >= 0.9 else "warn" if rate >= 0.7 else "bad"
    return Markup(
        f'<svg class="ratebar ratebar-{tone}" viewBox="0 0 {width} 8" width="{width}" height="8" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect class="track" x="0" y="0" width="{width}" height="8" rx="4"/>'
        f'<rect class="fill" x="0" y="0" width="{filled:.1f}" height="8" rx="4"/></svg>'
    )
