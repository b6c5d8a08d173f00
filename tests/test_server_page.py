"""Server page evidence beyond the score: per-tool quality, schema drift, protocol eras, reliability, and their charts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.judging import text_hash
from pipeline.models import (
    CheckResult,
    DiscoveredEndpoint,
    EntryPoint,
    EraFacts,
    ExtractedTool,
    Finding,
    Judgement,
    LaunchSpec,
    ProbeOutcome,
    ProbeResult,
    Release,
    RepositoryFacts,
)
from pipeline.render import run_build
from pipeline.render.evidence import reliability, schema_drift
from pipeline.score import run_score
from pipeline.score.registry import infos
from tests.support import NOW, ListSource, analysis, entry, quiet

SEARCH = {"name": "search_docs", "description": "Search the docs. Use this when the user asks a question; returns matching pages.",
          "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "Words to look for."}}},
          "annotations": {"readOnlyHint": True, "destructiveHint": False}}
DELETE = {"name": "delete_page", "description": "Delete a page.", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}


SOURCE_EVIDENCE = {
    "repository": RepositoryFacts(host="github", url="https://github.com/acme/docs-mcp", stars=42, forks=3, open_issues=1,
                                  pushed_at=NOW - timedelta(days=9), releases=[Release(tag="v1.0.0", published_at=NOW - timedelta(days=20))]),
    "tools": [ExtractedTool(name=name, description=f"{name} from source", file="src/server.py", line=10 + i, language="python",
                            pattern="fastmcp-decorator") for i, name in enumerate(["search_docs", "delete_page", "export_all"])],
    "findings": [Finding(kind="dangerous_operation", severity="review", file="src/server.py", line=77, rule="shell-true",
                         detail="subprocess with shell=True <script>alert(1)</script>", excerpt="subprocess.run(cmd, shell=True)")],
    "endpoints": [DiscoveredEndpoint(url="https://docs.example/mcp", transport="streamable-http", line=12, checks=["mcp-path"])],
    "entry_points": [EntryPoint(registry="pypi", package="docs-mcp", command="uvx", args=["docs-mcp"], source="README")],
    "selected_files": ["src/server.py"],
}


def deep(server_id, at, tools, eras=None):
    return ProbeResult(server_id=server_id, kind="deep", started_at=at, duration_ms=50, transport="streamable-http", outcome=ProbeOutcome.ok,
                       era="modern", protocol_version="2026-07-28", handshake="server/discover", connect_ms=40, tools=tools, eras=eras,
                       checks=[CheckResult(name="schema_validity", outcome="valid", passed=True)])


def fast(server_id, at, ok, ms):
    return ProbeResult(server_id=server_id, kind="fast", started_at=at, duration_ms=ms, transport="streamable-http",
                       outcome=ProbeOutcome.ok if ok else ProbeOutcome.timeout, connect_ms=ms if ok else None)


def judgement(tool, model, value, offline=False):
    """A judgement of `tool`'s text as listed."""
    return Judgement(server_id="docs", tool_name=tool["name"], tool_hash=text_hash(tool), provider="offline" if offline else "p", model=model,
                     offline=offline,
                     judged_at=NOW, clarity=value, input_completeness=value, confidence=value)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    db = store.open_db(tmp_path_factory.mktemp("page") / "scoreboard.db")
    run_discover(db, sources=[ListSource("test", [entry("docs", description="Search documentation", remote_url="https://docs.example/mcp"),
                                                  entry("local", description="A stdio server we start ourselves",
                                                        launch=LaunchSpec(registry="pypi", package="local-mcp", transport="stdio"))])],
                 now=NOW - timedelta(days=5), progress=quiet(2))
    for hours in (1, 30):
        store.record_probe(db, fast("local", NOW - timedelta(hours=hours), ok=True, ms=5).model_copy(update={"transport": "stdio"}), None)
    db["servers"].update("docs", {"transport": "streamable-http"})
    old_search = {**SEARCH, "inputSchema": {"type": "object", "properties": {"query": {"type": "integer"}, "limit": {"type": "integer"}}}}
    store.record_probe(db, deep("docs", NOW - timedelta(days=4), [old_search, {**DELETE, "name": "purge"}]), None)
    store.record_probe(db, deep("docs", NOW - timedelta(days=2), [SEARCH, DELETE],
                                EraFacts(modern=True, legacy=True, discover=True, header_routing=False, list_cache_hints=None)), None)
    for day in range(10):  # ten days of monitoring: 4 probes a day, one failing on day 0
        for k in range(4):
            at = NOW - timedelta(days=day, hours=k * 5 + 1)
            store.record_probe(db, fast("docs", at, ok=not (day == 0 and k == 0), ms=100 + 10 * k), None)
    store.record_analysis(db, analysis().model_copy(update={"server_id": "docs"}).model_copy(
        update={"metrics": {**analysis().metrics, "extracted_tools": ["search_docs", "delete_page", "export_all"],
                            "extraction": {"complete": True, "cut": [], "left_out": 0}}, **SOURCE_EVIDENCE}))
    store.save_judgements(db, "docs", [judgement(SEARCH, "m1", 90).model_copy(update={"rationale": "m1 read it <b>well</b>"}),
                                       judgement(SEARCH, "m2", 50).model_copy(update={"rationale": "x" * 500, "directive": True}),
                                       judgement(DELETE, "offline", 40, True),
                                       judgement(old_search, "m3", 10)])  # the superseded text's reading is not shown
    run_score(db, servers=store.active_servers(db), now=NOW - timedelta(days=1), progress=quiet(2))
    run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(2))
    site = tmp_path_factory.mktemp("site")
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    return site, json.loads((site / "api" / "servers" / "docs.json").read_text()), (site / "servers" / "docs.html").read_text()


def test_per_tool_table_shows_documentation_annotations_interpretability_and_ambiguity(page):
    site, data, html = page
    tools = {t["name"]: t for t in data["tools"]}
    # [read_only, destructive, idempotent, open_world], the trailing undeclared ones left out (deviation 134)
    assert tools["search_docs"]["annotations"] == [True, False]
    assert "destructive ✗" in html and "idempotent?" in html
    # [total, title, description, inputs, annotations, output_schema] (deviation 134)
    assert len(tools["search_docs"]["docs"]) == 6 and tools["search_docs"]["docs"][0] > tools["delete_page"]["docs"][0]
    assert tools["search_docs"]["docs"][0] == pytest.approx(sum(tools["search_docs"]["docs"][1:]))
    judged = tools["search_docs"]["interpretability"]
    assert judged == {"value": pytest.approx(0.6 * 50 + 0.4 * 90), "average": 70.0, "models": 2, "offline": False, "spread": 40.0,
                      "ambiguous": True, "judges": [
                          {"model": "m1", "clarity": 90, "input_completeness": 90, "confidence": 90, "rationale": "m1 read it <b>well</b>"},
                          {"model": "m2", "clarity": 50, "input_completeness": 50, "confidence": 50, "directive": True,
                           "rationale": "x" * 300 + "…[trimmed, 500 chars]"}]}
    assert "m1 read it &lt;b&gt;well&lt;/b&gt;" in html and "<b>well</b>" not in html  # model output is escaped
    assert "m2: clarity 50, inputs 50, confidence 50 <span class=\"pill flag-critical\">directive</span>" in html
    assert tools["delete_page"]["interpretability"]["offline"] is True and "spread" not in tools["delete_page"]["interpretability"]
    assert "ambiguous</span> spread 40" in html and "(offline estimate)" in html


def test_schema_drift_against_source_and_between_captures(page):
    site, data, html = page
    drift = data["schema_drift"]
    assert drift["source_vs_runtime"] == {"missing_at_runtime": ["export_all"], "extra_at_runtime": [], "complete": True}
    change = drift["changes"][0]
    assert (change["added"], change["removed"], change["changed"]) == (["delete_page"], ["purge"], ["search_docs"])
    assert change["breaking"] == 2  # "limit" removed, "query" retyped
    assert "missing at runtime: export_all" in html and "<td>purge</td>" in html


def test_source_analysis_shows_what_was_read_with_file_and_line(page):
    site, data, html = page
    source = data["analysis"]  # the JSON holds the analysis whole, and the page what it shows of it (deviation 106)
    assert "source" not in data
    assert len(source["tools"]) == 3 and source["tools"][2] == {**source["tools"][2], "name": "export_all", "file": "src/server.py", "line": 12}
    assert 77 in {f["line"] for f in source["findings"]} and source["repository"]["stars"] == 42
    assert "<code>src/server.py:12</code>" in html and "42 stars, 3 forks, 1 open issues; last push" in html and "1 releases" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html  # a finding's text is escaped like any text
    assert "<code>https://docs.example/mcp</code> (streamable-http), line 12" in html and "<code>uvx docs-mcp</code> (stdio; README)" in html
    assert "maintenance_pulse" not in source["metrics"] and "not measured" in html  # a metric the source cannot show is not a zero


def test_protocol_eras_and_spec_readiness(page):
    site, data, html = page
    assert data["protocol"]["support"] == "dual" and data["protocol"]["negotiated"] == "2026-07-28"
    assert data["protocol"]["signals"] == {"modern path": True, "server/discover": True, "header routing": False, "list-cache hints": None}
    assert "header routing: no; list-cache hints: not tested" in html


def test_reliability_windows_and_chart(page):
    site, data, html = page
    windows = data["reliability"]["windows"]
    assert windows["24h"]["probes"] == 4 and windows["24h"]["uptime"] == 75.0
    # whole UTC days: today holds 3 of day 0's probes (the fourth, at 20:00, fell yesterday), the six days before 4 each
    assert windows["7d"]["probes"] == 3 + 4 * 6 and windows["30d"]["probes"] == 40 and windows["30d"]["uptime"] == 97.5
    assert 100 <= windows["30d"]["p50_ms"] <= 125 and windows["30d"]["p95_ms"] >= windows["30d"]["p50_ms"]
    days = data["reliability"]["days"]  # as columns (deviation 106)
    assert len(days["day"]) == len(days["uptime"]) == len(days["p95_ms"]) == 11 and days["uptime"][-1] == pytest.approx(100 * 2 / 3, abs=0.1)
    svg = ET.fromstring((site / "servers" / "docs.reliability.svg").read_text())
    assert svg.tag.endswith("svg") and not svg.findall(".//{http://www.w3.org/2000/svg}script")
    assert 'src="docs.reliability.svg"' in html and "97.50%" in html


def test_trend_chart_only_when_the_score_moved(page):
    site, data, html = page
    moved = len(set(data["history"]["composite"])) > 1
    assert data["trend_chart"] is moved and (site / "servers" / "docs.trend.svg").exists() is moved
    assert ("Steady at" in html) is not moved


def test_reliability_and_drift_functions_on_edges():
    assert reliability([], [], date(2026, 11, 29)) is None
    only_old = reliability([{"day": "2026-10-01", "runs": 3, "reachable": 3, "ok": 3, "latency_hist": {}}], [], date(2026, 11, 29))
    assert only_old["windows"]["7d"] == {"probes": 0, "uptime": None, "p50_ms": None, "p95_ms": None}
    assert schema_drift(None, None, []) == {"source_vs_runtime": None, "changes": []}


def test_schema_drift_counts_tools_only_at_runtime_when_the_source_was_read_whole():
    from pipeline.render.evidence import schema_drift

    runtime = [{"name": "a"}, {"name": "b"}]
    whole = {"ok": True, "metrics": {"extracted_tools": ["a", "z"], "extraction": {"complete": True, "cut": [], "left_out": 0}}}
    part = {"ok": True, "metrics": {"extracted_tools": ["a", "z"], "extraction": {"complete": False, "cut": ["dist/index.js"], "left_out": 0}}}
    unsaid = {"ok": True, "metrics": {"extracted_tools": ["a", "z"]}}  # an analysis from before coverage was recorded
    assert schema_drift(whole, runtime, [])["source_vs_runtime"] == {"missing_at_runtime": ["z"], "extra_at_runtime": ["b"], "complete": True}
    for partial in (part, unsaid):
        assert schema_drift(partial, runtime, [])["source_vs_runtime"] == {"missing_at_runtime": ["z"], "extra_at_runtime": [],
                                                                             "complete": False}


def test_a_local_server_shows_no_uptime_of_our_own_process(page):
    site, data, html = page
    local = json.loads((site / "api" / "servers" / "local.json").read_text())
    assert "reliability" not in local and not (site / "servers" / "local.reliability.svg").exists()
    assert "a local server runs only when we start it" in (site / "servers" / "local.html").read_text()


def test_how_to_gain_names_every_cap_first(tmp_path):
    """The page's "How to gain points" names each standing flag's cap before the rules' points, as `check` does."""
    db = store.open_db(tmp_path / "scoreboard.db")
    run_discover(db, sources=[ListSource("test", [entry("stage", description="Search documentation on a staging host",
                                                        remote_url="http://127.0.0.1:8000/mcp")])], now=NOW, progress=quiet(1))
    db["servers"].update("stage", {"transport": "streamable-http"})
    store.record_probe(db, deep("stage", NOW - timedelta(hours=1), [SEARCH]), None)
    run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(1))
    card = next(db.query("select flags from scores where server_id = 'stage' and rubric = 'scoreboard'"))
    capped = [f for f in json.loads(card["flags"]) if f["cap"] is not None]
    assert "Staging Endpoint" in {f["label"] for f in capped}
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    html = (tmp_path / "site" / "servers" / "stage.html").read_text()
    gain = html.split("<h2>How to gain points</h2>", 1)[1].split("</ul>", 1)[0]
    for flag in capped:
        assert f"{flag['label']} caps this score at {flag['cap']:g} while it stands" in gain
    assert gain.index("caps this score") < gain.index("points in")


def test_a_pending_dimensions_reason_is_left_out_of_the_json_only_when_its_rules_say_it():
    from pipeline.models import pending_reason
    from pipeline.render.pages import dimension_rows
    rules = [{"rule": r, "points": 0.0, "max_points": 10, "measured": False, "reason": why, "how_to_gain": None, "evidence": None}
             for r, why in (("a", "no handshake"), ("b", "no tools"))]
    pending = {"name": "d", "label": "D", "status": "pending", "score": None, "weight": 0, "optional": False, "rules": rules,
               "reason": pending_reason(r["reason"] for r in rules if not r["measured"])}
    assert pending["reason"] == "no handshake; no tools" and len(dimension_rows([pending])[0]) == 7  # derived: left out (deviation 134)
    assert dimension_rows([{**pending, "reason": "needs 2+ judges"}])[0][7] == "needs 2+ judges"
    assert dimension_rows([{**pending, "status": "not_applicable"}])[0][7] == "no handshake; no tools"


def test_the_score_history_is_columns_from_its_first_day_unless_a_day_is_missing():
    from pipeline.render.pages import history_columns
    month = [{"day": f"2026-11-{d:02d}", "composite": 50.0 + d, "grade": "C"} for d in range(1, 31)]
    assert history_columns(month) == {"since": "2026-11-01", "composite": [50.0 + d for d in range(1, 31)], "grade": ["C"] * 30}
    gap = month[:3] + month[4:]  # the 4th unscored: the days are listed (deviation 134)
    assert history_columns(gap)["day"] == [d["day"] for d in gap] and "since" not in history_columns(gap)
    assert history_columns([]) == {"day": [], "composite": [], "grade": []}
