"""Every hostile case named right: a tool list with bad schemas keeps every tool, a connection lost in a fuzz call is a
crash of that tool, a pagination loop keeps each item once, a failing resources/templates/list is named, a stdio
server's exit code is kept, and lines that are not JSON are unparseable output, over stdio and Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from tests.servers.naming_zoo import EXIT_CODE, answer
from tests.support import TEST_SERVERS, threaded_server

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
LIMITS = Limits(timeout=3, max_bytes=5_000_000, allow_private=True)


def _reply(body: bytes, status: str = "200 OK") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """naming_zoo's answers over Streamable HTTP, legacy era (server/discover is refused), one request per connection."""
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
        fault, _, how = path.decode().strip("/").partition("/")
        reply = answer(fault, request)
        if reply == "die" and how == "mid-body":  # the headers and part of the body, then the connection drops
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
            await writer.drain()
        if reply == "die":
            writer.transport.abort()  # the connection drops in the middle of the call
            return
        if reply == "hang":
            await asyncio.sleep(3600)
        writer.write(_reply(json.dumps(reply).encode()))
    await writer.drain()


@pytest.fixture(scope="module")
def http_zoo():
    with threaded_server(_serve) as port:
        yield f"http://127.0.0.1:{port}"


def stdio(fault: str) -> Running:
    return Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "naming_zoo.py"), fault), env={"PATH": "/usr/bin:/bin"})


def probe(running: Running, limits: Limits = LIMITS, budget: float = 20):
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("naming", running, limits=limits, total_timeout=budget, now=NOW))
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
    assert "not objects, not kept: 1 (tools[704])" in checks["tools/list"].detail
    schemas = checks["schema_validity"]
    assert schemas.passed is False
    for problem in ("get_item_10: inputSchema is not an object schema", "get_item_500: inputSchema is not an object schema",
                    "get_item_600: outputSchema invalid"):
        assert problem in schemas.detail
    names = checks["tool_names"]
    assert names.passed is False
    assert "duplicate: get_item_0" in names.detail and "'get item!'" in names.detail
    assert "tools[700] has no name" in names.detail and "tools[701] name is not a string: 42" in names.detail
    # Only the one read-only tool with a usable name is called, and once, though it is listed twice.
    assert [(i.tool, i.outcome) for i in result.invocations] == [("get_item_0", "ok")]


def test_a_connection_lost_in_a_fuzz_call_is_a_fuzz_crash_of_that_tool(over):
    """The server dies on an oversized argument (a stdio server exits with code 7; over HTTP the connection drops):
    the handshake, the lists and the checks done before stand, and the server stays reachable."""
    running = over("fuzz-crash")
    result, took = probe(running)
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and result.reachable, result.detail
    assert result.era == "legacy" and len(result.tools) == 1 and checks["tools/list"].passed and checks["schema_validity"].passed
    assert [(i.tool, i.outcome) for i in result.invocations] == [("get_echo", "ok")]
    assert [(f.tool, f.case, f.outcome) for f in result.fuzz] == [("get_echo", "oversized_string", "crash")]
    if running.transport == "stdio":
        assert result.exit_code == EXIT_CODE
        assert result.detail == f"the server exited with code {EXIT_CODE} during a fuzz call to get_echo (oversized_string)"
    assert took < 10


def test_an_http_answer_cut_off_mid_body_is_a_fuzz_crash_too(http_zoo):
    result, _ = probe(Running(transport="streamable-http", url=f"{http_zoo}/fuzz-crash/mid-body"))
    assert result.outcome is ProbeOutcome.ok and len(result.tools) == 1, result.detail
    assert [(f.tool, f.case, f.outcome) for f in result.fuzz] == [("get_echo", "oversized_string", "crash")]


def test_a_server_lost_while_listing_its_tools_is_a_crash_with_the_handshake_kept(over):
    running = over("drop-on-list")
    result, _ = probe(running)
    assert result.outcome is ProbeOutcome.crashed and result.era == "legacy" and result.tools is None, result.detail
    assert {c.name: c.outcome for c in result.checks}["tools/list"] == "crashed"
    lost = f"the server exited with code {EXIT_CODE}" if running.transport == "stdio" else "the server went away"
    assert result.detail.startswith(f"{lost} during tools/list")
    assert running.transport == "stdio" or "the connection dropped" in result.detail


def test_a_pagination_loop_keeps_each_item_once_and_calls_each_tool_once(over):
    result, _ = probe(over("paged-loop"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok, result.detail
    assert [t["name"] for t in result.tools] == ["get_a", "get_b", "get_c"]
    assert [r["uri"] for r in result.resources] == ["file:///get_a", "file:///get_b", "file:///get_c"]
    assert [p["name"] for p in result.prompts] == ["get_a", "get_b", "get_c"]
    for name in ("tools/list", "resources/list", "prompts/list"):
        assert checks[name].passed and "pagination loop: cursor 'b' repeated" in checks[name].detail, checks[name]
        assert "2 " in checks[name].detail and "repeated from earlier pages, kept once" in checks[name].detail
    assert checks["tool_names"].passed, checks["tool_names"].detail  # no false duplicates
    assert sorted(i.tool for i in result.invocations) == ["get_a", "get_b", "get_c"]  # no tool called twice


def test_a_failing_resource_template_list_is_named_as_that_method(over):
    result, _ = probe(over("templates-fail"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok, result.detail
    assert checks["resources/list"].passed and checks["resources/list"].detail == "1 resources"
    assert [r["uri"] for r in result.resources] == ["file:///readme"]
    assert checks["resources/templates/list"].passed is False and "templates are broken" in checks["resources/templates/list"].detail
    assert result.resource_templates is None


def test_a_stdio_banner_is_unparseable_output_and_the_server_is_measured_normally():
    """1,500 log lines before the first answer: more than the 1,000 notifications that make a flood, but not JSON-RPC."""
    result, _ = probe(stdio("banner"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and result.tools and checks["tools/list"].passed, result.detail
    assert checks["invalid_messages"].passed is False and checks["invalid_messages"].outcome.endswith("unparseable")
    assert "message_bounds" not in checks and result.exit_code is None


def test_endless_lines_that_are_not_json_are_unparseable_output_not_a_flood():
    result, took = probe(stdio("babble"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.protocol_error and result.detail.startswith("unparseable output: "), result.detail
    # Cut at its bound (10,000 lines, about a second), or on a loaded machine at the call timeout (3 s) with the same name.
    bound = "unparseable output: 10,000 lines that are not JSON-RPC came in a row without an answer"
    assert result.detail == bound or ("message_bounds" not in checks and "no handshake" in result.detail)
    assert int(checks["invalid_messages"].outcome.split()[0]) > 1_000 and took < 6


@pytest.mark.parametrize("fault, outcome, code, where", [
    ("exit-early", ProbeOutcome.start_failed, 3, "before the handshake"),
    ("crash-on-list", ProbeOutcome.crashed, 1, "during tools/list"),
])
def test_a_stdio_server_that_exits_leaves_its_exit_code(fault, outcome, code, where):
    running = Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "raw_stdio.py"), fault), env={"PATH": "/usr/bin:/bin"})
    result, _ = probe(running)
    assert result.outcome is outcome and result.exit_code == code
    assert result.detail.startswith(f"the server exited with code {code} {where}"), result.detail


def test_a_server_stopped_by_the_prober_has_no_exit_code_of_its_own():
    result, _ = probe(stdio("paged-loop"))
    assert result.outcome is ProbeOutcome.ok and result.exit_code is None and result.detail is None


def test_a_call_that_is_never_answered_is_that_calls_timeout_within_the_budget(over):
    """The call waits its timeout or what is left of the probe's budget (less a reserve), whichever is less: a hang is
    recorded as that call's timeout, not lost with the session when the budget ends it."""
    result, seconds = probe(over("hang-call"), Limits(timeout=10, allow_private=True), budget=5)
    assert result.outcome is ProbeOutcome.ok, result.detail
    assert [(i.tool, i.outcome) for i in result.invocations] == [("get_echo", "timeout")]
    assert seconds < 6


def test_an_answer_too_deep_to_parse_fails_its_request_at_once_named():
    """Over stdio a line nested deeper than the parser goes cannot be read, but its id can: that request fails at once
    with the reason, and the session goes on, rather than wait out the call timeout."""
    result, seconds = probe(stdio("deep-list"), Limits(timeout=10, allow_private=True))
    listed = {c.name: c for c in result.checks}["tools/list"]
    assert result.outcome is ProbeOutcome.ok and result.tools is None
    assert listed.passed is False and "could not parse the server's answer" in listed.detail, listed
    assert seconds < 6
