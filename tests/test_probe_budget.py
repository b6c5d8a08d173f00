"""One time budget per probe: a server that never answers costs one wait, not one per step; after a 429 nothing more
is sent; what was not asked is not measured; over HTTP+SSE each era is asked on a connection of its own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.config import Settings
from pipeline.models import ProbeOutcome, Server
from pipeline.probe import probe_server
from pipeline.probe.deep import deep_probe
from pipeline.probe.fast import raw_fast_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import LocalProcessSandbox, Running
from tests.servers.hostile_http import serving
from tests.support import REPO, TEST_SERVERS, python_server

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
CALL = 1.5  # one exchange's timeout in these tests
BUDGET = 20.0  # far more than one wait: a probe that waited at each step would show it


def probe(url: str, transport: str = "streamable-http", timeout: float = CALL, budget: float = BUDGET):
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("hostile", Running(transport=transport, url=url), limits=Limits(timeout=timeout, allow_private=True),
                                          total_timeout=budget, now=NOW))
    return result, time.monotonic() - started


def stdio_probe(fault: str, timeout: float = CALL, budget: float = BUDGET):
    running = Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "raw_stdio.py"), fault))
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("hostile", running, limits=Limits(timeout=timeout, allow_private=True), total_timeout=budget, now=NOW))
    return result, time.monotonic() - started


def checks(result) -> dict:
    return {c.name: c for c in result.checks}


@pytest.mark.parametrize("path, transport, words, sent", [
    ("/silent", "streamable-http", "no complete answer", ["POST /silent"]),
    ("/slowloris", "streamable-http", "no complete answer", ["POST /slowloris"]),
    ("/keepalive", "streamable-http", "no complete answer", ["POST /keepalive"]),
    ("/sse", "sse", "no endpoint event", ["GET /sse"]),
])
def test_a_server_that_never_answers_costs_one_wait_and_is_asked_nothing_more(path, transport, words, sent):
    with serving() as (origin, hostile):
        result, took = probe(origin + path, transport)
        assert result.outcome is ProbeOutcome.timeout and words in result.detail, result.detail
        assert took < CALL + 1.5  # one exchange's wait, not one per step (the old probe took 5 of them)
        assert hostile.requests == sent  # no other era, no SSE fallback, no well-known fetch, no setup page, no session
    skipped = checks(result)["skipped"]
    assert skipped.passed is None and skipped.detail.startswith("skipped: the server did not answer")
    # Not measured is None, never "no".
    assert result.eras.model_dump() == dict.fromkeys(("modern", "legacy", "discover", "header_routing", "list_cache_hints"))
    http = result.http
    assert (http.tls_version, http.cert_valid, http.server_card, http.html_setup_page) == (None, None, None, None)
    assert http.auth_required is (None if path in ("/silent", "/slowloris") else False)  # a stream began: 200, no gate


def test_one_budget_bounds_every_wait_whatever_the_call_timeout():
    with serving() as (origin, _):
        result, took = probe(origin + "/silent", timeout=60, budget=2)
    assert result.outcome is ProbeOutcome.timeout and "within 2 s" in result.detail and took < 3.5, (took, result.detail)


def test_an_endpoint_that_cannot_be_reached_has_no_endpoint_facts():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening
        result, _ = probe(f"http://127.0.0.1:{closed.getsockname()[1]}/mcp")
    assert result.outcome is ProbeOutcome.unreachable
    assert (result.http.auth_required, result.http.server_card, result.http.html_setup_page) == (None, None, None)


def test_the_health_check_of_a_silent_server_costs_one_wait_too():
    with serving() as (origin, hostile):
        started = time.monotonic()
        limits = Limits(timeout=CALL, allow_private=True)
        result = anyio.run(lambda: raw_fast_probe("hostile", origin + "/silent", limits=limits, total_timeout=BUDGET, now=NOW))
        assert result.outcome is ProbeOutcome.timeout and time.monotonic() - started < CALL + 1.5
        assert hostile.requests == ["POST /silent"]  # `initialize` is not asked of a server that did not answer `server/discover`


@pytest.mark.parametrize("path, transport, sent", [
    ("/limited", "streamable-http", ["POST /limited"]),
    ("/limited", "sse", ["GET /limited"]),
    ("/limited-later", "streamable-http", ["POST /limited-later", "POST /limited-later"]),  # discover answered, initialize 429
])
def test_after_a_429_nothing_more_goes_to_the_server(path, transport, sent):
    with serving() as (origin, hostile):
        result, took = probe(origin + path, transport)
        assert result.outcome is ProbeOutcome.rate_limited and "Retry-After: 120" in result.detail, result.detail
        assert result.retry_after_s == 120 and took < 2
        assert hostile.requests == sent  # no GET, no well-known fetch, no other era, no SSE fallback, no session
    assert result.http.server_card is None and checks(result)["skipped"].passed is None
    assert result.http.auth_required is (None if path == "/limited" else False)  # a 429 says nothing of a gate; a 200 does


def test_a_429_to_the_opt_out_fetch_ends_the_catalog_probe_there():
    settings = Settings(allow_private=True, call_timeout=CALL)
    with serving(all_limited=True) as (origin, hostile):
        server = Server(id="limited", name="limited", transport="streamable-http", remote_url=origin + "/limited", first_seen_at=NOW,
                        last_seen_at=NOW)
        result = anyio.run(lambda: probe_server(server, None, LocalProcessSandbox(), settings, NOW, "deep"))
        assert hostile.requests == ["GET /.well-known/mcp-scoreboard"]
    assert result.outcome is ProbeOutcome.rate_limited and result.retry_after_s == 120, result.detail


def test_a_silent_stdio_server_costs_the_budget_not_a_wait_per_step():
    """The SDK waits 10 s for `server/discover` over stdio whatever its read timeout, then as long again for
    `initialize`: only the probe's budget bounds a server that never answers."""
    result, took = stdio_probe("silent", timeout=60, budget=2)
    assert result.outcome is ProbeOutcome.timeout and "no complete handshake within 2 s" in result.detail, result.detail
    assert took < 2 + 2.5, took  # and stopping the server
    assert "skipped: the server did not answer" in checks(result)["skipped"].detail and result.eras is None


def test_a_stdio_server_that_falls_silent_after_its_handshake_keeps_what_was_found():
    result, took = stdio_probe("mute-after-initialize", budget=2.5)
    assert result.outcome is ProbeOutcome.ok and result.era == "legacy" and result.server_info["name"] == "raw-mute-after-initialize"
    assert checks(result)["ping"].outcome == "timeout" and took < 2.5 + 2.5
    assert "ran out" in checks(result)["skipped"].detail and result.tools is None  # not asked in time: not measured


@pytest.fixture(scope="module")
def sdk_over_sse():
    with python_server("dual_http.py", "sse", path="/sse") as url:
        yield url


def test_over_http_sse_the_legacy_era_is_asked_on_a_stream_of_its_own(sdk_over_sse):
    """An SDK 2.x server speaks both eras, but settles a connection's era at its first request: asked `initialize` on
    the stream where `server/discover` answered, it refuses; on a fresh stream it answers."""
    result, _ = probe(sdk_over_sse, "sse", timeout=10)
    assert result.outcome is ProbeOutcome.ok and result.transport == "sse", result.detail
    assert checks(result)["era_negotiation"].outcome == "dual" and result.eras.modern is True and result.eras.legacy is True
    methods = [e["method"] for e in result.exchanges]
    assert methods[:5] == ["GET (event stream)", "server/discover", "GET (event stream)", "initialize", "notifications/initialized"]
    assert result.era == "modern" and [t["name"] for t in result.tools] == ["now"]


ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def interpreter_start() -> float:
    """What starting the CLI's interpreter and its imports costs on this machine right now (a loaded one is slow)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import pipeline.cli, pipeline.check"], env=ENV, check=True, timeout=120)
    return time.monotonic() - started


def run_cli(*args: str, budget: float) -> tuple[dict, float]:
    env = {**ENV, "SCOREBOARD_CALL_TIMEOUT": "60", "SCOREBOARD_PROBE_TIMEOUT": str(budget)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "probe", *args, "--json"], capture_output=True, text=True, env=env, timeout=120)
    return json.loads(done.stdout), time.monotonic() - started


def test_scoreboard_probe_classifies_silent_servers_within_its_budget():
    """End to end, the interpreter's start included: the budget (SCOREBOARD_PROBE_TIMEOUT) bounds the whole probe even
    when one request may take a minute."""
    with serving() as (origin, _):
        seen, took = run_cli(origin + "/keepalive", budget=3)
        start = interpreter_start()
    assert seen["outcome"] == "timeout" and seen["http"]["server_card"] is None and took < start + 3 + 2, (took, start)
    seen, took = run_cli("--stdio", f"{sys.executable} {TEST_SERVERS / 'raw_stdio.py'} silent", budget=3)
    start = interpreter_start()
    assert seen["outcome"] == "timeout" and took < start + 3 + 3, (took, start)  # and stopping the server


def test_the_default_budget_is_twelve_seconds():
    assert Settings().probe_timeout == 12.0
