"""A server's reliability chart drawn directly as SVG: daily uptime (left axis, %) and p95 latency (right axis, ms).

pygal drew it in 5.7 KB, two fifths of which was a stylesheet written for any chart and a group per axis label (deviation 134);
this draws the same two lines, axes, day labels and legend in about 2 KB. Deterministic bytes: the same days give the same file.
"""

from __future__ import annotations

import math
from typing import Any

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 574, 40, 160  # the plot area
UPTIME, LATENCY = "#2457c5", "#c56a24"
STYLE = ("text{font:10px system-ui,sans-serif;fill:#1d1f23}.t{font-size:16px;text-anchor:middle}.l{font-size:14px}"
         ".y{text-anchor:end}.x{text-anchor:middle}.g{stroke:#e3e6ea;stroke-dasharray:4,4}.a{stroke:#1d1f23}"
         f"path{{fill:none}}.u{{stroke:{UPTIME}}}.p{{stroke:{LATENCY}}}")


def _n(value: float) -> str:
    return f"{round(value, 1):g}"


def _ceiling(value: float) -> float:
    """The axis top: the smallest of 1, 2, 2.5 or 5 times a power of ten at or above the largest value."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def _line(values: list[float | None], top: float, css: str) -> str:
    """One series as a path; a day without a figure breaks the line, as pygal drew it."""
    step = (RIGHT - LEFT) / max(1, len(values))
    parts, drawing = [], False
    for i, value in enumerate(values):
        if value is None:
            drawing = False
            continue
        x, y = LEFT + step * (i + 0.5), BOTTOM - (BOTTOM - TOP) * value / top
        parts.append(("L" if drawing else "M") + f"{_n(x)} {_n(y)}")
        drawing = True
    return f'<path class="{css}" d="{" ".join(parts)}"/>' if parts else ""


def reliability_svg(days: list[dict[str, Any]]) -> str:
    """Daily uptime and p95 latency of successful probes; the day labels every sixth of the span, as pygal placed them."""
    latencies = [d["p95_ms"] for d in days if d["p95_ms"] is not None]
    top_ms = _ceiling(max(latencies, default=0))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}"><title>Uptime and p95 latency by day</title>'
           f"<style>{STYLE}</style>"
           f'<text class="t" x="{WIDTH // 2}" y="26">Uptime and p95 latency by day</text>']
    grid = []
    for tick in range(0, 101, 20):
        y = _n(BOTTOM - (BOTTOM - TOP) * tick / 100)
        grid.append(f"M{LEFT} {y}H{RIGHT}")
        out.append(f'<text class="y" x="{LEFT - 5}" y="{y}" dy="3">{tick}</text>'
                   f'<text x="{RIGHT + 5}" y="{y}" dy="3">{_n(top_ms * tick / 100)}</text>')
    out.append(f'<path class="g" d="{"".join(grid)}"/><path class="a" d="M{LEFT} {TOP}V{BOTTOM}H{RIGHT}V{TOP}"/>')
    step = (RIGHT - LEFT) / max(1, len(days))
    for i in range(0, len(days), max(1, len(days) // 6)):
        out.append(f'<text class="x" x="{_n(LEFT + step * (i + 0.5))}" y="{BOTTOM + 14}">{days[i]["day"]}</text>')
    out.append(_line([d["uptime"] for d in days], 100, "u") + _line([d["p95_ms"] for d in days], top_ms, "p"))
    out.append(f'<rect x="58" y="190" width="12" height="12" fill="{UPTIME}"/><text class="l" x="75" y="200">uptime %</text>'
               f'<rect x="321" y="190" width="12" height="12" fill="{LATENCY}"/><text class="l" x="338" y="200">p95 ms</text></svg>')
    return "".join(out)
