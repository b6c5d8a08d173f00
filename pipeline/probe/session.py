"""Meet a running server the way a client does, through the official SDK, within bounds.

A session is opened over the server's transport (pipeline.probe.transports bounds every message), its
handshake recorded, and a body of requests run in it; every step is bounded in time and every failure
becomes a classified outcome, never an exception that escapes. The deep probe's body is the check suite
(pipeline.probe.suite); the fast probe's over stdio is a ping.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from typing import Any, Awaitable, Callable

import anyio
import httpx
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation
from mcp_types.jsonrpc import CONNECTION_CLOSED
from pydantic import ValidationError

from pipeline import ENGINE_VERSION
from pipeline.http_headers import retry_after
from pipeline.models import CheckResult, ProbeOutcome, ProbeResult
from pipeline.probe.listing import Tapped
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from pipeline.probe.transports import DROPPED, MessageCap, ServerExit, bounded_stdio, capped_http_client

MODERN_VERSIONS = ("2026-07-28",)
CLIENT_INFO = Implementation(name="mcp-scoreboard", version=ENGINE_VERSION)


def _transport(running: Running, cap: MessageCap, exited: ServerExit, limits: Limits, total_timeout: float):
    """The SDK transport for `running`, every message bounded by `cap` (pipeline.probe.transports)."""
    if running.transport == "stdio":
        return bounded_stdio(running, cap, exited)
    clients = capped_http_client(cap, limits.timeout, total_timeout, limits.user_agent, limits.reach, limits.connect)
    if running.transport == "sse":
        return sse_client(running.url or "", timeout=limits.timeout, sse_read_timeout=total_timeout, httpx_client_factory=clients)
    return _streamable(running.url or "", clients, cap)


@asynccontextmanager
async def _streamable(url: str, clients: Callable[[], Any], cap: MessageCap):
    async with clients() as http, streamable_http_client(url, http_client=http, max_sse_event_size=cap.limit) as streams:
        yield streams


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def classify(exc: BaseException, connected: bool) -> tuple[ProbeOutcome, str]:
    """Name what went wrong. `connected`: whether the handshake had completed."""
    if isinstance(exc, BaseExceptionGroup):
        return classify(exc.exceptions[0], connected)
    text = f"{type(exc).__name__}: {exc}"[:1000]
    if isinstance(exc, TimeoutError):
        return ProbeOutcome.timeout, text
    if isinstance(exc, MCPError):
        if "timed out" in exc.message:
            return ProbeOutcome.timeout, text
        if exc.message == "Server returned an error response":
            return ProbeOutcome.http_error, text
        if connection_closed(exc):
            return (ProbeOutcome.crashed if connected else ProbeOutcome.start_failed), text
        if DROPPED in exc.message:  # an HTTP connection lost without an answer (pipeline.probe.transports.ConnectionDropped)
            return (ProbeOutcome.crashed if connected else ProbeOutcome.unreachable if "ConnectError" in exc.message
                    else ProbeOutcome.protocol_error), text
        return ProbeOutcome.protocol_error, text
    # The SDK speaks HTTP through its own httpx fork, so match transport errors by name as well as type.
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)) or names & {"ConnectError", "ConnectTimeout"}:
        return ProbeOutcome.unreachable, text
    if names & {"ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"}:
        return ProbeOutcome.timeout, text
    if isinstance(exc, (ValidationError, ValueError, RuntimeError, httpx.HTTPError)):
        return ProbeOutcome.protocol_error, text
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return ProbeOutcome.start_failed, text
    if isinstance(exc, (anyio.ClosedResourceError, anyio.EndOfStream, anyio.BrokenResourceError, OSError)):
        return (ProbeOutcome.crashed if connected else ProbeOutcome.start_failed), text
    return ProbeOutcome.protocol_error, text


def connection_closed(exc: MCPError) -> bool:
    return exc.code == CONNECTION_CLOSED and "closed" in exc.message.lower()

async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = await call()
    return value, (time.perf_counter() - started) * 1000

class _StreamWatcher:
    """Collects what the transport could not parse (non-JSON lines, malformed messages) as evidence."""

    LIMIT = 20

    def __init__(self) -> None:
        self.count = 0
        self.samples: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.count += 1
            if len(self.samples) < 3:
                self.samples.append(f"{type(message).__name__}: {message}"[:300])
        await anyio.lowlevel.checkpoint()

    def check(self) -> CheckResult:
        return CheckResult(
            name="invalid_messages",
            outcome="none" if not self.count else f"{self.count} unparseable",
            passed=self.count == 0,
            detail="; ".join(self.samples) or None,
        )


def _client(running: Running, limits: Limits, total_timeout: float, cap: MessageCap, exited: ServerExit, watcher: _StreamWatcher) -> Client:
    return Client(
        Tapped(_transport(running, cap, exited, limits, total_timeout)), mode="auto", read_timeout_seconds=limits.timeout, cache=None,
        client_info=CLIENT_INFO, message_handler=watcher,
    )


async def run_session(
    kind: str, server_id: str, running: Running, limits: Limits, total_timeout: float, now: datetime,
    body: Callable[[ProbeResult, Client], Awaitable[None]],
) -> ProbeResult:
    """Connect, record the handshake, run `body`; classify whatever goes wrong, within `total_timeout` (and each
    message within `limits.max_bytes`). When the time runs out after the handshake, what was found stands and the rest
    is not measured."""
    started = time.perf_counter()
    result = ProbeResult(
        server_id=server_id, kind=kind, started_at=now, duration_ms=0, transport=running.transport, outcome=ProbeOutcome.ok,
    )
    watcher = _StreamWatcher()
    cap = MessageCap(limits.max_bytes, limits.max_events)
    exited = ServerExit()
    connected = False
    try:
        # A 429 ends the session at once (`cap.stop`), in its handshake or after: nothing more is asked.
        with anyio.fail_after(total_timeout) as whole, anyio.CancelScope() as cap.stop:
            async with AsyncExitStack() as stack:
                client = _client(running, limits, total_timeout, cap, exited, watcher)
                _, result.connect_ms = await timed(lambda: stack.enter_async_context(client))
                connected = True
                record_handshake(result, client)
                await body(result, client)
    except TimeoutError as exc:
        if connected and whole.cancel_called:
            result.checks.append(CheckResult(name="skipped", outcome="not measured", passed=None,
                                             detail="skipped: the probe's time budget ran out after the handshake: what was not yet asked"
                                                    " is not measured"))
        elif not connected:
            result.outcome, result.detail = ProbeOutcome.timeout, f"no complete handshake within {total_timeout:.3g} s"
        else:
            result.outcome, result.detail = classify(exc, connected)
    except Exception as exc:  # noqa: BLE001 - every failure of an untrusted server is classified
        result.outcome, result.detail = classify(exc, connected)
    if cap.refused and result.outcome != ProbeOutcome.ok:
        result.outcome, result.detail = ProbeOutcome.refused, cap.refused  # the address, not the server, ended it
    _name_outcome(result, running, cap, exited, watcher, connected)
    if cap.retry_after is not None:
        _rate_limited(result, cap, limits)
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


def _rate_limited(result: ProbeResult, cap: MessageCap, limits: Limits) -> None:
    """A 429 in the session names the probe, whatever it had found before (the handshake and lists read stand): the
    server asked us to wait, so what the session had not yet asked is not measured, and the probe asks nothing more."""
    why = f"the server answered HTTP 429 to {cap.limited} in the SDK session (Retry-After: {cap.retry_after or 'not given'})"[:500]
    if limits.budget is not None:
        limits.budget.rate_limited(cap.retry_after or None)
    result.outcome, result.detail = ProbeOutcome.rate_limited, why
    result.retry_after_s = retry_after(cap.retry_after or None, time.time())
    result.checks.append(CheckResult(name="skipped", outcome="not measured", passed=None,
                                     detail=f"skipped: {why}: what the session had not yet asked is not measured"))


def _name_outcome(result: ProbeResult, running: Running, cap: MessageCap, exited: ServerExit, watcher: _StreamWatcher, connected: bool) -> None:
    """What ended the session, named: a bound the prober set, a server that exited (with its status) or dropped the
    connection, lines that were not JSON-RPC. A server lost in a tool call (a fuzz case, say) is a crash of that call:
    the handshake, lists and checks done before it stand."""
    crashed = next((c for c in result.checks if c.outcome == ProbeOutcome.crashed.value), None)
    result.exit_code = exited.code
    if cap.exceeded:
        result.checks.append(CheckResult(name="message_bounds", outcome=cap.kind or "", passed=False, detail=cap.exceeded))
    # Over Streamable HTTP a bound fails one exchange; over stdio and SSE (whose one stream carries every answer), or
    # in the handshake, it ends the session, and then what broke the session was the bound: say which, not "crashed".
    ended_by_cap = bool(cap.exceeded) and (running.transport in ("stdio", "sse") or not connected)
    if ended_by_cap:
        for call in result.invocations or []:
            if call.outcome == "crash":
                call.detail = f"the session was ended by the prober's bound ({cap.exceeded}); {call.detail}"[:300]
    if ended_by_cap and (result.outcome != ProbeOutcome.ok or crashed):
        result.outcome, result.detail = ProbeOutcome.protocol_error, f"{(cap.kind or '').replace('_', ' ')}: {cap.exceeded}"
    elif result.outcome == ProbeOutcome.ok and crashed:
        # The handshake worked, but the server died under a later request: that is a crash.
        lost = exited.describe() or "the server went away"
        result.outcome, result.detail = ProbeOutcome.crashed, f"{lost} during {crashed.name}: {crashed.detail}"
    elif result.outcome == ProbeOutcome.timeout and not connected and watcher.count:
        # It wrote, but nothing it wrote was JSON-RPC: not a silent server.
        result.outcome = ProbeOutcome.protocol_error
        result.detail = f"unparseable output: {watcher.count} lines that are not JSON-RPC, and no handshake"
    elif exited.code is not None and result.outcome in (ProbeOutcome.ok, ProbeOutcome.start_failed):
        where = _lost_in(result) or ("before the handshake" if not connected else "after the checks")
        result.detail = "; ".join(filter(None, [f"{exited.describe()} {where}", result.detail if result.outcome != ProbeOutcome.ok else None]))
    result.checks.append(watcher.check())


def _lost_in(result: ProbeResult) -> str | None:
    """Where a server that went away mid-session was lost: the tool call or check that never got its answer."""
    for call in result.invocations or []:
        if call.outcome == "crash":
            return f"during a call to {call.tool}"
    for check in result.checks:
        if check.outcome == "crash":
            return f"during {check.name}"
    for case in result.fuzz or []:
        if case.outcome == "crash":
            return f"during a fuzz call to {case.tool} ({case.case})"
    return None

def record_handshake(result: ProbeResult, client: Client) -> None:
    result.protocol_version = client.protocol_version
    result.era = "modern" if client.protocol_version in MODERN_VERSIONS else "legacy"
    result.handshake = "server/discover" if client.session.discover_result else "initialize"
    result.server_info = dump(client.server_info) if client.server_info else None
    result.capabilities = dump(client.server_capabilities)
    result.instructions = client.instructions
