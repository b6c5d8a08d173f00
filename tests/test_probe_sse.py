"""The legacy HTTP+SSE transport on the raw layer: a zoo of hostile event-stream servers, each failure classified
exactly and within its bounds; the fallback from Streamable HTTP; and the whole deep and fast probe over SSE."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.fast import raw_fast_probe
from pipeline.probe.legacy_sse import negotiate_sse
from pipeline.probe.raw import Failure, Limits, probe_client, telling_failure
from pipeline.probe.sandbox import Running
from tests.servers.lone_surrogates import answer as lone_surrogates
from tests.support import threaded_server

LIMITS = Limits(timeout=1.5, max_bytes=200_000, max_events=50, allow_private=True)
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
STREAM = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
TOOL = {"name": "get_weather", "description": "Get the weather for a city.", "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def plain(status: str, body: bytes = b"", kind: str = "text/plain", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n".encode() + body


def event(message: dict | str, name: str = "message") -> bytes:
    data = message if isinstance(message, str) else json.dumps(message)
    return f"event: {name}\ndata: {data}\n\n".encode()


class SseZoo:
    """An HTTP+SSE server whose GET path picks its misbehaviour; POSTs to the endpoint it names are answered (or not)
    on that stream."""

    def __init__(self) -> None:
        self.streams: dict[str, tuple[str, asyncio.Queue]] = {}
        self.ids = itertools.count(1)
        self.posts: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target = head.split(b" ", 2)[:2]
            path = target.decode()
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
            body = await reader.readexactly(length) if length else b""
            if method == b"GET":
                await self.stream(path, writer)
            elif method == b"POST" and path.startswith("/messages?session="):
                await self.message(path.split("=", 1)[1], json.loads(body), writer)
            else:
                writer.write(plain("405 Method Not Allowed"))  # what an SSE-only server says to a Streamable HTTP POST
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a client hung up, or the zoo is closing
        finally:
            writer.close()

    async def stream(self, path: str, writer: asyncio.StreamWriter) -> None:
        kind = path.strip("/")
        if kind == "no-stream":
            writer.write(plain("404 Not Found"))
            return
        if kind == "html":
            writer.write(plain("200 OK", b"<html>hello</html>", kind="text/html"))
            return
        if kind == "gated":
            writer.write(plain("401 Unauthorized", extra="WWW-Authenticate: Bearer\r\n"))
            return
        writer.write(STREAM.encode())
        if kind == "never":
            while True:
                writer.write(b": waiting\n\n")
                await writer.drain()
                await asyncio.sleep(0.05)
        if kind == "flood":
            while True:
                writer.write(event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "spam"}}))
                await writer.drain()
        if kind == "huge":
            writer.write(b"data: ")
            while True:
                writer.write(b"x" * 65536)
                await writer.drain()
        if kind == "badendpoint":
            writer.write(event("http://[::1/messages", name="endpoint"))
            await writer.drain()
            await asyncio.sleep(3600)
        if kind == "elsewhere":
            writer.write(event("http://203.0.113.9/messages?session=1", name="endpoint"))
            await writer.drain()
            await asyncio.sleep(3600)
        session = str(next(self.ids))
        queue: asyncio.Queue = asyncio.Queue()
        self.streams[session] = (kind, queue)
        writer.write(event(f"/messages?session={session}", name="endpoint"))
        await writer.drain()
        while True:
            chunk = await queue.get()
            if chunk is None:
                return  # hang up
            writer.write(chunk)
            await writer.drain()

    async def message(self, session: str, message: dict, writer: asyncio.StreamWriter) -> None:
        kind, queue = self.streams[session]
        self.posts.append(message.get("method", "?"))
        writer.write(plain("202 Accepted", b"Accepted"))
        rid, method = message.get("id"), message.get("method")
        if rid is None or kind == "silent":
            return
        if kind == "surrogates":  # its server name and tool texts escape lone surrogates
            queue.put_nowait(event(lone_surrogates(message)))
            return
        if kind == "hangup":
            queue.put_nowait(None)
        elif kind == "badjson":
            queue.put_nowait(event("{this is not json"))
        elif kind == "listid":  # an answer whose id is a list: no request of ours has that id
            queue.put_nowait(event({"jsonrpc": "2.0", "id": [rid], "result": {}}))
        elif method == "initialize":
            version = "1999-01-01" if kind == "liar" else "2025-06-18"
            queue.put_nowait(event({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": f"sse-{kind}", "version": "1.0"}}}))
        elif method == "tools/list":
            tool = dict(TOOL, description="A very long manual. " * 15_000) if kind == "bulky" else TOOL  # about 300 KB
            queue.put_nowait(event({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}}))
        elif method == "ping":
            queue.put_nowait(event({"jsonrpc": "2.0", "id": rid, "result": {}}))
        elif method == "tools/call" and message["params"]["name"] == "get_weather":
            city = message["params"].get("arguments", {}).get("city")
            reply = {"content": [{"type": "text", "text": f"Sunny in {city}"}]} if isinstance(city, str) and city else \
                {"content": [{"type": "text", "text": "city must be a non-empty string"}], "isError": True}
            queue.put_nowait(event({"jsonrpc": "2.0", "id": rid, "result": reply}))
        else:
            queue.put_nowait(event({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}))


@pytest.fixture(scope="module")
def zoo():
    server_zoo = SseZoo()
    with threaded_server(server_zoo.handle) as port:
        yield f"http://127.0.0.1:{port}", server_zoo


def negotiated(url: str):
    async def go():
        async with probe_client(LIMITS, connections=3) as client:
            return await negotiate_sse(client, url, LIMITS)
    started = time.monotonic()
    found = anyio.run(go)
    return found, time.monotonic() - started


def test_a_well_behaved_sse_server_negotiates_the_legacy_era(zoo):
    origin, _ = zoo
    found, _ = negotiated(origin + "/good")
    assert found.era == "legacy" and found.transport == "sse" and found.protocol_version == "2025-06-18"
    assert found.server_info == {"name": "sse-good", "version": "1.0"}
    # The legacy era is asked on a stream of its own: a server settles each connection's era at its first request.
    assert [e.method for e in found.exchanges] == ["GET (event stream)", "server/discover", "GET (event stream)", "initialize",
                                                   "notifications/initialized"]
    stream, discover = found.exchanges[0], found.exchanges[1]
    assert stream.status == 200 and stream.events >= 1 and discover.status == 202 and discover.error["code"] == -32601


@pytest.mark.parametrize("path, failure, outcome, words", [
    ("/never", Failure.timeout, ProbeOutcome.timeout, "no endpoint event"),
    ("/no-stream", Failure.http_error, ProbeOutcome.http_error, "HTTP 404"),
    ("/html", Failure.wrong_content_type, ProbeOutcome.protocol_error, "not an event stream"),
    ("/gated", Failure.auth_required, ProbeOutcome.auth_required, "WWW-Authenticate"),
    ("/flood", Failure.notification_flood, ProbeOutcome.protocol_error, "events on the stream"),
    ("/huge", Failure.too_large, ProbeOutcome.protocol_error, "stream passed 200,000 bytes"),
    ("/elsewhere", Failure.http_error, ProbeOutcome.http_error, "another origin"),
    ("/badendpoint", Failure.http_error, ProbeOutcome.http_error, "not a usable URL"),
    ("/listid", Failure.timeout, ProbeOutcome.timeout, "no answer on the event stream"),
    ("/silent", Failure.timeout, ProbeOutcome.timeout, "no answer on the event stream"),
    ("/badjson", Failure.invalid_json, ProbeOutcome.protocol_error, "is not JSON"),
    ("/hangup", Failure.dropped, ProbeOutcome.crashed, "the event stream ended"),
])
def test_every_sse_misbehaviour_is_classified_within_its_bounds(zoo, path, failure, outcome, words):
    origin, _ = zoo
    found, took = negotiated(origin + path)
    assert found.era == "broken" and found.outcome is outcome, found.evidence()
    failed = telling_failure(found.exchanges)
    assert failed.failure is failure and words in failed.detail
    assert took < 4 * LIMITS.timeout  # the stream's deadline, then at most both handshakes' own


def test_an_endpoint_on_another_origin_is_never_posted_to(zoo):
    origin, server_zoo = zoo
    before = len(server_zoo.posts)
    found, _ = negotiated(origin + "/elsewhere")
    assert [e.method for e in found.exchanges] == ["GET (event stream)"] and len(server_zoo.posts) == before


def test_a_version_lie_over_sse_is_not_believed(zoo):
    origin, _ = zoo
    found, _ = negotiated(origin + "/liar")
    assert found.era == "broken" and any("1999-01-01" in p for p in found.problems)


def test_the_deep_probe_falls_back_to_sse_when_streamable_http_is_refused(zoo):
    origin, _ = zoo
    # The catalog thinks this is Streamable HTTP: the POST gets 405, so the spec's fallback opens the event stream.
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("sse", Running(transport="streamable-http", url=origin + "/good"),
                                          limits=Limits(timeout=3, allow_private=True), total_timeout=20, now=NOW))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and result.transport == "sse", result.detail
    assert "Streamable HTTP refused (HTTP 405)" in checks["era_negotiation"].detail
    assert result.eras.legacy is True and result.eras.modern is False
    assert [t["name"] for t in result.tools] == ["get_weather"]
    assert [(i.tool, i.outcome, i.functional) for i in result.invocations] == [("get_weather", "ok", True)]
    assert [(e["method"], e["status"]) for e in result.exchanges][:3] == [("server/discover", 405), ("initialize", 405), ("GET (event stream)", 200)]
    # Opened like a page, the SSE endpoint streams: not a setup page, and not read until the deadline either.
    assert result.http.html_setup_page is False and time.monotonic() - started < 2.5


def test_a_broken_sse_server_is_classified_by_the_raw_layer_alone(zoo):
    origin, _ = zoo
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("sse", Running(transport="sse", url=origin + "/flood"), limits=LIMITS, total_timeout=20, now=NOW))
    assert result.outcome is ProbeOutcome.protocol_error and "events on the stream" in result.detail
    assert result.tools is None and time.monotonic() - started < 8


@pytest.mark.parametrize("path, outcome", [("/good", ProbeOutcome.ok), ("/gated", ProbeOutcome.auth_required), ("/silent", ProbeOutcome.timeout)])
def test_the_fast_probe_over_sse(zoo, path, outcome):
    origin, _ = zoo
    result = anyio.run(lambda: raw_fast_probe("sse", origin + path, transport="sse", limits=LIMITS, total_timeout=10, now=NOW))
    assert result.outcome is outcome and result.transport == "sse", result.detail
    if outcome is ProbeOutcome.ok:
        assert result.era == "legacy" and result.connect_ms > 0 and result.ping_ms is not None
        assert [e["method"] for e in result.exchanges][-1] == "ping"


def test_the_fast_probe_falls_back_to_sse_too(zoo):
    origin, _ = zoo
    result = anyio.run(lambda: raw_fast_probe("sse", origin + "/good", transport="streamable-http", limits=LIMITS, total_timeout=10, now=NOW))
    assert result.outcome is ProbeOutcome.ok and (result.transport, result.era) == ("sse", "legacy"), result.detail
    assert [(e["method"], e["status"]) for e in result.exchanges][:3] == [("server/discover", 405), ("initialize", 405), ("GET (event stream)", 200)]


def test_scoreboard_probe_prints_an_sse_server_as_seen_over_sse(zoo):
    import subprocess
    import sys

    origin, _ = zoo
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "probe", origin + "/good"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "outcome: ok" in done.stdout and "protocol: legacy 2025-06-18 via initialize over sse" in done.stdout
    assert "Streamable HTTP refused (HTTP 405)" in done.stdout and "tools: 1: get_weather" in done.stdout


def test_an_oversized_answer_on_the_sse_stream_ends_the_session_as_too_large(zoo):
    origin, _ = zoo  # the one stream carries every answer: past the cap, the SDK's reader stops and the session with it
    result = anyio.run(lambda: deep_probe("sse", Running(transport="sse", url=origin + "/bulky"), limits=LIMITS, total_timeout=20, now=NOW))
    assert result.outcome is ProbeOutcome.protocol_error and result.detail == "too large: an SSE event passed 200,000 bytes", result.detail
    assert result.era == "legacy" and {c.name: c.outcome for c in result.checks}["message_bounds"] == "too_large"


def test_lone_surrogates_on_the_event_stream_become_u_fffd_and_lose_nothing(zoo):
    origin, _ = zoo
    result = anyio.run(lambda: deep_probe("sse", Running(transport="sse", url=origin + "/surrogates"), limits=LIMITS, total_timeout=20, now=NOW))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and result.transport == "sse" and result.server_info["name"] == "lone\ufffdname", result.detail
    assert [t["name"] for t in result.tools] == ["get_thing", "get_other"] and "\ufffd" in result.tools[0]["description"]
    assert checks["hidden_characters"].detail == "get_thing.description: U+FFFD; get_other.title: U+FFFD"
