"""Every hostile case named right: a tool list with bad schemas keeps every tool, a connection lost in a fuzz call is a
crash of that tool, a pagination loop keeps each item once, a failing resources/templates/list is named, a stdio
server's exit code is kept, and lines that are not JSON are unparseable output, over stdio and Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from tests.servers.naming_zoo import EXIT_CODE, answer
from tests.support import TEST_SERVERS

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
LIMITS = Limits(timeout=3, max_bytes=5_000_000, allow_private=True)


def _reply(body: bytes, status: str = "200 OK") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """naming_zoo's answers over Streamable HTTP, legacy era (server/discover is refused), one request per connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        verb, path = head.split(b" ", 2)[:2]
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
        request = json.loads(await reader.readexactly(length)) if length else {}
        if verb != b"POST" or request.get("id") is None:
            writer.write(_reply(b"", status="202 Accepted" if verb == b"POST" else "405 Method Not Allowed"))
        elif request.get("method") == "server/discover":
            writer.write(_reply(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}).encode(),
                                status="400 Bad Request"))
        else:
            reply = answer(path.decode().strip("/"), request)
            if reply == "die":
                writer.transport.abort()  # the connection drops in the middle of the call
                return
            writer.write(_reply(json.dumps(reply).encode()))
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


@pytest.fixture(scope="module")
def http_zoo():
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(_serve, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    server.close()
    loop.close()


def stdio(fault: str) -> Running:
    return Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "naming_zoo.py"), fault), env={"PATH": "/usr/bin:/bin"})


def probe(running: Running, limits: Limits = LIMITS):
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("naming", running, limits=limits, total_timeout=20, now=NOW))
    return result, time.monotonic() - started


@pytest.fixture(params=["stdio", "http"])
def over(request, http_zoo):
    return lambda fault: stdio(fault) if request.param == "stdio" else Running(transport="streamable-http", url=f"{http_zoo}/{fault}")


def test_a_tool_list_with_bad_schemas_keeps_every_tool_and_names_each_problem(over):
    result, _ = probe(over("many-tools"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok, result.detail
    assert len(result.tools) == 999 and checks["tools/list"].passed  # every object entry kept, as the server sent it
    assert result.tools[10]["inputSchema"] == {"type": "string"} and result.tools[500]["inputSchema"] == [1, 2]
    assert "not an object" in checks["tools/list"].detail and "tools[704]" in checks["tools/list"].detail
    schemas = checks["schema_validity"]
    assert schemas.passed is False
    for problem in ("get_item_10: inputSchema is not an object schema", "get_item_500: inputSchema is not an object schema",
                    "get_item_600: outputSchema invalid"):
        assert problem in schemas.detail
    names = checks["tool_names"]
    assert names.passed is False
    assert "duplicate: get_item_0" in names.detail and "'get item!'" in names.detail
    assert "tools[700] has no name" in names.detail and "tools[701] name is not a string: 42" in names.detail
    # Only the one read-only tool with a usable name is called, and once, though two tools bear its name.
    assert [(i.tool, i.outcome) for i in result.invocations] == [("get_item_0", "ok")]
