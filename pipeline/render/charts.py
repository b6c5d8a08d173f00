"""The trend chart as static SVG (pygal): deterministic bytes, no scripts. The reliability chart is drawn directly (reliability_chart.py)."""

from __future__ import annotations

import re
from typing import Any

import pygal
from pygal.config import SerieConfig
from pygal.graph import base as pygal_base
from pygal.style import Style
from pygal.svg import Svg

STYLE = Style(background="transparent", plot_background="transparent", foreground="#1d1f23", foreground_strong="#1d1f23",
              foreground_subtle="#e3e6ea", colors=("#2457c5",), font_family="system-ui, sans-serif")


# pygal's comments (its name, links and the day of rendering): a day in the bytes would make a chart of unchanged data differ
# from one build to the next, and they are a tenth of a small chart.
_COMMENTS = re.compile(r"<!--.*?-->")
_MARKER = "0f0f0f0f-chart-id-marker"
# Style rules only an interactive chart uses (hover, tooltips, the state a script sets, animations): a chart shown as <img> never
# runs a script or receives a hover, and they were two fifths of each chart's stylesheet (deviation 103).
_INTERACTIVE = re.compile(r":hover|\.tooltip|\.active\b|\.activate|\.map-element|\.gauge-background|\.showable|transition")
_RULE = re.compile(r"[^{}]+\{[^{}]*\}")


# What an <img> of the chart never shows, and what needs fewer bytes to draw the same (deviation 107): coordinates to a tenth of a pixel
# (pygal writes six to fifteen decimals), an axis label's tooltip (<title>, the label's own text again), where a dot's tooltip would
# go (<desc> of its position and day; its value stays), empty classes, the empty overlay groups and hidden tooltip a script would fill,
# and the style rules for classes the chart does not use.
_ATTRIBUTE = re.compile(r'="([^"]*)"')
_DECIMALS = re.compile(r"-?\d+\.\d{2,}")
_LABEL_TOOLTIP = re.compile(r"(</text>)<title>[^<]*</title>")
_TOOLTIP_PLACE = re.compile(r'<desc class="(?:x|y|x_label)\b[^"]*">[^<]*</desc>')
_EMPTY_OVERLAYS = re.compile(r'<g transform="[^"]*" class="plot (?:overlay|text-overlay)">(?:<g class="series serie-\d+ color-\d+" />)*</g>'
                             r'|<g transform="[^"]*" class="plot tooltip-overlay"><g transform="translate\(0 0\)" style="opacity: 0" '
                             r'class="tooltip"><rect rx="0" ry="0" width="0" height="0" class="tooltip-box" /><g class="text" /></g></g>')
_STYLESHEET = re.compile(r'(<style type="text/css">)(.*?)(</style>)', re.S)
_CLASSES = re.compile(r'class="([^"]*)"')


def _tenth(number: re.Match) -> str:
    return f"{round(float(number[0]), 1):g}"


def _used_rules(stylesheet: str, classes: set[str]) -> str:
    kept = []
    for rule in _RULE.findall(stylesheet):
        selectors, body = rule.split("{", 1)
        used = [s for s in selectors.split(",") if set(re.findall(r"\.([\w-]+)", s)) <= classes]
        if used:
            kept.append(",".join(used) + "{" + body)
    return "".join(kept)


def _compact(svg: str) -> str:
    svg = _EMPTY_OVERLAYS.sub("", _TOOLTIP_PLACE.sub("", _LABEL_TOOLTIP.sub(r"\1", svg))).replace(' class=""', "")
    svg = _ATTRIBUTE.sub(lambda m: '="' + _DECIMALS.sub(_tenth, m[1]) + '"', svg)
    classes = {name for found in _CLASSES.findall(svg) for name in found.split()}
    # the chart's id before every selector scoped a chart among others on one page; a chart is its own document (an <img>)
    scope = re.search(r'<svg [^>]*id="([^"]+)"', svg)
    prefix = f"#{scope[1]} " if scope else None
    return _STYLESHEET.sub(lambda m: m[1] + _used_rules(m[2], classes).replace(prefix or "\0", "") + m[3], svg, count=1)


def _static_rules(stylesheet: str) -> str:
    return "".join(rule for rule in _RULE.findall(stylesheet) if not _INTERACTIVE.search(rule))  # stands for a chart's uuid in its cached stylesheet
_STYLESHEETS: dict[tuple, str] = {}
_SERIE_CONFIG_NAMES: list[str] = []


class _StaticSvg(Svg):
    """pygal's SVG writer without the config script it always embeds: a chart shown as <img> never runs it,
    and dumping the chart's whole configuration into it is a tenth of the rendering time."""

    def add_scripts(self) -> None:
        pass

    def add_styles(self) -> None:
        """pygal reads three CSS files from disk, fills them in and minifies them for every chart; the text
        differs between charts of one kind only by the chart's id, so it is made once and the id put in."""
        graph = self.graph
        key = (type(graph).__name__, id(graph.style), graph._order, tuple(graph.css), graph.pretty_print, repr(self.get_strokes()))
        if key not in _STYLESHEETS:
            real = self.id
            self.id = f"#chart-{_MARKER} "
            try:
                super().add_styles()
            finally:
                self.id = real
            _STYLESHEETS[key] = _static_rules(self.defs[-1].text)
            self.defs[-1].text = _STYLESHEETS[key].replace(_MARKER, graph.uuid)
            return
        self.node(self.defs, "style", type="text/css").text = _STYLESHEETS[key].replace(_MARKER, graph.uuid)


class _SerieConfig(SerieConfig):
    """pygal asks `dir()` of a fresh SerieConfig once for every attribute of a chart's state (a seventh of a
    chart's time); a fresh one always answers the same, so the answer is kept."""

    def __dir__(self) -> list[str]:
        if not _SERIE_CONFIG_NAMES:
            _SERIE_CONFIG_NAMES.extend(super().__dir__())
        return _SERIE_CONFIG_NAMES


class Line(pygal.Line):
    """pygal's line chart with a static SVG writer. Named Line because pygal names the chart's CSS class after it."""

    def setup(self, **kwargs: Any) -> None:
        pygal_base.SerieConfig = _SerieConfig  # for this chart's setup only: stock pygal charts stay stock
        try:
            super().setup(**kwargs)
        finally:
            pygal_base.SerieConfig = SerieConfig

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "svg" and type(value) is Svg:
            value.__class__ = _StaticSvg
        super().__setattr__(name, value)

    def __getattribute__(self, name: str) -> Any:
        # pygal's own hook, same answers, fewer steps: a chart reads its attributes hundreds of thousands of
        # times, and pygal's version looks `state` up through itself on each read (a fifth of a chart's time).
        state = object.__getattribute__(self, "__dict__").get("state")
        if state is not None and name != "state" and not name.startswith("__"):
            found = state.__dict__
            if name in found:
                return found[name]
        return object.__getattribute__(self, name)


def trend_svg(chart_id: str, history: list[dict[str, Any]]) -> str:
    """The headline score over time, one point a day."""
    chart = Line(
        title="Headline score by day", width=640, height=220, show_legend=False, range=(0, 100), show_dots=len(history) <= 10,
        dots_size=3, style=STYLE,
        js=[],  # pygal's tooltips load a script from a CDN: a static site must not
        disable_xml_declaration=True, x_label_rotation=0, show_minor_x_labels=False, truncate_label=-1,
    )
    chart.uuid = chart_id  # pygal draws a random id per chart; a fixed one keeps rebuilds byte-identical
    chart.x_labels = [row["day"] for row in history]
    chart.x_labels_major_every = max(1, len(history) // 6)
    chart.add("composite", [row["composite"] for row in history])
    return _compact(_COMMENTS.sub("", chart.render()))

