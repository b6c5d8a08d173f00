"""Charts as static SVG (pygal): deterministic bytes, no scripts."""

from __future__ import annotations

from typing import Any

import pygal
from pygal.style import Style

STYLE = Style(background="transparent", plot_background="transparent", foreground="#1d1f23", foreground_strong="#1d1f23",
              foreground_subtle="#e3e6ea", colors=("#2457c5",), font_family="system-ui, sans-serif")


def trend_svg(chart_id: str, history: list[dict[str, Any]]) -> str:
    """The headline score over time, one point a day."""
    chart = pygal.Line(
        width=640, height=220, show_legend=False, range=(0, 100), show_dots=True, dots_size=3, style=STYLE,
        js=[],  # pygal's tooltips load a script from a CDN: a static site must not
        disable_xml_declaration=True, x_label_rotation=0, show_minor_x_labels=False, truncate_label=-1,
    )
    chart.uuid = chart_id  # pygal draws a random id per chart; a fixed one keeps rebuilds byte-identical
    chart.x_labels = [row["day"] for row in history]
    chart.x_labels_major_every = max(1, len(history) // 6)
    chart.add("composite", [row["composite"] for row in history])
    return chart.render()
