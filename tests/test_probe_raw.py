"""The raw HTTP layer against a zoo of hostile servers: each failure classified exactly, within its bounds.

And dual-era negotiation against a real MCPServer over Streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.eras import negotiate
from pipeline.probe.raw import Failure, Limits, exchange, probe_client
from tests.support import python_server, threaded_server

LIMITS = Limits(timeout=1.5, max_bytes=200_000, max_events=50, max_redirects=3, allow_private=True)


def reply(body: bytes, kind: str = "application/json", status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n".encode() + body


def rpc_result(result: dict, request_id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


async def _zoo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One misbehaviour per path."""
    head = await reader.readuntil(b"\r\n\r\n")
    path = head.split(b" ", 2)[1].decode()
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
    body = json.loads(await reader.readexactly(length)) if length else {}
    request_id = body.get("id")
    verb = head.split(b" ", 1)[0]
    sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    if path == "/never":
        await asyncio.sleep(3600)
    elif path == "/forever":  # keep-alive comments, never an event
        writer.write(sse.encode())
        while True:
            writer.write(b": still here\n\n")
            await writer.drain()
            await asyncio.sleep(0.02)
    elif path == "/huge":  # "gigabytes" of JSON
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[")
        while True:
            writer.write(b'"xxxxxxxx",' * 8000)
            await writer.drain()
    elif path == "/badjson":
        writer.write(reply(b"{this is not json"))
    elif path == "/deep":  # valid JSON nested deeper than any parser should follow
        writer.write(reply(b"[" * 100_000 + b"]" * 100_000))
    elif path == "/wrongid":  # a well-formed answer to some other request
        writer.write(reply(rpc_result({"protocolVersion": "2025-11-25"}, request_id=987)))
    elif path == "/notrpc":
        writer.write(reply(b'{"hello": "world"}'))
    elif path == "/html":
        writer.write(reply(b"<html><body>Welcome</body></html>", kind="text/html"))
    elif path == "/crash":  # promises 1000 bytes, sends 10, hangs up
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
    elif path == "/loop":
        writer.write(reply(b"", status="307 Temporary Redirect", extra="Location: /loop\r\n"))
    elif path == "/flood":  # notifications forever, the answer never comes
        writer.write(sse.encode())
        while True:
            writer.write(b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"spam"}}\n\n')
            await writer.drain()
    elif path == "/ends":  # one notification, then the stream ends without our answer
        writer.write((sse + 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n').encode())
    elif path == "/primed":  # an event with an id and empty data (resumption priming) comes first: not an event
        writer.write((sse + "id: 1\ndata: \n\n" + f'event: message\ndata: {rpc_result({"ok": True}, request_id).decode()}\n\n').encode())
    elif path == "/sse-ok":  # a notification, then the answer
        writer.write((sse + 'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'
                      f'data: {rpc_result({"ok": True}, request_id).decode()}\n\n').encode())
    elif path == "/limited":
        writer.write(reply(b'{"error":"slow down"}', status="429 Too Many Requests", extra="Retry-After: 30\r\n"))
    elif path == "/gated":
        writer.write(reply(b"", status="401 Unauthorized",
                           extra='WWW-Authenticate: Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"\r\n'))
    elif path == "/broken":
        writer.write(reply(b"Internal Server Error", kind="text/plain", status="500 Internal Server Error"))
    elif path in ("/slowtool", "/slowlists"):  # legacy-only stateful servers whose read-only tool (and lists) never answer
        await _slow_tool_server(verb, body, writer, slow_lists=path == "/slowlists")
    elif path == "/gone":
        writer.write(reply(b"Not Found", kind="text/plain", status="404 Not Found"))
    elif path == "/liar":  # initialize answered with a version that does not exist; no modern era
        if body.get("method") == "initialize":
            writer.write(reply(rpc_result({"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "liar", "version": "0"}},
                                          request_id)))
        else:
            writer.write(reply(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}}).encode(),
                               status="400 Bad Request"))
    await writer.drain()


async def _slow_tool_server(verb: bytes, body: dict, writer: asyncio.StreamWriter, slow_lists: bool) -> None:
    """`slow_lists`: resources/list never answers either, and a call to an unknown tool gets HTTP 500 (no JSON-RPC error)."""
    method, request_id = body.get("method"), body.get("id")
    session = "Mcp-Session-Id: slow-1\r\n"
    if verb == b"GET":  # the standalone event stream: open, and quiet, for as long as the client keeps it
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(3600)
    elif verb == b"DELETE" or request_id is None:
        writer.write(reply(b"", status="202 Accepted"))
    elif method == "initialize":
        capabilities = {"tools": {}, **({"resources": {}} if slow_lists else {})}
        writer.write(reply(rpc_result({"protocolVersion": "2025-06-18", "capabilities": capabilities, "serverInfo": {"name": "slow", "version": "1"}},
                                      request_id), extra=session))
    elif method == "resources/list":
        await asyncio.sleep(3600)
    elif method == "tools/list":
        tool = {"name": "get_report", "description": "Get the daily report.", "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}}
        writer.write(reply(rpc_result({"tools": [tool]}, request_id), extra=session))
    elif method == "ping":
        writer.write(reply(rpc_result({}, request_id), extra=session))
    elif method == "tools/call" and body["params"]["name"] == "get_report":
        await asyncio.sleep(3600)  # the report never comes
    elif method == "tools/call" and slow_lists:
        writer.write(reply(b"Internal Server Error", kind="text/plain", status="500 Internal Server Error"))
    else:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}}
        writer.write(reply(json.dumps(error).encode(), status="400 Bad Request" if method == "server/discover" else "200 OK", extra=session))


@pytest.fixture(scope="module")
def zoo():
    with threaded_server(_zoo) as port:
        yield f"http://127.0.0.1:{port}"


def post(url: str, limits: Limits = LIMITS, method: str = "initialize"):
    async def go():
        async with probe_client(limits) as client:
            return await exchange(client, url, method, {"protocolVersion": "2025-11-25", "capabilities": {}}, limits=limits)
    started = time.monotonic()
    found = anyio.run(go)
    return found, time.monotonic() - started


@pytest.mark.parametrize("path, failure, outcome", [
    ("/never", Failure.timeout, ProbeOutcome.timeout),
    ("/forever", Failure.timeout, ProbeOutcome.timeout),
    ("/huge", Failure.too_large, ProbeOutcome.protocol_error),
    ("/badjson", Failure.invalid_json, ProbeOutcome.protocol_error),
    ("/deep", Failure.invalid_json, ProbeOutcome.protocol_error),
    ("/wrongid", Failure.invalid_json, ProbeOutcome.protocol_error),
    ("/notrpc", Failure.invalid_json, ProbeOutcome.protocol_error),
    ("/html", Failure.wrong_content_type, ProbeOutcome.protocol_error),
    ("/crash", Failure.dropped, ProbeOutcome.crashed),
    ("/loop", Failure.redirect_loop, ProbeOutcome.http_error),
    ("/flood", Failure.notification_flood, ProbeOutcome.protocol_error),
    ("/ends", Failure.no_response, ProbeOutcome.protocol_error),
    ("/limited", Failure.rate_limited, ProbeOutcome.rate_limited),
    ("/gated", Failure.auth_required, ProbeOutcome.auth_required),
    ("/broken", Failure.http_error, ProbeOutcome.http_error),
])
def test_every_misbehaviour_is_classified_within_its_bounds(zoo, path, failure, outcome):
    found, seconds = post(zoo + path)
    assert (found.failure, found.outcome) == (failure, outcome), found.detail
    assert seconds < LIMITS.timeout + 1.0  # never past the deadline (and a huge body stops at the byte cap)
    assert found.detail


def test_facts_the_sdk_hides_are_kept(zoo):
    limited, _ = post(zoo + "/limited")
    assert limited.status == 429 and limited.headers["retry-after"] == "30"
    gated, _ = post(zoo + "/gated")
    assert gated.status == 401 and "resource_metadata=" in gated.headers["www-authenticate"]
    looped, _ = post(zoo + "/loop")
    assert len(looped.redirects) == LIMITS.max_redirects + 1
    primed, _ = post(zoo + "/primed")
    assert primed.ok and primed.events == 1 and primed.notifications == 0
    streamed, _ = post(zoo + "/sse-ok")
    assert streamed.ok and streamed.notifications == 1 and streamed.events == 2 and streamed.response["result"] == {"ok": True}


def test_unreachable_and_private_addresses():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # bound, never listening: connections are refused
        found, seconds = post(f"http://127.0.0.1:{closed}/mcp")
    assert found.failure is Failure.unreachable and seconds < 2
    refused, _ = post(f"http://127.0.0.1:{closed}/mcp", limits=Limits(timeout=1.5))  # the default refuses loopback
    assert refused.failure is Failure.refused_private and refused.outcome is ProbeOutcome.refused and refused.status is None
    assert "127.0.0.1" in refused.detail


def test_a_lying_server_is_not_taken_at_its_word(zoo):
    async def go():
        async with probe_client(LIMITS) as client:
            return await negotiate(client, zoo + "/liar", LIMITS)

    found = anyio.run(go)
    assert found.era == "broken" and found.protocol_version is None
    assert any("1999-01-01" in problem for problem in found.problems)


@pytest.fixture(scope="module", params=["sse", "json"])
def dual_server(request):
    with python_server("dual_http.py", *(["json"] if request.param == "json" else [])) as url:
        yield request.param, url


def test_a_real_server_negotiates_both_eras(dual_server):
    mode, url = dual_server

    async def go():
        async with probe_client(LIMITS) as client:
            return await negotiate(client, url, Limits(timeout=10, allow_private=True))

    found = anyio.run(go)
    assert found.era == "dual" and found.outcome is ProbeOutcome.ok, found.evidence()
    assert found.protocol_version == "2026-07-28" and found.handshake == "server/discover"
    assert found.server_info["name"] == "dual-test" and found.instructions == "Answers the time in one zone."
    assert found.header_routing is True  # a request without Mcp-Method is refused with -32020
    assert found.list_cache_hints is True  # tools/list carries ttlMs (and cacheScope)
    initialize = found.exchanges[1]
    assert initialize.response["result"]["protocolVersion"] == "2025-11-25"
    assert (initialize.headers.get("content-type", "").startswith("text/event-stream")) is (mode == "sse")
    assert (found.session_id is not None) is (mode == "sse")  # stateful servers open a session; stateless ones do not


def test_scoreboard_probe_target_prints_what_the_prober_saw(dual_server):
    mode, url = dual_server
    run = [sys.executable, "-m", "pipeline.cli", "probe", url]
    text = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "outcome: ok" in text.stdout and "protocol: modern 2026-07-28 via server/discover over streamable-http" in text.stdout
    assert "eras: modern yes, legacy yes; header routing yes, list cache hints yes" in text.stdout
    assert "tools: 1: now" in text.stdout and "check era_negotiation: dual [pass]" in text.stdout
    data = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=120).stdout)
    assert data["eras"] == {"modern": True, "legacy": True, "discover": True, "header_routing": True, "list_cache_hints": True}
    assert data["http"]["auth_required"] is False and data["server_info"]["name"] == "dual-test"


@pytest.mark.parametrize("path, outcome, words", [
    ("/never", ProbeOutcome.timeout, "no complete answer"),
    ("/huge", ProbeOutcome.protocol_error, "body passed"),
    ("/flood", ProbeOutcome.protocol_error, "events without the response"),
    ("/html", ProbeOutcome.protocol_error, "Content-Type"),
    ("/crash", ProbeOutcome.crashed, "RemoteProtocolError"),
    ("/loop", ProbeOutcome.http_error, "more than 3 redirects"),
    ("/liar", ProbeOutcome.protocol_error, "1999-01-01"),
    ("/gated", ProbeOutcome.auth_required, "WWW-Authenticate"),
    ("/limited", ProbeOutcome.rate_limited, "Retry-After: 30"),
])
def test_a_full_deep_probe_of_a_hostile_server_ends_classified_within_its_bounds(zoo, path, outcome, words):
    from datetime import datetime, timezone

    from pipeline.probe.deep import deep_probe
    from pipeline.probe.sandbox import Running

    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("hostile", Running(transport="streamable-http", url=zoo + path),
                                          limits=Limits(timeout=1.5, allow_private=True), total_timeout=10, now=datetime.now(timezone.utc)))
    assert result.outcome is outcome and words in result.detail, result.detail
    assert time.monotonic() - started < 10  # the probe's total deadline; each request stops at its own 1.5 s
    assert result.tools is None and result.invocations is None  # no SDK session was opened on a server like this
    assert result.exchanges and result.checks[0].name == "era_negotiation" and result.checks[0].outcome == "broken"


@pytest.mark.parametrize("path", ["/slowtool", "/slowlists"])
def test_a_tool_that_never_answers_is_a_timeout_not_a_crash(zoo, path):
    """Over the legacy era a timed-out request keeps its connection busy; the session must still have room to ask
    whether the server is alive, so each is recorded as the timeout it was, and after two nothing more is asked."""
    from datetime import datetime, timezone

    from pipeline.probe.deep import deep_probe
    from pipeline.probe.sandbox import Running

    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("slow", Running(transport="streamable-http", url=zoo + path),
                                          limits=Limits(timeout=1.5, allow_private=True), total_timeout=20, now=datetime.now(timezone.utc)))
    assert result.outcome is ProbeOutcome.ok and result.era == "legacy", result.detail
    assert [(i.tool, i.outcome) for i in result.invocations] == [("get_report", "timeout")]
    assert result.fuzz is None and time.monotonic() - started < 15
    checks = {c.name: c for c in result.checks}
    if path == "/slowlists":
        assert checks["resources/list"].outcome == "timeout"
        # HTTP 500 is no JSON-RPC error of the server's own: the unknown tool was not handled
        assert checks["error_unknown_tool"].outcome == "crash" and checks["error_unknown_tool"].passed is False
    else:
        assert checks["error_unknown_tool"].outcome == "jsonrpc_error" and checks["error_unknown_tool"].passed is True


def test_the_fast_probe_keeps_a_dead_endpoints_own_failure(zoo):
    from datetime import datetime, timezone

    from pipeline.probe.fast import raw_fast_probe

    result = anyio.run(lambda: raw_fast_probe("gone", zoo + "/gone", limits=LIMITS, total_timeout=10, now=datetime.now(timezone.utc)))
    assert result.outcome is ProbeOutcome.http_error and result.transport == "streamable-http" and "HTTP 404" in result.detail
    assert [(e["method"], e["status"]) for e in result.exchanges] == [("server/discover", 404), ("initialize", 404)]  # SSE was tried, not kept
