"""Site rendering: incremental writes, well-formed badges, and untrusted text that arrives inert."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.models import CatalogEntry, CheckResult, ModelTransition, ProbeOutcome, ProbeResult, SourceRecord
from pipeline.render import run_build
from pipeline.render.badges import badge_svg, score_badge, text_width
from pipeline.render.boards import slug
from pipeline.render.contexts import safe_url
from pipeline.render.writer import SiteWriteError, SiteWriter
from pipeline.score import run_score
from pipeline.score.registry import infos
from tests.support import CATALOG_SIZE, HOSTILE, NOW, ListSource, page_problems, quiet


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
    svg = score_badge(91.2, "A", "4/4")
    root = ET.fromstring(svg)
    # the stored composite as every page shows it (to 0.1), so a badge never shows 85 beside a B
    assert root.get("role") == "img" and root.get("aria-label") == "mcp score: A 91.2 (4/4)"
    assert root.find("{http://www.w3.org/2000/svg}title").text == "mcp score: A 91.2 (4/4)"
    assert int(root.get("width")) == round(text_width("mcp score") + 10) + round(text_width("A 91.2 (4/4)") + 10)
    assert int(ET.fromstring(score_badge(None, None, "0/0")).get("width")) != int(root.get("width"))
    hostile = ET.fromstring(badge_svg('"><script>', "<b>&", "#fff"))
    assert hostile.find(".//{http://www.w3.org/2000/svg}script") is None


@pytest.mark.parametrize("url,expected", [
    ("https://github.com/o/r", "https://github.com/o/r"), ("http://x.example", "http://x.example"),
    ("javascript:alert(1)", None), ("JAVASCRIPT:alert(1)", None), ("data:text/html,x", None), (" https://ok.example ", "https://ok.example"),
    (None, None),
])
def test_only_http_links_are_clickable(url, expected):
    assert safe_url(url) == expected


def test_hostile_server_text_is_escaped_everywhere(db, tmp_path):
    entry = CatalogEntry(id="evil", name=HOSTILE, description=HOSTILE, repository="javascript:alert(1)", homepage="javascript:alert(2)",
                         transport="stdio", keys=["test:evil"], records=[SourceRecord(source="test", key="evil")])
    run_discover(db, sources=[ListSource("test", [entry])], now=NOW, progress=quiet(1))
    tool = {"name": "x<script>", "description": HOSTILE, "inputSchema": {"type": "object"}}
    store.record_probe(db, ProbeResult(server_id="evil", kind="deep", started_at=NOW, duration_ms=1, transport="stdio",
                                       outcome=ProbeOutcome.ok, tools=[tool], instructions=HOSTILE, server_info={"name": HOSTILE, "version": "1"},
                                       checks=[CheckResult(name="schema_validity", outcome="valid", passed=True, detail=HOSTILE)]), None)
    run_score(db, servers=store.active_servers(db), now=NOW)
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    for page in ("index.html", "servers/evil.html"):
        html = (tmp_path / "site" / page).read_text()
        assert "<script>" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html
        assert 'href="javascript:' not in html
        assert page_problems(html) == []  # the U+202E in the name is isolated: it cannot reorder the page around it
    data = json.loads((tmp_path / "site" / "api" / "servers" / "evil.json").read_text())
    assert data["server"]["name"] == HOSTILE and "repository" not in data["server"]  # a null is left out (deviation 106)
    ET.fromstring((tmp_path / "site" / "badge" / "evil.svg").read_text())


def test_changes_feed_sitemap_robots_404_and_downloads(db, tmp_path):
    import csv as _csv
    from datetime import timedelta

    from pipeline.discover.local import LocalCatalogSource
    from pipeline.store import open_db
    from tests.support import analysis, probe

    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    servers = store.active_servers(db)
    store.record_analysis(db, analysis().model_copy(update={"server_id": "mcp-server-time"}))
    run_score(db, servers=servers, now=NOW - timedelta(days=1))
    store.record_probe(db, probe().model_copy(update={"server_id": "mcp-server-time"}), None)
    run_score(db, servers=servers, now=NOW)
    site = tmp_path / "site"
    run_build(db, rubrics=infos(), site_dir=site, now=NOW, site_url="https://scores.example/board")

    changes = json.loads((site / "api" / "changes.json").read_text())["changes"]
    time_change = next(c for c in changes if c["id"] == "mcp-server-time")
    assert time_change["day"] == "2026-11-29" and time_change["previous_day"] == "2026-11-28"
    assert time_change["delta"] == round(time_change["composite"] - time_change["previous"], 1) and time_change["delta"] > 0

    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring((site / "feed.xml").read_text())
    entries = feed.findall(f"{atom}entry")
    assert any("mcp-server-time" in e.find(f"{atom}id").text for e in entries)
    assert feed.find(f"{atom}updated").text == "2026-11-29T00:00:00Z"

    sitemap = ET.fromstring((site / "sitemap.xml").read_text())
    locations = {loc.text for loc in sitemap.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")}
    assert "https://scores.example/board/" in locations and "https://scores.example/board/servers/mcp-server-time.html" in locations
    category_pages = {loc for loc in locations if "/category/" in loc}
    assert {loc.split("/")[-2] for loc in category_pages} == {slug(s.category) for s in servers}
    # leaderboard, servers, rubric boards, the listed-only board, methodology, downloads, status
    assert len(locations) == 1 + CATALOG_SIZE + 3 + 1 + 1 + 1 + 1 + len(category_pages)
    assert "https://scores.example/board/outside-in/" in locations and "https://scores.example/board/methodology/" in locations
    assert "Sitemap: https://scores.example/board/sitemap.xml" in (site / "robots.txt").read_text()
    assert "https://scores.example/board/index.html" in (site / "404.html").read_text()

    rows = list(_csv.DictReader((site / "downloads" / "leaderboard.csv").open()))
    assert {r["id"] for r in rows} == {s.id for s in servers} and rows[0]["rank"] == "1"
    snapshots = list((site / "downloads").glob("scoreboard-2026-11-29-engine-*.db"))
    assert len(snapshots) == 1 and not list((site / "downloads").glob("*.partial"))
    with open(snapshots[0], "rb") as raw:
        assert raw.read(20)[18:20] == b"\x01\x01"  # rollback-journal file format: opens read-only anywhere, no -wal needed
    copy = open_db(snapshots[0], create=False)
    assert copy["servers"].count == CATALOG_SIZE and copy["scores"].count == 4 * CATALOG_SIZE
    assert snapshots[0].name in (site / "downloads" / "index.html").read_text()


def test_hostile_names_in_the_feed_are_escaped(db, tmp_path):
    from datetime import timedelta

    entry = CatalogEntry(id="evil", name=HOSTILE + "]]>&", transport="stdio", repository="https://github.com/o/evil", keys=["test:evil"],
                         records=[SourceRecord(source="test", key="evil")])
    run_discover(db, sources=[ListSource("test", [entry])], now=NOW, progress=quiet(1))
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW - timedelta(days=1))
    store.record_probe(db, ProbeResult(server_id="evil", kind="deep", started_at=NOW, duration_ms=1, transport="stdio", outcome=ProbeOutcome.ok,
                                       tools=[{"name": "t", "description": "Get a thing.", "inputSchema": {"type": "object"}}],
                                       checks=[CheckResult(name="schema_validity", outcome="valid", passed=True)]), None)
    run_score(db, servers=servers, now=NOW)
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    feed = (tmp_path / "site" / "feed.xml").read_text()
    ET.fromstring(feed)  # still well-formed XML
    assert "<script>" not in feed and "&lt;script&gt;" in feed


def test_rubric_boards_and_methodology_page(db, tmp_path):
    from datetime import timedelta

    from pipeline.discover.local import LocalCatalogSource
    from pipeline.render.contexts import methodology_html
    from tests.support import analysis, probe

    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    for server_id in ("mcp-server-time", "server-everything-http"):
        store.record_probe(db, probe().model_copy(update={"server_id": server_id}), None)
        store.record_analysis(db, analysis().model_copy(update={"server_id": server_id}))
    run_score(db, servers=store.active_servers(db), now=NOW - timedelta(hours=1))
    decided = {"decided_at": NOW, "to_judge": "openai:gpt-new", "prompt_version": "p1", "seed": 0, "sampled": 4, "compared": 4,
               "mean_from": 60, "mean_to": 61, "shift": 1.67, "quantiles": {"delta": [-1, 1, 2]}, "reason": "within"}
    store.record_transition(db, ModelTransition(**decided, from_judge="openai:gpt-old", accepted=True))
    store.record_transition(db, ModelTransition(**decided, from_judge="openai:gpt-refused", accepted=False))
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    outside = json.loads((tmp_path / "site" / "api" / "outside-in.json").read_text())["servers"]
    ranked = [row for row in outside if row["rank"] is not None]
    assert [r["id"] for r in ranked][:2] and all(r["extra"]["rank_score"] is not None for r in ranked)
    assert [r["extra"]["rank_score"] for r in ranked] == sorted((r["extra"]["rank_score"] for r in ranked), reverse=True)
    remote = json.loads((tmp_path / "site" / "api" / "remote.json").read_text())["servers"]
    # The embedded catalog's HTTP servers are packages we start on loopback: no hosted endpoint for seed 004 to rank.
    assert {r["id"] for r in remote if r["rank"]} == set() and {r["visibility"] for r in remote} <= {"not applicable"}
    html = (tmp_path / "site" / "methodology" / "index.html").read_text()
    assert "<table>" in html and "schema_completeness" in html and "generated:" not in html
    assert "openai:gpt-old" in html and "+1.67%" in html and "gpt-refused" not in html, "accepted transitions are published"
    assert "&lt;script&gt;" in methodology_html("<script>alert(1)</script>") and "<script>" not in methodology_html("<script>x</script>")


def test_a_failed_snapshot_fails_the_build_with_the_reason(tmp_path):
    from pipeline.render.finish import Snapshot

    snapshot = Snapshot(str(tmp_path / "missing.db"), tmp_path / "out" / "copy.db")
    with pytest.raises(RuntimeError, match="snapshot for download failed.*unable to open"):
        snapshot.wait()
    assert not (tmp_path / "out" / "copy.db").exists()
