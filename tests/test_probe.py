"""The prober against the real reference servers, and against servers that fail on purpose."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from pathlib import Path

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.eras import era_sentence
from pipeline.models import LaunchSpec
from pipeline.probe import run_probe
from pipeline.probe.sandbox import LocalProcessSandbox
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.sandbox.bubblewrap import SLOTS, UID_BASE
from pipeline.sandbox.choice import choose
from pipeline.sandbox.install import Installed, Installer, install_key
from pipeline.sandbox.limits import processes
from pipeline.score import run_score
from pipeline.score.registry import infos
from tests.support import NOW, TEST_SERVERS, ListSource, StaticInstaller, faulty_entry, leftover_processes, python_installed, raw_server_spec


def quiet(stage, total):
    return Progress(stage, total, stream=io.StringIO())


@pytest.fixture(scope="module")
def probed_catalog(tmp_path_factory, settings, installed):
    from pipeline.store import open_db

    db = open_db(tmp_path_factory.mktemp("probe") / "scoreboard.db")
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet("discover", 1))
    servers = store.active_servers(db)
    report = run_probe(db, servers=servers, installer=Installer(settings.cache_dir), settings=settings, now=NOW,
                       progress=quiet("probe", len(servers)))
    results = {s.id: store.latest_probe(db, s.id)[1] for s in servers}
    return db, report, results


EXPECTED = {
    # id: (era, handshake, transport, tools that must be listed)
    "mcp-server-time": ("modern", "server/discover", "stdio", {"get_current_time", "convert_time"}),
    "mcp-server-fetch": ("modern", "server/discover", "stdio", {"fetch"}),
    "mcp-server-git": ("modern", "server/discover", "stdio", {"git_status", "git_log"}),
    "server-everything": ("legacy", "initialize", "stdio", {"echo", "get-sum"}),
    "server-everything-http": ("legacy", "initialize", "streamable-http", {"echo", "get-sum"}),
    "server-everything-sse": ("legacy", "initialize", "sse", {"echo", "get-sum"}),
    "server-basic-vanillajs": ("legacy", "initialize", "stdio", {"get-time"}),
    "server-memory": ("legacy", "initialize", "stdio", {"read_graph", "create_entities"}),
    "server-filesystem": ("legacy", "initialize", "stdio", {"list_directory", "read_text_file"}),
}


@pytest.mark.parametrize("server_id", sorted(EXPECTED))
def test_real_server_is_probed_in_its_own_era(probed_catalog, server_id):
    _, _, results = probed_catalog
    era, handshake, transport, tools = EXPECTED[server_id]
    result = results[server_id]
    assert result.outcome.value == "ok", result.detail
    assert (result.era, result.handshake, result.transport) == (era, handshake, transport)
    assert result.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")
    assert tools <= {t["name"] for t in result.tools}
    assert result.server_info and result.server_info["name"] and result.server_info["version"]
    assert 0 < result.connect_ms < 30_000
    checks = {c.name: c for c in result.checks}
    assert checks["schema_validity"].passed is True
    assert checks["error_unknown_tool"].passed is True
    assert checks["error_unknown_tool"].outcome in ("jsonrpc_error", "is_error_result")
    assert checks["invalid_messages"].passed is True
    if era == "legacy":
        assert checks["ping"].passed is True and result.ping_ms is not None
    assert result.package_version and result.package_hash.startswith(("sha256:", "sha512-")) and result.install_method in ("wheel", "npm")


def test_handshake_metadata_is_captured(probed_catalog):
    _, _, results = probed_catalog
    everything = results["server-everything"]
    assert everything.server_info["title"] == "Everything Reference Server"
    assert everything.instructions and len(everything.instructions) > 100
    assert "tools" in everything.capabilities and everything.prompts
    memory = results["server-memory"]
    assert "memory://knowledge-graph" in {r["uri"] for r in memory.resources}
    # TS v1 servers answer an unknown tool with an isError result; Python SDK servers with a JSON-RPC error.
    assert {c.name: c.outcome for c in everything.checks}["error_unknown_tool"] == "is_error_result"
    assert {c.name: c.outcome for c in results["mcp-server-time"].checks}["error_unknown_tool"] == "jsonrpc_error"


def test_streamable_http_servers_get_raw_era_and_endpoint_evidence(probed_catalog):
    _, _, results = probed_catalog
    http = results["server-everything-http"]  # TS SDK v1: refuses server/discover, answers initialize on an SSE stream
    assert http.eras is not None and (http.eras.modern, http.eras.legacy, http.eras.discover) == (False, True, False)
    assert http.eras.header_routing is None and http.eras.list_cache_hints is None  # modern-only evidence: not applicable
    assert {c.name: c.outcome for c in http.checks}["era_negotiation"] == "legacy"
    assert [(e["method"], e["status"]) for e in http.exchanges][:2] == [("server/discover", 400), ("initialize", 200)]  # stored raw
    assert http.http is not None and http.http.auth_required is False and http.http.tls_version is None  # plain loopback HTTP
    assert http.http.server_card is False and http.http.html_setup_page is False
    # Over stdio the session's handshake asked server/discover first: a legacy session means the modern era failed.
    stdio = results["server-everything"]
    assert (stdio.eras.modern, stdio.eras.legacy, stdio.eras.header_routing) == (False, True, None) and stdio.http is None
    assert stdio.exchanges is None and {c.name: c.outcome for c in stdio.checks}["era_negotiation"] == "legacy"
    # A modern one is asked initialize in a start of its own: the Python SDK serves one era per connection, and both per server.
    time_server = results["mcp-server-time"]
    assert (time_server.eras.modern, time_server.eras.legacy, time_server.eras.header_routing) == (True, True, None)
    assert time_server.eras.list_cache_hints is True  # ttlMs on tools/list, as the session saw it
    assert {c.name: c.outcome for c in time_server.checks}["era_negotiation"] == "dual"
    assert [(e["method"], e["failure"]) for e in time_server.exchanges] == [("initialize", None), ("notifications/initialized", None)]
    sse = results["server-everything-sse"]  # the legacy HTTP+SSE transport: the same server, the same era, seen on the raw layer too
    assert (sse.eras.modern, sse.eras.legacy) == (False, True) and {c.name: c.outcome for c in sse.checks}["era_negotiation"] == "legacy"
    # Each era on a stream of its own: a server settles a connection's era at its first request.
    assert [e["method"] for e in sse.exchanges][:4] == ["GET (event stream)", "server/discover", "GET (event stream)", "initialize"]
    assert sse.exchanges[0]["status"] == 200 and sse.http.html_setup_page is False


def test_a_reference_servers_page_says_what_its_protocol_eras_mean(probed_catalog, tmp_path):
    """The official everything server answers only the legacy era: its page says what was tried, what answered and what that
    means for a client, and what the outside-in score's Impaired beside it means; the time server answers both."""
    db, _, results = probed_catalog
    copy = sqlite3.connect(tmp_path / "scored.db")
    db.conn.backup(copy)  # scored and built apart: the module's other tests read the probed database as the probe left it
    copy.close()
    scored = store.open_db(tmp_path / "scored.db")
    servers = store.active_servers(scored)
    run_score(scored, servers=servers, now=NOW, progress=quiet("score", len(servers)))
    run_build(scored, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    everything = (tmp_path / "site" / "servers" / "server-everything-http.html").read_text()
    assert "We tried both protocol eras: the legacy handshake (initialize, MCP 2024-11-05 to 2025-11-25) answered, the modern " \
           "handshake (server/discover, MCP 2026-07-28) did not. Clients that fall back to initialize, as most do today, connect; " \
           "one that speaks only 2026-07-28 cannot." in everything
    assert "status legacy only, modern fails" in everything and "verdict Impaired" in everything
    assert "<p>legacy only, modern fails: it answers only the legacy era, so a client that speaks only MCP 2026-07-28 cannot " \
           "connect (Impaired).</p>" in everything
    eras = results["mcp-server-time"].eras  # both, unless its second start's initialize was slower than the call timeout
    said = era_sentence(eras.modern, eras.legacy)
    assert said.startswith("We tried both protocol eras") and said in (tmp_path / "site" / "servers" / "mcp-server-time.html").read_text()


def test_an_mcp_apps_server_has_its_views_read(probed_catalog):
    _, _, results = probed_catalog
    apps = results["server-basic-vanillajs"]  # one tool linked to one ui:// view, served as text/html;profile=mcp-app
    assert apps.apps is not None and (apps.apps.views, apps.apps.readable, apps.apps.html_mime) == (1, 1, 1)
    assert {c.name: c.passed for c in apps.checks}["mcp_apps"] is True
    assert any(r["uri"].startswith("ui://") for r in apps.resources)


def test_raw_evidence_and_snapshots_are_stored(probed_catalog, settings):
    db, report, _ = probed_catalog
    assert report.counts == {"ok": len(EXPECTED)} and report.failures == 0
    # Packages from the registries run in the sandbox: sandbox runs, naming the backend.
    rows = list(db.query("select p.server_id, p.evidence, p.tool_count, l.tools from probe_runs p join tool_lists l "
                         "on l.server_id = p.server_id and l.content_hash = p.tools_hash where p.kind = 'sandbox'"))
    assert len(rows) == len(EXPECTED)
    for row in rows:
        evidence = json.loads(row["evidence"])  # its tool list stored once, apart (deviation 110)
        assert evidence["server_id"] == row["server_id"] and "tools" not in evidence and len(json.loads(row["tools"])) == row["tool_count"]
        assert evidence["sandbox"] == choose(settings.sandbox).describe()
    snapshots = list(db.query("select server_id, content_hash, tool_count from tool_snapshots"))
    assert len(snapshots) == len(EXPECTED) and all(len(s["content_hash"]) == 64 for s in snapshots)
    # stdio and HTTP servers were both stopped: nothing of ours is left running.
    assert leftover_processes("scoreboard-sandbox-") == []  # no launcher
    assert not [pid for pid, uid, state in processes() if UID_BASE <= uid < UID_BASE + SLOTS and state not in "ZX"]  # nothing sandboxed


def test_every_failure_is_classified_and_the_run_goes_on(db, settings, installed):
    http_never = LaunchSpec(registry="pypi", package="never", command="python", args=[str(TEST_SERVERS / "never_listens.py")],
                            transport="streamable-http", url="http://127.0.0.1:{port}/mcp")
    http_exits = http_never.model_copy(update={"package": "exits", "args": [*http_never.args, "exit"]})
    missing = LaunchSpec(registry="pypi", package="missing", command="no-such-command", transport="stdio")
    uninstallable = LaunchSpec(registry="pypi", package="uninstallable", command="x", transport="stdio")
    time_spec = next(e.launch for e in LocalCatalogSource().read().entries if e.id == "mcp-server-time")
    cases = {
        "exit-early": raw_server_spec("exit-early"),
        "silent": raw_server_spec("silent"),
        "garbage": raw_server_spec("garbage"),
        "bad-version": raw_server_spec("bad-version"),
        "crash-on-list": raw_server_spec("crash-on-list"),
        "bad-schema": raw_server_spec("bad-schema"),
        "http-never-listens": http_never,
        "http-exits": http_exits,
        "missing-command": missing,
        "uninstallable": uninstallable,
        "mcp-server-time": time_spec,
    }
    results = {install_key(spec): python_installed() for spec in cases.values()}
    results[install_key(missing)] = Installed(ok=True, executable=Path("/nonexistent/no-such-command"), path_dirs=())
    results[install_key(uninstallable)] = Installed(ok=False, error="pip install uninstallable: exit 1: No matching distribution")
    results[install_key(time_spec)] = installed[install_key(time_spec)]
    run_discover(db, sources=[ListSource("test", [faulty_entry(k, v) for k, v in cases.items()])], now=NOW, progress=quiet("discover", 1))
    bounded = settings.model_copy(update={"call_timeout": 1.0, "probe_timeout": 4.0, "start_timeout": 2.0, "concurrency": 6})
    servers = store.active_servers(db)
    started = time.monotonic()
    # The test's own servers run on the pipeline's venv: started as the user's own command would be, not sandboxed.
    report = run_probe(db, servers=servers, installer=StaticInstaller(results), sandbox=LocalProcessSandbox(bounded.start_timeout), settings=bounded,
                       now=NOW, progress=quiet("probe", len(servers)))
    elapsed = time.monotonic() - started
    outcome = {s.id: store.latest_probe(db, s.id)[1] for s in servers}
    assert {k: v.outcome.value for k, v in outcome.items()} == {
        "exit-early": "start_failed",
        "silent": "timeout",
        "garbage": "protocol_error",
        "bad-version": "protocol_error",
        "crash-on-list": "crashed",
        "bad-schema": "ok",
        "http-never-listens": "start_failed",
        "http-exits": "start_failed",
        "missing-command": "start_failed",
        "uninstallable": "install_failed",
        "mcp-server-time": "ok",
    }
    assert "FOO_API_KEY" in outcome["exit-early"].detail  # the server's own stderr explains it
    assert "did not listen" in outcome["http-never-listens"].detail
    assert "EADDRINUSE" in outcome["http-exits"].detail
    assert "No matching distribution" in outcome["uninstallable"].detail
    bad_schema = {c.name: c for c in outcome["bad-schema"].checks}  # the one tool with a bad schema is kept and named
    assert bad_schema["tools/list"].passed and not bad_schema["schema_validity"].passed and outcome["bad-schema"].tools[0]["name"] == "get_thing"
    assert outcome["garbage"].detail.startswith("unparseable output")
    assert (outcome["exit-early"].exit_code, outcome["crash-on-list"].exit_code) == (3, 1)
    assert outcome["crash-on-list"].detail.startswith("the server exited with code 1 during tools/list")
    assert {c.name: c.passed for c in outcome["garbage"].checks}["invalid_messages"] is False
    assert "Unsupported protocol version" in outcome["bad-version"].detail
    assert report.failures == 9 and report.counts["ok"] == 2
    assert elapsed < 20, f"faults must be bounded; the run took {elapsed:.1f}s"
    assert leftover_processes(str(TEST_SERVERS)) == []


def test_a_server_cannot_fill_the_disk_with_its_stderr(tmp_path):
    """The sandbox caps every file a server writes; its stderr log is one, so endless logging stops at the cap."""
    import signal
    import subprocess

    import anyio

    from pipeline.lifetime import guarded
    from pipeline.probe.sandbox import MAX_FILE_BYTES, LocalProcessSandbox

    async def flood():
        async with LocalProcessSandbox().start(raw_server_spec("stderr-flood"), python_installed()) as running:
            # A module planted where the server runs (by an earlier start of it) must not run before the limit is set.
            (running.cwd / "resource.py").write_text("raise SystemExit('a planted module ran')\n")
            done = subprocess.run(guarded([running.command, *running.args], running.max_file_bytes), env=running.env, cwd=running.cwd,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=running.errlog, timeout=60)
            running.errlog.flush()
            return done.returncode, running.stderr_path.stat().st_size

    code, size = anyio.run(flood)
    assert code != 0 and MAX_FILE_BYTES // 2 < size <= MAX_FILE_BYTES  # it flooded, up to the cap; a Python server then dies of "File too large"
    other = subprocess.run(guarded(["/bin/sh", "-c", "exec yes > big.txt"], max_file_bytes=1000), cwd=tmp_path, timeout=30)
    assert other.returncode == -signal.SIGXFSZ and (tmp_path / "big.txt").stat().st_size == 1000  # others are stopped by the kernel
    piped = subprocess.Popen(guarded(["/usr/bin/yes"]), stdout=subprocess.PIPE)
    piped.stdout.read(10)
    piped.stdout.close()
    assert piped.wait(10) == -signal.SIGPIPE  # the guardian hands the server the default SIGPIPE, not Python's "ignore"


def test_real_installer_records_failures(tmp_path):
    bad = LaunchSpec(registry="pypi", package="not a valid requirement!!", command="x", transport="stdio")
    results = Installer(tmp_path, timeout=120).install([bad])
    result = results[install_key(bad)]
    assert result.ok is False and result.failure == "install_failed" and "not a valid pypi package name" in result.error  # refused before pip


class ExplodingSandbox:
    """A sandbox whose start fails in an unforeseen way (not a StartFailed)."""

    def start(self, spec, installed):
        raise PermissionError("cannot create the scratch directory")


def test_an_unforeseen_sandbox_error_is_recorded_and_the_run_goes_on(db, settings):
    entries = [faulty_entry(f"raw-{i}", raw_server_spec("good").model_copy(update={"package": f"raw-{i}"})) for i in range(3)]
    run_discover(db, sources=[ListSource("test", entries)], now=NOW, progress=quiet("discover", 1))
    installer = StaticInstaller({install_key(e.launch): python_installed() for e in entries})
    servers = store.active_servers(db)
    report = run_probe(db, servers=servers, installer=installer, sandbox=ExplodingSandbox(), settings=settings, now=NOW, progress=quiet("probe", 3))
    assert report.counts == {"start_failed": 3}
    assert all("PermissionError" in store.latest_probe(db, s.id)[1].detail for s in servers)


def test_fast_probes_meet_every_server_in_its_era_and_http_ones_on_the_raw_layer(probed_catalog, settings):
    from pipeline.probe.monitor import run_monitor

    db, _, _ = probed_catalog
    servers = store.active_servers(db)
    report = run_monitor(db, servers=servers, installer=Installer(settings.cache_dir), settings=settings, now=NOW,
                         progress=quiet("monitor", len(servers)))
    assert report.counts == {"ok": len(EXPECTED)}
    fast = {r["server_id"]: json.loads(r["evidence"]) for r in db.query("select server_id, evidence from probe_runs where kind = 'fast'")}
    http = fast["server-everything-http"]
    assert (http["era"], http["handshake"], http["protocol_version"]) == ("legacy", "initialize", "2025-11-25")
    assert http["connect_ms"] > 0 and http["ping_ms"] > 0
    assert [e["method"] for e in http["exchanges"]] == ["server/discover", "initialize", "notifications/initialized", "ping"]
    assert fast["mcp-server-time"]["era"] == "modern" and fast["mcp-server-time"]["exchanges"] is None  # stdio: the SDK session
    sse = fast["server-everything-sse"]  # over HTTP+SSE, also on the raw layer: the stream, the handshake, a ping
    assert (sse["era"], sse["transport"], sse["ping_ms"] is not None) == ("legacy", "sse", True)
    assert [e["method"] for e in sse["exchanges"]] == ["GET (event stream)", "server/discover", "initialize", "notifications/initialized", "ping"]
