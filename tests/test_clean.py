"""Text from strangers is cleaned once, when stored: whatever a server sends comes back renderable as HTML, XML, JSON and CSV.

The rules (pipeline/clean.py, methodology deviation 39) first, then a property test over any string, including lone
surrogates and controls, stored through the store and rendered the way the site renders it; then real hostile servers
in a run with others.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import store
from pipeline.clean import MAX_TEXT, clean, clean_text, isolate_bidi, terminal_text
from pipeline.discover import run_discover
from pipeline.models import CheckResult, LaunchSpec, ProbeOutcome, ProbeResult
from pipeline.probe import run_probe
from pipeline.probe.monitor import run_monitor
from pipeline.probe.sandbox import LocalProcessSandbox
from pipeline.render import run_build
from pipeline.render.environment import environment
from pipeline.render.finish import FORMULA_STARTS, LEADERBOARD_CSV_COLUMNS, _csv, csv_cell
from pipeline.render.rendering import json_file
from pipeline.sandbox.install import install_key
from pipeline.score import run_score
from pipeline.score.registry import infos
from pipeline.store.encoding import clean_json_text
from pipeline.text import hidden_characters
from tests.support import (
    NOW,
    REPO,
    TEST_SERVERS,
    ListSource,
    StaticInstaller,
    analysis,
    bidi_unbalanced,
    entry,
    faulty_entry,
    glama_item,
    page_problems,
    probe,
    python_installed,
    python_server,
    quiet,
    raw_server_spec,
)


def test_what_no_output_can_carry_is_replaced_and_line_breaks_stay():
    text = "a\ud800b\udfff c\x00\x01\x1b\x7f\x85\x9f d\ufffe\uffff\ufdd0\U0001fffe\U0010ffff e\t\n\r f\u202e\u200b"
    assert clean_text(text) == "a\ufffdb\ufffd c" + "\ufffd" * 6 + " d" + "\ufffd" * 5 + " e\t\n\r f\u202e\u200b"
    assert clean_text("plain text, unchanged") == "plain text, unchanged"
    assert clean({"k\x01": ["\ud800", 3, None, True, {"n": 1.5}]}) == {"k\ufffd": ["\ufffd", 3, None, True, {"n": 1.5}]}


def test_long_strings_are_capped_with_their_length():
    value = {"description": "x" * 100_000, "nested": [{"k": "y" * 20}]}
    capped = clean(value, limit=1000)
    assert len(capped["description"]) < 1100 and capped["description"].endswith("[trimmed, 100000 chars]")
    assert capped["nested"] == [{"k": "y" * 20}]
    assert len(clean_text("z" * (MAX_TEXT + 1))) < MAX_TEXT + 40


def test_json_columns_are_cleaned_inside_their_documents():
    assert clean_json_text('{"a":"\\u0001\\b","b":"\\ud800"}') == '{"a":"\ufffd\ufffd","b":"\ufffd"}'
    assert clean_json_text('["caf\u00e9\ud800"]') == '["caf\u00e9\ufffd"]'  # a raw character can only sit inside a string
    assert clean_json_text('{"a":"line\\nbreak"}') == '{"a":"line\\nbreak"}'
    assert json.loads(clean_json_text(json.dumps({"long": "x" * (MAX_TEXT + 10)})))["long"].endswith(f"[trimmed, {MAX_TEXT + 10} chars]")


def test_a_replaced_control_still_counts_as_a_hidden_character():
    assert hidden_characters(clean_text("Get a thing.\x01")) == ["U+FFFD"]
    assert hidden_characters("Get a thing.\n\tIndented.") == []


def test_bidi_controls_are_isolated_and_cannot_reach_past_their_text():
    assert isolate_bidi("plain, or right-to-left \u05e9\u05dc\u05d5\u05dd") == "plain, or right-to-left \u05e9\u05dc\u05d5\u05dd"
    assert isolate_bidi("a\u202eb") == "\u2068a\u202eb\u2069"
    # A stray PDI would close our isolate early; an opened isolate would swallow ours: both are balanced.
    assert isolate_bidi("\u2069\u202ex\u2066y") == "\u2068\u202ex\u2066y\u2069\u2069"
    for text in ("\u202e", "\u2069\u2069\u202d", "\u2066\u2067\u2068", "x\u2069\u202b"):
        assert bidi_unbalanced(text) and not bidi_unbalanced("before " + isolate_bidi(text) + " after")


def test_terminal_escape_sequences_are_stripped():
    assert terminal_text("\x1b[31mred\x1b[0m \x1b]0;title\x07x \x1b]8;;https://e.example\x1b\\link\x1b]8;;\x1b\\ \x9b2Jy") == "red x link y"
    assert terminal_text("over\rwrite\x08\x07 tab\tand\nnewline \ud800") == "overwrite tab\tand\nnewline \ufffd"
    assert terminal_text("an unterminated \x1b]0;title\nstill shown") == "an unterminated 0;title\nstill shown"
    # A terminal reorders line by line: each line with a bidi override is isolated on its own, the others are untouched.
    assert terminal_text("tool: \u202egnp.exe\nnext line") == "\u2068tool: \u202egnp.exe\u2069\nnext line"


def test_formula_cells_get_a_quote_and_numbers_stay_numbers():
    assert [csv_cell(v) for v in ("=1+1", "+1", "-cmd", "@SUM(A1)", "\tx", "\rx", "plain", "", None, -3.5, 7)] == [
        "'=1+1", "'+1", "'-cmd", "'@SUM(A1)", "'\tx", "'\rx", "plain", "", None, -3.5, 7]
    rows = list(csv.reader(io.StringIO(_csv([{"rank": 1, "id": "x", "name": "=HYPERLINK(\"http://e\")", "composite": -3.5, "tool_count": 0}]))))
    assert rows[0] == LEADERBOARD_CSV_COLUMNS
    assert rows[1][:4] == ["1", "x", "'=HYPERLINK(\"http://e\")", "-3.5"]


# ---------------------------------------------------------------- any string a server sends

INTERESTING = [0, 1, 7, 8, 9, 10, 13, 0x1B, 0x7F, 0x85, 0x9B, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0x202A, 0x202C, 0x202E, 0x2066, 0x2068,
               0x2069, 0x200B, 0xFDD0, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF, 0xFFFD, *map(ord, "=+-@<>&\"']]>\\")]
hostile_text = st.lists(st.one_of(st.sampled_from(INTERESTING), st.integers(0, 0x10FFFF)), max_size=40).map(lambda points: "".join(map(chr, points)))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    db = store.open_db(tmp_path_factory.mktemp("clean") / "scoreboard.db")
    run_discover(db, sources=[ListSource("test", [entry("s")])], now=NOW, progress=quiet(1))
    yield db
    db.close()


ENV = environment(infos())
PAGE = ENV.from_string('<p title="{{ value }}">{{ value }}</p><a href="#x">{{ value|truncate(10) }}</a> after')
FEED = ENV.get_template("feed.xml.j2")


def _renders_everywhere(text: str) -> None:
    """`text`, as stored, rendered as the site renders untrusted text: HTML (body and attribute), the Atom feed, JSON, CSV."""
    text.encode("utf-8")  # no lone surrogate is left to encode
    assert page_problems(PAGE.render(value=text)) == []
    atom = FEED.render(site_url="https://e.example/", updated="2026-11-29T00:00:00Z", changes=[
        {"id": "s", "name": text, "day": "2026-11-29", "previous_day": "2026-11-28", "previous": 1.0, "composite": 2.0, "grade": None}],
        alerts=[{"id": "https://e.example/status/index.html#a", "title": "Alert: a", "link": "https://e.example/status/index.html",
                 "updated": "2026-11-29T00:00:00Z", "summary": text}])  # a failed stage's error can quote what a server sent
    title = ET.fromstring(atom.encode("utf-8")).findall("{http://www.w3.org/2005/Atom}entry/{http://www.w3.org/2005/Atom}title")[-1].text or ""
    assert title.startswith(isolate_bidi(text).replace("\r\n", "\n").replace("\r", "\n"))  # an XML parser reads line breaks as \n
    assert page_problems(atom) == []
    assert json.loads(json_file({"name": text}).decode("utf-8")) == {"name": text}
    header, row = csv.reader(io.StringIO(_csv([{"name": text, "protocol_version": text, "composite": -3.5}]), newline=""))
    assert header == LEADERBOARD_CSV_COLUMNS and row[3] == "-3.5"
    for cell in (row[2], row[9]):
        assert not cell.startswith(FORMULA_STARTS) and cell == ("'" + text if text.startswith(FORMULA_STARTS) else text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_text)
def test_any_string_a_server_sends_comes_back_renderable(catalog, text):
    tool = {"name": text, "description": text, "inputSchema": {"type": "object", "properties": {text: {"type": "string", "description": text}}}}
    store.record_probe(catalog, ProbeResult(
        server_id="s", kind="deep", started_at=NOW, duration_ms=1, transport="stdio", outcome=ProbeOutcome.ok, detail=text, protocol_version=text,
        tools=[tool], instructions=text, server_info={"name": text, text: text},
        checks=[CheckResult(name="schema_validity", outcome=text, passed=True, detail=text)]), None)
    run_discover(catalog, sources=[ListSource("test", [entry("s", name=text, description=text, homepage=text)])], now=NOW, progress=quiet(1))
    _, stored = store.latest_probe(catalog, "s")
    row = catalog["servers"].get("s")
    strings = [stored.detail, stored.protocol_version, stored.instructions, stored.tools[0]["description"], stored.checks[0].detail,
               *stored.tools[0]["inputSchema"]["properties"], *stored.server_info.values(), row["name"], row["description"], row["homepage"]]
    strings = [value for value in strings if value is not None]  # an empty detail or description is stored as none
    assert all(value == clean_text(value) for value in strings)  # nothing stored is left to clean
    assert stored.tools[0]["description"] == clean_text(text)  # and nothing else was changed
    for value in strings:
        _renders_everywhere(value)


def test_a_surrogate_in_a_source_record_is_stored_clean_and_found_again_the_next_day(db):
    from pipeline.discover import CallableSource
    from pipeline.discover.glama import parse_glama

    hostile = glama_item(2, name="evil \ud800 \x01", description="d\ud800", namespace="o\ud800", slug="s\ud800" + "x" * 120,
                         repository={"url": "https://github.com/Own\ud800er/Rep\x01o"}, url="https://glama.ai/\ud800")
    payload = json.dumps({"servers": [glama_item(1), hostile], "pageInfo": {"hasNextPage": False}})  # the surrogate as a JSON escape
    counts = []
    for day in range(2):
        source = CallableSource("glama", lambda: parse_glama(json.loads(payload)))
        counts.append(run_discover(db, sources=[source], now=NOW + timedelta(days=day), progress=quiet(1)).counts)
    assert counts[0]["new"] == 2 and counts[1]["unchanged"] == 2 and counts[1]["new"] == 0  # the same two servers, not two more
    rows = {r["id"]: r for r in db.query("select * from servers")}
    assert len(rows) == 2 and any(r["name"] == "evil \ufffd \ufffd" for r in rows.values())
    for table in ("servers", "server_keys", "source_records"):
        for row in db.query(f"select * from {table}"):
            assert all(v == clean_text(v, len(v)) for v in row.values() if isinstance(v, str)), row


# ---------------------------------------------------------------- real hostile servers, in a run with others

TITLE = '=HYPERLINK("http://evil.example","x") \x01\ud800 \u202eevil\x1b[2J'


def hostile_stdio() -> LaunchSpec:
    return LaunchSpec(registry="pypi", package="hostile-stdio", command="python", args=[str(TEST_SERVERS / "hostile_text.py"), "tools"],
                      transport="stdio")


def test_hostile_servers_are_stored_clean_the_run_goes_on_and_the_site_stays_valid(db, settings, tmp_path):
    stdio, good = hostile_stdio(), raw_server_spec("good")
    with python_server("hostile_text.py", "refuse") as refusing, python_server("hostile_text.py", "tools") as listing:
        run_discover(db, sources=[ListSource("test", [
            entry("hostile-refuse", transport="streamable-http", remote_url=refusing, name=TITLE, description=TITLE),
            entry("hostile-tools", transport="streamable-http", remote_url=listing),
            faulty_entry("hostile-stdio", stdio).model_copy(update={"name": TITLE}), faulty_entry("good", good)])], now=NOW, progress=quiet(1))
        servers = store.active_servers(db)
        for server in servers:  # scored the day before on earlier evidence, so the hostile probes change scores the feed lists
            store.record_analysis(db, analysis().model_copy(update={"server_id": server.id}))
            store.record_probe(db, probe().model_copy(update={"server_id": server.id, "started_at": NOW - timedelta(days=1)}), None)
        run_score(db, servers=servers, now=NOW - timedelta(days=1), progress=quiet(4))
        bounded = settings.model_copy(update={"call_timeout": 2.0, "probe_timeout": 8.0, "start_timeout": 5.0, "allow_private": True,
                                              "concurrency": 4})
        installer = StaticInstaller({install_key(s): python_installed() for s in (stdio, good)})
        own = LocalProcessSandbox(bounded.start_timeout)  # the test's own servers, on the pipeline's venv
        deep = run_probe(db, servers=servers, installer=installer, sandbox=own, settings=bounded, now=NOW, progress=quiet(4))
        fast = run_monitor(db, servers=servers, installer=installer, sandbox=own, settings=bounded, now=NOW, progress=quiet(4))
    assert "storage_failed" not in deep.counts and "storage_failed" not in fast.counts
    stored = {(r["server_id"], r["kind"]): r for r in db.query("select server_id, kind, outcome, detail, evidence from probe_runs")}
    assert set(stored) == {(s.id, kind) for s in servers for kind in ("deep", "fast")}  # every server, both suites: the run went on
    assert stored[("good", "deep")]["outcome"] == "ok"
    assert stored[("hostile-tools", "deep")]["outcome"] == "ok"  # its lone surrogates, read as U+FFFD, lose neither handshake nor tools
    refused = stored[("hostile-refuse", "deep")]
    assert refused["outcome"] == "protocol_error" and "=cmd|" in refused["detail"]
    assert all(clean_text(text, len(text)) == text for row in stored.values() for text in (row["detail"] or "", row["evidence"]))
    listed = store.latest_probe(db, "hostile-stdio")[1]
    description = listed.tools[0]["description"]
    assert listed.outcome == ProbeOutcome.ok and "\ufffd" in description and "\u202e" in description and "\x01" not in description
    checks = {c.name: c for c in listed.checks}
    assert "U+0001" in checks["hidden_characters"].detail  # measured on the text as received, before it was cleaned

    run_score(db, servers=servers, now=NOW, progress=quiet(4))
    site = tmp_path / "site"
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    feed = ET.fromstring((site / "feed.xml").read_bytes())
    titles = [e.find("{http://www.w3.org/2005/Atom}title").text for e in feed.iter("{http://www.w3.org/2005/Atom}entry")]
    assert any(title.startswith(isolate_bidi(clean_text(TITLE)) + ":") for title in titles)  # the \x01 in a title once broke the feed
    for page in sorted(site.rglob("*.html")) + [site / "feed.xml"]:
        assert page_problems(page.read_bytes().decode("utf-8")) == [], page
    header, *rows = csv.reader(io.StringIO((site / "downloads" / "leaderboard.csv").read_text(encoding="utf-8"), newline=""))
    assert not any(cell.startswith(FORMULA_STARTS) for row in rows for cell in row if not _number(cell))
    assert any(row[header.index("name")].startswith("'=HYPERLINK") for row in rows)
    assert json.loads((site / "api" / "servers" / "hostile-refuse.json").read_bytes().decode("utf-8"))["server"]["name"] == clean_text(TITLE)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_cli_prints_no_terminal_escape_sequences(transport):
    command = [sys.executable, "-m", "pipeline.cli"]
    if transport == "http":
        with python_server("hostile_text.py", "tools") as url:
            done = subprocess.run([*command, "probe", url, "--timeout", "2"], capture_output=True, cwd=REPO, timeout=60)
    else:
        line = f"{sys.executable} {TEST_SERVERS / 'hostile_text.py'} tools"
        done = subprocess.run([*command, "check", "--stdio", line, "--timeout", "2"], capture_output=True, cwd=REPO, timeout=60)
    shown = (done.stdout + done.stderr).decode("utf-8")
    assert "get_" in shown and "Traceback" not in shown  # the hostile tool was listed
    assert not any(c in shown for c in "\x1b\x9b\x9d\x07\x08\r\x00\x01")
