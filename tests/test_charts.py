"""Charts: pygal's own output, minus its script, comments, interactive styles and what an <img> never shows, for the same data; stable bytes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pygal

from pipeline.render import charts
from pipeline.render.reliability_chart import reliability_svg

HISTORY = [{"day": f"2026-11-{d:02d}", "composite": 40 + d * 1.5} for d in range(1, 31)]
DAYS = [{"day": f"2026-11-{d:02d}", "uptime": 100.0 - (d % 4), "p95_ms": 120 + 7 * d if d != 9 else None} for d in range(1, 31)]


def stock(monkeypatch, render, *args):
    with monkeypatch.context() as patch:
        patch.setattr(charts, "Line", pygal.Line)
        patch.setattr(charts, "_compact", lambda svg: svg)
        return render(*args)


def test_charts_equal_pygal_stock_output_without_its_script(monkeypatch):
    for render, args in ((charts.trend_svg, ("trend-x", HISTORY)), (charts.trend_svg, ("trend-y", HISTORY[:3]))):  # the later reuses a stylesheet
        ours, theirs = render(*args), stock(monkeypatch, render, *args)
        assert "<script" in theirs and "<script" not in ours
        without_script = re.sub(r"<script\b.*?</script>", "", theirs, count=1, flags=re.S)
        # the stylesheet keeps what draws the chart and loses what only an interactive one uses (deviation 103)
        static = re.sub(r'(<style type="text/css">)(.*?)(</style>)', lambda m: m[1] + charts._static_rules(m[2]) + m[3], without_script,
                        count=1, flags=re.S)
        # and the same drawing in fewer bytes (deviation 107): a tenth of a pixel, no label tooltips, no empty overlays, no unused styles
        assert ours == charts._compact(static) and len(ours) < 0.7 * len(without_script)
        assert not re.search(r'="[^"]*\d\.\d\d', ours) and "</text><title>" not in ours and "tooltip-overlay" not in ours
        assert '<desc class="x' not in ours and 'class=""' not in ours and f"#chart-{args[0]} ." not in ours
        assert ":hover" not in ours and "transition" not in ours and ".axis .guide.line" in ours
        # pygal's comments go (in both): one holds the day of rendering, which would change a chart's bytes every day
        assert "<!--" not in ours and "pygal 3" not in ours
        svg = ET.fromstring(ours)
        assert svg.tag == "{http://www.w3.org/2000/svg}svg" and render(*args) == ours  # well-formed and byte-stable


def test_the_reliability_chart_draws_both_series_axes_days_and_legend_in_few_bytes():
    """Drawn directly rather than by pygal (deviation 134): the same two lines, a gap where a day has no figure, both axes'
    scales, the day labels every sixth of the span and the legend; well-formed and byte-stable."""
    svg = reliability_svg(DAYS)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg" and root.find(f"{ns}title").text == "Uptime and p95 latency by day" and reliability_svg(DAYS) == svg
    paths = {p.get("class"): p.get("d") for p in root.iter(f"{ns}path")}
    assert paths["u"].count("M") == 1 and paths["u"].count("L") == 29  # every day's uptime, one line
    assert paths["p"].count("M") == 2 and paths["p"].count("L") == 27  # day 9 has no p95: the line breaks there
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert {"0", "100", "uptime %", "p95 ms", "2026-11-01", "2026-11-06", "2026-11-26"} <= set(texts)
    assert "500" in texts and "<script" not in svg and len(svg) < 2_600  # p95 reaches 330 ms: the right axis tops at 500
    assert reliability_svg(DAYS[:2]).count("<path") == 4
    assert 'class="p"' not in reliability_svg([{**d, "p95_ms": None} for d in DAYS[:3]])  # no latency measured: no line
