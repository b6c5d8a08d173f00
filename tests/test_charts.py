"""Charts: pygal's own output, minus its script, comments, interactive styles and what an <img> never shows, for the same data; stable bytes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pygal

from pipeline.render import charts

HISTORY = [{"day": f"2026-11-{d:02d}", "composite": 40 + d * 1.5} for d in range(1, 31)]
DAYS = [{"day": f"2026-11-{d:02d}", "uptime": 100.0 - (d % 4), "p95_ms": 120 + 7 * d if d != 9 else None} for d in range(1, 31)]


def stock(monkeypatch, render, *args):
    with monkeypatch.context() as patch:
        patch.setattr(charts, "Line", pygal.Line)
        patch.setattr(charts, "_compact", lambda svg: svg)
        return render(*args)


def test_charts_equal_pygal_stock_output_without_its_script(monkeypatch):
    for render, args in ((charts.trend_svg, ("trend-x", HISTORY)), (charts.trend_svg, ("trend-y", HISTORY[:3])),
                         (charts.reliability_svg, ("rel-x", DAYS)), (charts.reliability_svg, ("rel-y", DAYS[:5]))):  # later ones reuse a stylesheet
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
        assert ":hover" not in ours and "transition" not in ours and ".axis .guide.line" in ours and ".color-1" in ours or "rel" not in args[0]
        # pygal's comments go (in both): one holds the day of rendering, which would change a chart's bytes every day
        assert "<!--" not in ours and "pygal 3" not in ours
        svg = ET.fromstring(ours)
        assert svg.tag == "{http://www.w3.org/2000/svg}svg" and render(*args) == ours  # well-formed and byte-stable
