"""Site rendering: incremental writes, well-formed badges, and untrusted text that arrives inert."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pipeline import db as store
from pipeline.discover import run_discover
from pipeline.models import CatalogEntry, CheckResult, ProbeOutcome, ProbeResult
from pipeline.render import run_build
from pipeline.render.badges import badge_svg, score_badge, text_width
from pipeline.render.contexts import safe_url
from pipeline.render.writer import SiteWriteError, SiteWriter
from pipeline.score import run_score
from tests.conftest import NOW
from tests.test_discover import ListSource, quiet

HOSTILE = '<script>alert("x")</script>\u202e\u200b<img src=x onerror=alert(1)>'


def test_writer_writes_only_changed_bytes_and_removes_stale(tmp_path):
    first = SiteWriter(tmp_path)
    first.write("a.html", "one")
    first.write("dir/b.html", "two")
    first.remove_stale()
    mtime = (tmp_path / "a.html").stat().st_mtime_ns
    second = SiteWriter(tmp_path)
    second.write("a.html", "one")
    second.remove_stale()
    assert second.counts == {"written": 0, "unchanged": 1, "removed": 1}
    assert (tmp_path / "a.html").stat().st_mtime_ns == mtime
    assert not (tmp_path / "dir").exists()


def test_writer_refuses_double_claims_and_escapes(tmp_path):
    writer = SiteWriter(tmp_path)
    writer.write("x.html", "1")
    with pytest.raises(SiteWriteError, match="same path"):
        writer.write("x.html", "2")
    for bad in ("../evil.html", "/etc/passwd"):
        with pytest.raises(SiteWriteError, match="outside"):
            writer.write(bad, "x")


def test_badge_is_accessible_wellformed_xml_sized_to_its_text():
    svg = score_badge(91.24, "A", "4/4")
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.get("aria-label") == "mcp score: A 91 (4/4)"
    assert root.find("{http://www.w3.org/2000/svg}title").text == "mcp score: A 91 (4/4)"
    assert int(root.get("width")) == round(text_width("mcp score") + 10) + round(text_width("A 91 (4/4)") + 10)
    assert int(ET.fromstring(score_badge(None, None, "0/0")).get("width")) != int(root.get("width"))
    hostile = ET.fromstring(badge_svg('"><script>', "<b>&", "#fff"))
    assert hostile.find(".//{http://www.w3.org/2000/svg}script") is None


@pytest.mark.parametrize("url,expected", [
    ("https://github.com/o/r", "https://github.com/o/r"), ("http://x.example", "http://x.example"),
    ("javascript:alert(1)", None), ("JAVASCRIPT:alert(1)", None), ("data:text/html,x", None), (" https://ok.example ", "https://ok.example"), (None, None),
])
def test_only_http_links_are_clickable(url, expected):
    assert safe_url(url) == expected


def test_hostile_server_text_is_escaped_everywhere(db, tmp_path):
    entry = CatalogEntry(id="evil", name=HOSTILE, description=HOSTILE, repository="javascript:alert(1)", homepage="javascript:alert(2)",
                         transport="stdio", source="test", source_key="evil")
    run_discover(db, sources=[ListSource("test", [entry])], now=NOW, progress=quiet(1))
    tool = {"name": "x<script>", "description": HOSTILE, "inputSchema": {"type": "object"}}
    store.record_probe(db, ProbeResult(server_id="evil", kind="deep", started_at=NOW, duration_ms=1, transport="stdio",
                                       outcome=ProbeOutcome.ok, tools=[tool], instructions=HOSTILE, server_info={"name": HOSTILE, "version": "1"},
                                       checks=[CheckResult(name="schema_validity", outcome="valid", passed=True, detail=HOSTILE)]), None)
    run_score(db, servers=store.active_servers(db), now=NOW)
    run_build(db, site_dir=tmp_path / "site", now=NOW)
    for page in ("index.html", "servers/evil/index.html"):
        html = (tmp_path / "site" / page).read_text()
        assert "<script>" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html
        assert 'href="javascript:' not in html
    data = json.loads((tmp_path / "site" / "api" / "servers" / "evil.json").read_text())
    assert data["server"]["name"] == HOSTILE and data["server"]["repository"] is None
    ET.fromstring((tmp_path / "site" / "badge" / "evil.svg").read_text())
