"""Past the handshake, the SDK session is bounded in bytes as well as time: a message larger than the cap ends
that exchange (HTTP) or the session (stdio), and the probe says "too large", over every transport. And over
stdio, the era the session did not settle on is asked in a start of its own."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from tests.support import TEST_SERVERS, python_server

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
CAP = 100_000


def probe(running: Running, max_bytes: int = CAP):
    started = time.monotonic()
    result = anyio.run(lambda: deep_probe("bounds", running, limits=Limits(timeout=5, max_bytes=max_bytes, allow_private=True), total_timeout=20,
                                        now=NOW))
    return result, time.monotonic() - started


def stdio(fault: str) -> Running:
    return Running(transport="stdio", command=sys.executable, args=(str(TEST_SERVERS / "raw_stdio.py"), fault), env={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_an_oversized_list_over_streamable_http_is_stopped_at_the_cap(mode):
    with python_server("bulky_http.py", *(["json"] if mode == "json" else [])) as url:
        result, took = probe(Running(transport="streamable-http", url=url))
        whole, _ = probe(Running(transport="streamable-http", url=url), max_bytes=5_000_000)
    checks = {c.name: c for c in result.checks}
    assert result.era is not None and checks["era_negotiation"].passed  # the handshake is small and went through
    assert checks["tools/list"].passed is False and result.tools is None
    assert checks["message_bounds"].outcome == "too_large"
    assert f"passed {CAP:,} bytes" in checks["message_bounds"].detail
    assert took < 10  # stopped at the cap, not at a timeout
    assert whole.tools and len(whole.tools[0]["description"]) > CAP and "message_bounds" not in {c.name for c in whole.checks}


@pytest.mark.parametrize("fault", ["huge-list", "endless-line"])
def test_an_oversized_or_endless_stdio_line_ends_the_session_as_too_large(fault):
    result, took = probe(stdio(fault))
    assert result.outcome is ProbeOutcome.protocol_error and result.detail == f"too large: a message passed {CAP:,} bytes"
    assert {c.name: c.outcome for c in result.checks}["message_bounds"] == "too_large"
    assert took < 10


def test_undecodable_bytes_on_stdio_are_bad_messages_not_a_dead_session():
    result, _ = probe(stdio("bad-bytes"))
    checks = {c.name: c for c in result.checks}
    assert result.outcome is ProbeOutcome.ok and checks["tools/list"].passed
    assert checks["invalid_messages"].passed is False and checks["invalid_messages"].outcome.endswith("unparseable")


def test_a_stdio_server_that_refuses_initialize_is_modern_only():
    result, _ = probe(stdio("modern-only"), max_bytes=5_000_000)
    assert result.outcome is ProbeOutcome.ok and (result.era, result.handshake) == ("modern", "server/discover"), result.detail
    assert (result.eras.modern, result.eras.legacy, result.eras.header_routing) == (True, False, None)
    negotiation = {c.name: c for c in result.checks}["era_negotiation"]
    assert negotiation.outcome == "modern" and "this server speaks 2026-07-28 only" in negotiation.detail
    assert [e["method"] for e in result.exchanges] == ["initialize"]  # asked in a start of its own


def test_a_stdio_notification_flood_ends_the_session_as_a_flood_not_a_timeout():
    result, took = probe(stdio("flood"), max_bytes=5_000_000)
    assert result.outcome is ProbeOutcome.protocol_error and result.era is None
    assert result.detail == "notification flood: 1,000 messages came in a row without an answer"
    assert {c.name: c.outcome for c in result.checks}["message_bounds"] == "notification_flood"
    assert took < 5  # the call timeout is 5 s: the flood was cut at its bound, not waited out


def test_hostile_schemas_cannot_stall_the_run():
    """A backtracking outputSchema pattern is checked with a time limit (Python's `re` would hold the whole run for
    ever); a schema asking for a billion items gets no arguments built, so its tool is not called."""
    result, took = probe(stdio("hostile-schemas"), max_bytes=5_000_000)
    assert result.outcome is ProbeOutcome.ok, result.detail
    assert [(i.tool, i.outcome, i.functional) for i in result.invocations] == [("get_code", "ok", False)]
    assert "could not be checked" in result.invocations[0].detail
    assert took < 10


def test_raw_stdio_messages_carry_no_null_params():
    """JSON-RPC has no null params; a strict server would refuse `notifications/initialized` sent with them."""
    from pipeline.probe.stdio_eras import StdioChannel
    from pipeline.probe.transports import MessageCap

    async def sent() -> list[str]:
        to_server, from_prober = anyio.create_memory_object_stream(10)
        to_prober, from_server = anyio.create_memory_object_stream(10)
        channel = StdioChannel(from_server, to_server, Limits(timeout=1), MessageCap())
        await channel.send("notifications/initialized", request_id=None)
        await channel.send("ping", {}, request_id=7)  # no answer comes: a timeout, but the message went out
        return [from_prober.receive_nowait().message.model_dump_json(by_alias=True, exclude_unset=True) for _ in range(2)]

    notification, ping = anyio.run(sent)
    assert notification == '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert ping == '{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}'
