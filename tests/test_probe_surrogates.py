"""A lone surrogate escaped in a server's JSON (the SDK's strict parser refuses the whole message) becomes U+FFFD
before the SDK reads it: the server's name and every tool are kept, the hidden characters check names the U+FFFD,
and no call timeout is waited; over stdio and Streamable HTTP, with JSON bodies and event streams. The rule first."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.clean import json_without_lone_surrogates
from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from tests.servers.lone_surrogates import answer
from tests.support import TEST_SERVERS, threaded_server

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
LIMITS = Limits(timeout=8, max_bytes=5_000_000, allow_private=True)


@pytest.mark.parametrize("sent, read", [
    (rb'{"a": "x\ud800y"}', rb'{"a": "x\ufffdy"}'),  # a lone high half
    (rb'{"a": "x\uDC00y"}', rb'{"a": "x\ufffdy"}'),  # a lone low half, in capitals
    (rb'{"a": "\udc00\ud800"}', rb'{"a": "\ufffd\ufffd"}'),  # low before high is no pair
    (rb'{"a": "\ud800\ud800\udc00"}', rb'{"a": "\ufffd\ud800\udc00"}'),  # the second high half has its low one
    (rb'{"k\udfff": ["\ud83d\ude00", "\ud83d"]}', rb'{"k\ufffd": ["\ud83d\ude00", "\ufffd"]}'),  # keys too; a valid pair stays
    (rb'{"a": "\\ud800 \\\ud800 \\\\ud800"}', rb'{"a": "\\ud800 \\\ufffd \\\\ud800"}'),  # after an escaped backslash, "ud800" is text
    (rb'{"a": "\u0001\u0000\ud800\n", "n": 1.000000000000000000001}', rb'{"a": "\u0001\u0000\ufffd\n", "n": 1.000000000000000000001}'),
])
def test_only_lone_surrogate_escapes_change(sent, read):
    assert json_without_lone_surrogates(sent) == read
    assert "\ud800" not in json.dumps(json.loads(read), ensure_ascii=False)  # what the SDK's strict parser now takes


@pytest.mark.parametrize("sent", [rb'{"a": "\u00e9 \n"}', b'{"a": "\xed\xa0\x80"}', rb'not json \x'])
def test_a_text_that_escapes_no_surrogate_is_returned_itself(sent):
    assert json_without_lone_surrogates(sent) is sent


def test_a_text_whose_surrogate_escapes_are_all_paired_or_text_is_kept_byte_for_byte():
    sent = rb'{"a": "plain \\ud800 text, \ud83d\ude00 \\\\udc00"}'
    assert json_without_lone_surrogates(sent) == sent


def _reply(body: bytes, status: str = "200 OK", kind: str = "application/json") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """lone_surrogates' answers over Streamable HTTP, legacy era, one request per connection: at /json as JSON bodies,
    at /sse as one event each, sent in pieces cut inside the lone surrogate's escape."""
    head = await reader.readuntil(b"\r\n\r\n")
    verb, path = head.split(b" ", 2)[:2]
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
    request = json.loads(await reader.readexactly(length)) if length else {}
    reply = answer(request) if verb == b"POST" else None
    if reply is None:
        writer.write(_reply(b"", status="202 Accepted" if verb == b"POST" else "405 Method Not Allowed"))
    elif request.get("method") == "server/discover":
        writer.write(_reply(json.dumps(reply).encode(), status="400 Bad Request"))
    elif path == b"/sse":
        event = b"event: message\r\ndata: " + json.dumps(reply).encode() + b"\r\n\r\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        cut = event.find(rb"\ud8") + 4
        for piece in (event[:cut], event[cut:]):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)
    else:
        writer.write(_reply(json.dumps(reply).encode()))
    await writer.drain()


@pytest.fixture(scope="module")
def http_server():
    with threaded_server(_serve) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(params=["stdio", "json", "sse"])
def running(request, http_server) -> Running:
    if request.param == "stdio":
        return Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "lone_surrogates.py"),), env={"PATH": "/usr/bin:/bin"})
    return Running(transport="streamable-http", url=f"{http_server}/{request.param}")


def test_lone_surrogates_from_a_server_become_u_fffd_and_lose_nothing(running):
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("surrogates", running, limits=LIMITS, total_timeout=20, now=NOW))
    took = time.monotonic() - started
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and result.detail is None, result.detail
    assert result.server_info["name"] == "lone\ufffdname"
    assert [t["name"] for t in result.tools] == ["get_thing", "get_other"] and checks["tools/list"].passed
    thing, other = result.tools
    assert thing["description"] == "Get a thing by its id. \ufffd A pair stays: \U0001f600. A backslash stays text: \\ud800"
    assert other["title"] == "Other \ufffd thing" and list(other["inputSchema"]["properties"]) == ["q\ufffd"]
    assert checks["hidden_characters"].passed is False
    assert checks["hidden_characters"].detail == "get_thing.description: U+FFFD; get_other.title: U+FFFD"
    assert sorted((i.tool, i.outcome) for i in result.invocations) == [("get_other", "ok"), ("get_thing", "ok")]
    assert took < LIMITS.timeout  # no call waited out its timeout
