"""The fast probe, the monitor's health check: a handshake (and a ping in the legacy era), nothing more.

Over HTTP it runs on the raw layer, so its timings are the exchanges' own and a gate, a rate limit or a
refusal is a named state; over stdio it runs in an SDK session.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from datetime import datetime
from typing import AsyncIterator

import anyio
import httpx
from mcp import Client

from pipeline.models import ProbeOutcome, ProbeResult
from pipeline.probe.budget import Budget
from pipeline.probe.eras import UNANSWERED, Send, http_sender, refused_streamable, try_legacy, try_modern
from pipeline.probe.failures import record_failure
from pipeline.probe.legacy_sse import open_stream
from pipeline.probe.raw import NAMED_STATES, Exchange, Limits, probe_client
from pipeline.probe.sandbox import Running
from pipeline.probe.session import MODERN_VERSIONS, run_session, timed


@asynccontextmanager
async def _raw_channel(url: str, transport: str, limits: Limits, exchanges: list[Exchange]) -> AsyncIterator[tuple[Send, httpx.AsyncClient]]:
    """Where raw messages go: POSTs to the URL (Streamable HTTP), or POSTs answered on an open event stream (legacy
    HTTP+SSE, whose GET is recorded first among `exchanges`)."""
    if transport != "sse":
        async with probe_client(limits) as client:
            yield http_sender(client, url, limits), client
        return
    async with probe_client(limits, connections=2) as client, open_stream(client, url, limits) as stream:
        exchanges.append(stream.get)
        yield stream.send, client


async def raw_fast_probe(server_id: str, url: str, *, transport: str = "streamable-http", limits: Limits, total_timeout: float,
                         now: datetime) -> ProbeResult:
    """The monitor's health check over HTTP, on the raw layer: `server/discover` (modern), else `initialize` +
    `notifications/initialized` + `ping` (legacy), then the session is closed; an endpoint that refuses Streamable
    HTTP as an SSE-only server does is checked over HTTP+SSE. Timings are the exchanges' own (over SSE, connecting
    includes opening the stream); a gate, a rate limit or a refusal is a named state."""
    started = time.perf_counter()
    limits = limits.within(Budget(total_timeout))  # each exchange waits at most what is left of the whole check
    result = ProbeResult(server_id=server_id, kind="fast", started_at=now, duration_ms=0, transport=transport, outcome=ProbeOutcome.ok)
    exchanges: list[Exchange] = []
    problems: list[str] = []
    with anyio.move_on_after(total_timeout) as scope:
        try:
            await _health_check(result, url, transport, limits, exchanges, problems)
            if transport == "streamable-http" and result.era is None and refused_streamable(exchanges):
                # Kept only if SSE answers: a dead endpoint stays the Streamable HTTP failure it showed first.
                trial = result.model_copy(update={"transport": "sse"})
                over_sse: list[Exchange] = []
                await _health_check(trial, url, "sse", limits, over_sse, [])
                if trial.era is not None:
                    result = trial
                    exchanges.extend(over_sse)
        except Exception as exc:  # noqa: BLE001 - what the raw layer did not foresee is recorded, not raised
            problems.append(f"unclassified failure: {type(exc).__name__}: {exc}"[:500])
    if scope.cancelled_caught:
        result.outcome, result.detail = ProbeOutcome.timeout, f"no complete health check within {total_timeout:g} s"
    elif result.era is None:
        record_failure(result, exchanges, problems)
    result.exchanges = [e.evidence() for e in exchanges]
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


async def _health_check(result: ProbeResult, url: str, transport: str, limits: Limits, exchanges: list[Exchange], problems: list[str]) -> None:
    async with _raw_channel(url, transport, limits, exchanges) as (send, client):
        opened = exchanges[-1].ms if transport == "sse" else 0.0  # the event stream's GET
        if await try_modern(send, exchanges, problems) is not None:
            result.era, result.protocol_version, result.handshake = "modern", MODERN_VERSIONS[0], "server/discover"
            result.connect_ms = opened + exchanges[-1].ms
        elif exchanges[-1].outcome not in NAMED_STATES and exchanges[-1].failure not in UNANSWERED:  # gated, rate limited or silent: no more
            legacy, headers = await try_legacy(send, exchanges, problems)
            if legacy is not None:
                result.era, result.protocol_version, result.handshake = "legacy", legacy["protocolVersion"], "initialize"
                result.connect_ms = opened + next(e.ms for e in reversed(exchanges) if e.method == "initialize")
                ping = await send("ping", {}, request_id=3, headers=headers)
                exchanges.append(ping)
                result.ping_ms = ping.ms if ping.ok else None
                if "Mcp-Session-Id" in headers and transport != "sse":  # end the session we opened, as a client should
                    with anyio.move_on_after(limits.wait()):
                        try:
                            await client.delete(url, headers=headers)
                        except httpx.HTTPError:
                            pass


async def fast_probe(server_id: str, running: Running, *, limits: Limits, total_timeout: float, now: datetime) -> ProbeResult:
    """Health check: connect + handshake (+ ping in the legacy era, which has one). No lists, no tool calls."""
    if running.transport != "stdio" and running.url:
        return await raw_fast_probe(server_id, running.url, transport=running.transport, limits=limits, total_timeout=total_timeout, now=now)

    async def ping(result: ProbeResult, client: Client) -> None:
        if result.era == "legacy":
            _, result.ping_ms = await timed(client.session.send_ping)

    return await run_session("fast", server_id, running, limits, total_timeout, now, ping)
