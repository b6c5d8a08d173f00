"""Charts as static SVG (pygal): deterministic bytes, no scripts."""

from __future__ import annotations

import re
from typing import Any

import pygal
from pygal.style import Style

STYLE = Style(background="transparent", plot_background="transparent", foreground="#1d1f23", foreground_strong="#1d1f23",
              foreground_subtle="#e3e6ea", colors=("#2457c5",), font_family="system-ui, sans-serif")


_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)


def _static(svg: str) -> str:
    """Drop the config script pygal always embeds: inert in an <img>, but a static chart has no use for it."""
    return _SCRIPT.sub("", svg, count=1)


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
    return _static(chart.render())


def reliability_svg(chart_id: str, days: list[dict[str, Any]]) -> str:
    """Daily uptime (left axis, %) and p95 latency of successful probes (right axis, ms)."""
    chart = pygal.Line(
        # no dots: 30 days of points with hover tooltips (which an <img> never shows) double the cost of the chart
        width=640, height=220, show_legend=True, legend_at_bottom=True, range=(0, 100), show_dots=False,
        style=Style(**{**STYLE.to_dict(), "colors": ("#2457c5", "#c56a24")}), js=[], disable_xml_declaration=True,
        x_label_rotation=0, show_minor_x_labels=False, truncate_label=-1,
    )
    chart.uuid = chart_id
    chart.x_labels = [row["day"] for row in days]
    chart.x_labels_major_every = max(1, len(days) // 6)
    chart.add("uptime %", [row["uptime"] for row in days])
    chart.add("p95 ms", [row["p95_ms"] for row in days], secondary=True)
    return _static(chart.render())
