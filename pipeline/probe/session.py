"""Meet a running server the way a client does, with the official SDK, and record what it saw.

Every step is bounded in time; every failure becomes a classified outcome, never an exception
that escapes. The SDK hides HTTP facts (status codes, headers); over Streamable HTTP the raw layer
(pipeline.probe.raw, eras, endpoint) records them beside the SDK's session.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence

import anyio
import httpx
import jsonschema
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult, Implementation
from mcp_types.jsonrpc import CONNECTION_CLOSED
from pydantic import ValidationError

from pipeline import ENGINE_VERSION
from pipeline.http_headers import retry_after
from pipeline.models import AppsFacts, CheckResult, EraFacts, FuzzCase, Invocation, ProbeOutcome, ProbeResult
from pipeline.probe.endpoint import endpoint_facts
from pipeline.probe.eras import Negotiation, Send, http_sender, negotiate, refused_streamable, try_legacy, try_modern
from pipeline.probe.invoke import arguments_for, functional, fuzz_cases, missing_required, safe_to_call, wrong_type
from pipeline.probe.legacy_sse import STREAM, negotiate_sse, open_stream
from pipeline.probe.raw import NAMED_STATES, Exchange, Limits, probe_client, telling_failure
from pipeline.probe.sandbox import Running
from pipeline.probe.stdio_eras import ask_legacy
from pipeline.probe.tooltext import tool_text_checks
from pipeline.probe.transports import MessageCap, bounded_stdio, capped_http_client

MODERN_VERSIONS = ("2026-07-28",)
MAX_LIST_PAGES = 20  # pagination is bounded; a cursor seen twice ends it as a loop
UNKNOWN_TOOL = "scoreboard_probe_no_such_tool"
CLIENT_INFO = Implementation(name="mcp-scoreboard", version=ENGINE_VERSION)


def _transport(running: Running, cap: MessageCap, limits: Limits, total_timeout: float):
    """The SDK transport for `running`, every message bounded by `cap` (pipeline.probe.transports)."""
    if running.transport == "stdio":
        return bounded_stdio(running, cap)
    clients = capped_http_client(cap, limits.timeout, total_timeout, limits.user_agent)
    if running.transport == "sse":
        return sse_client(running.url or "", timeout=limits.timeout, sse_read_timeout=total_timeout, httpx_client_factory=clients)
    return _streamable(running.url or "", clients, cap)


@asynccontextmanager
async def _streamable(url: str, clients: Callable[[], Any], cap: MessageCap):
    async with clients() as http, streamable_http_client(url, http_client=http, max_sse_event_size=cap.limit) as streams:
        yield streams


def _dump(model: Any) -> dict[str, Any]:
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
        if _connection_closed(exc):
            return (ProbeOutcome.crashed if connected else ProbeOutcome.start_failed), text
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


def _connection_closed(exc: MCPError) -> bool:
    return exc.code == CONNECTION_CLOSED and "closed" in exc.message.lower()


# Errors the SDK's HTTP transport makes up when the server sent no JSON-RPC error: an HTTP 5xx, a body it could not
# parse (or our byte cap stopped), a stream that ended without an answer, a wrong content type. The server did not
# handle the request with an error of its own, so these never count as "handled".
_STAND_INS = ("Server returned an error response", "Failed to parse JSON response", "SSE stream", "Unexpected content type")


def _stand_in(exc: MCPError) -> bool:
    return exc.message.startswith(_STAND_INS)


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = await call()
    return value, (time.perf_counter() - started) * 1000


async def _list_all(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> tuple[list[dict[str, Any]], str | None]:
    """Follow nextCursor, bounded in pages, stopping on a repeated cursor."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_LIST_PAGES):
        page = await fetch(cursor)
        items.extend(_dump(item) for item in getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items, None
        if cursor in seen:
            return items, f"pagination loop: cursor {cursor[:60]!r} repeated"
        seen.add(cursor)
    return items, f"pagination stopped after {MAX_LIST_PAGES} pages"


def schema_problems(tool: dict[str, Any]) -> list[str]:
    """Why a tool's schemas are not valid object JSON Schemas (empty when they are)."""
    problems = []
    for key in ("inputSchema", "outputSchema"):
        schema = tool.get(key)
        if schema is None:
            if key == "inputSchema":
                problems.append("inputSchema missing")
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"{key} is not an object schema")
            continue
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            problems.append(f"{key} invalid: {exc.message[:200]}")
    return problems


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


def _client(running: Running, limits: Limits, total_timeout: float, cap: MessageCap, watcher: _StreamWatcher) -> Client:
    return Client(
        _transport(running, cap, limits, total_timeout), mode="auto", read_timeout_seconds=limits.timeout, cache=None,
        client_info=CLIENT_INFO, message_handler=watcher,
    )


async def _probe(
    kind: str, server_id: str, running: Running, limits: Limits, total_timeout: float, now: datetime,
    body: Callable[[ProbeResult, Client], Awaitable[None]],
) -> ProbeResult:
    """Connect, record the handshake, run `body`; classify whatever goes wrong, within `total_timeout` (and each
    message within `limits.max_bytes`)."""
    started = time.perf_counter()
    result = ProbeResult(
        server_id=server_id, kind=kind, started_at=now, duration_ms=0, transport=running.transport, outcome=ProbeOutcome.ok,
    )
    watcher = _StreamWatcher()
    cap = MessageCap(limits.max_bytes, limits.max_events)
    connected = False
    try:
        with anyio.fail_after(total_timeout):
            async with AsyncExitStack() as stack:
                client = _client(running, limits, total_timeout, cap, watcher)
                _, result.connect_ms = await _timed(lambda: stack.enter_async_context(client))
                connected = True
                _record_handshake(result, client)
                await body(result, client)
    except Exception as exc:  # noqa: BLE001 - every failure of an untrusted server is classified
        result.outcome, result.detail = classify(exc, connected)
    crashed = next((c for c in result.checks if c.outcome == ProbeOutcome.crashed.value), None)
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
        result.outcome, result.detail = ProbeOutcome.crashed, f"server exited during {crashed.name}: {crashed.detail}"
    result.checks.append(watcher.check())
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


async def deep_probe(server_id: str, running: Running, *, limits: Limits, total_timeout: float, now: datetime) -> ProbeResult:
    """Handshake in whichever era the server speaks, list everything, run the checks and call the safe tools through
    the SDK session; find out which eras work (`limits.allow_private`: the URL may be on loopback or a private network,
    for servers we started ourselves or a target the user named).

    Over HTTP (Streamable or legacy SSE) both eras are negotiated on the raw layer first, with the endpoint's HTTP
    facts, and the SDK session is opened only when an era works: a server that floods, streams for ever, sends a
    gigabyte or lies in its handshake is classified by the bounded raw layer alone. Over stdio the session (itself
    bounded in time and bytes) comes first, and a server that speaks the modern era is asked `initialize` in a start
    of its own (pipeline.probe.stdio_eras)."""
    started = time.perf_counter()
    deadline = started + total_timeout  # one deadline for the whole probe, however it is split
    if running.transport == "stdio" or not running.url:
        result = await _probe("deep", server_id, running, limits, total_timeout, now, _run_checks)
        if running.transport == "stdio" and result.era is not None:
            with anyio.move_on_after(deadline - time.perf_counter()):
                try:
                    await _other_era(result, running, limits)
                except Exception as exc:  # noqa: BLE001 - a second start that fails leaves the session's findings whole
                    result.checks.insert(0, CheckResult(name="era_negotiation", outcome=result.era, passed=True,
                                                        detail=f"the other era could not be asked: {type(exc).__name__}: {exc}"[:1000]))
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result
    observed = ProbeResult(server_id=server_id, kind="deep", started_at=now, duration_ms=0, transport=running.transport,
                           outcome=ProbeOutcome.protocol_error)
    try:
        negotiation = await _observe(observed, running, limits, total_timeout)
    except Exception as exc:  # noqa: BLE001 - the raw layer classifies what servers do; this is what it did not foresee
        observed.outcome, observed.detail = ProbeOutcome.protocol_error, f"unclassified failure: {type(exc).__name__}: {exc}"[:1000]
        observed.duration_ms = (time.perf_counter() - started) * 1000
        return observed
    if negotiation is None:
        observed.outcome, observed.detail = ProbeOutcome.timeout, f"no complete negotiation within {total_timeout:g} s"
    elif negotiation.era == "broken":
        _record_failure(observed, negotiation.exchanges, negotiation.problems)
    if negotiation is None or negotiation.era == "broken":
        observed.duration_ms = (time.perf_counter() - started) * 1000
        return observed
    # The SDK session speaks the transport that answered (an endpoint that refused Streamable HTTP may speak SSE).
    result = await _probe("deep", server_id, replace(running, transport=negotiation.transport), limits, max(0.0, deadline - time.perf_counter()),
                          now, _run_checks)
    result.eras, result.http, result.exchanges = observed.eras, observed.http, observed.exchanges
    result.checks[:0] = observed.checks
    _named_state(result, negotiation.exchanges)
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


async def negotiate_http(url: str, transport: str, limits: Limits) -> Negotiation:
    """Both eras over Streamable HTTP, or over legacy HTTP+SSE when the catalog says so, or when the endpoint refuses
    Streamable HTTP the way an SSE-only server does (the spec's backwards-compatibility rule)."""
    found = None
    if transport == "streamable-http":
        async with probe_client(limits) as client:
            found = await negotiate(client, url, limits)
        if found.era != "broken" or not refused_streamable(found.exchanges):
            return found
    async with probe_client(limits, connections=2) as client:
        over_sse = await negotiate_sse(client, url, limits)
    if found is None:
        return over_sse
    if over_sse.era == "broken":
        return found  # neither transport: Streamable HTTP's refusal says more about the endpoint
    status = found.exchanges[-1].status
    over_sse.problems.insert(0, f"Streamable HTTP refused (HTTP {status}); the legacy HTTP+SSE transport answered at the same URL")
    over_sse.exchanges[:0] = found.exchanges  # the refusals are evidence too
    return over_sse


async def _observe(result: ProbeResult, running: Running, limits: Limits, total_timeout: float) -> Negotiation | None:
    """Dual-era negotiation and the endpoint's facts from the raw layer, into `result`; the negotiation, or None when
    the deadline cut it short (what it cut short stays unknown)."""
    started = time.perf_counter()
    negotiation = None
    with anyio.move_on_after(total_timeout):
        negotiation = await negotiate_http(running.url or "", running.transport, limits)
        result.transport = negotiation.transport
        modern, legacy = negotiation.era in ("modern", "dual"), negotiation.era in ("legacy", "dual")
        result.eras = EraFacts(modern=modern, legacy=legacy, discover=modern, header_routing=negotiation.header_routing,
                               list_cache_hints=negotiation.list_cache_hints)
        result.checks.append(CheckResult(name="era_negotiation", outcome=negotiation.era, passed=negotiation.era != "broken",
                                         detail="; ".join(negotiation.problems)[:1000] or None, ms=(time.perf_counter() - started) * 1000))
        result.exchanges = [e.evidence() for e in negotiation.exchanges]
        # The facts come from the first exchange of the transport that answered (after a fallback, the stream's GET).
        first = next((e for e in negotiation.exchanges if e.method == STREAM), negotiation.exchanges[0]) if negotiation.transport == "sse" \
            else negotiation.exchanges[0]
        async with probe_client(limits) as client:
            result.http = await endpoint_facts(client, running.url or "", first, limits)
    return negotiation


async def _other_era(result: ProbeResult, running: Running, limits: Limits) -> None:
    """Over stdio, after the session: its handshake asked `server/discover` first, so a legacy session means the modern
    era failed; a modern one leaves `initialize` to ask, in a start of its own."""
    started = time.perf_counter()
    modern = result.era == "modern"
    legacy, exchanges, problems = await ask_legacy(running, limits) if modern else (True, [], [])
    hints = result.eras.list_cache_hints if result.eras and modern else None
    result.eras = EraFacts(modern=modern, legacy=legacy, discover=modern, header_routing=None, list_cache_hints=hints)
    era = "dual" if modern and legacy else "modern" if modern else "legacy"
    detail = "; ".join([*problems, *(f"initialize: {e.detail or e.error}" for e in exchanges if not e.ok and e.method == "initialize")])
    result.checks.insert(0, CheckResult(name="era_negotiation", outcome=era, passed=True, detail=detail[:1000] or None,
                                        ms=(time.perf_counter() - started) * 1000))
    result.exchanges = [e.evidence() for e in exchanges] or None


def _record_failure(result: ProbeResult, exchanges: list[Exchange], problems: Sequence[str] = ()) -> None:
    """Why the server could not be met, from the raw exchanges: their most telling failure, and the wait it asked for."""
    failed = telling_failure(exchanges)
    result.outcome = failed.outcome if failed else ProbeOutcome.protocol_error
    detail = (failed.detail or (f"JSON-RPC error {failed.error}" if failed.error else None)) if failed else None
    result.detail = "; ".join(filter(None, [detail, *problems]))[:1000] or "neither era answered well-formed"
    if result.outcome == ProbeOutcome.rate_limited and failed:
        result.retry_after_s = retry_after(failed.headers.get("retry-after"), time.time())


def _named_state(result: ProbeResult, exchanges: list[Exchange]) -> None:
    """Where the SDK session failed and the raw layer saw a gate, a rate limit or a refusal (which the SDK flattens
    into "Server returned an error response"), record that instead: a state with a name, not "down"."""
    failed = telling_failure(exchanges)
    if result.outcome != ProbeOutcome.ok and failed is not None and failed.outcome in NAMED_STATES:
        _record_failure(result, exchanges)


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
        _record_failure(result, exchanges, problems)
    result.exchanges = [e.evidence() for e in exchanges]
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


async def _health_check(result: ProbeResult, url: str, transport: str, limits: Limits, exchanges: list[Exchange], problems: list[str]) -> None:
    async with _raw_channel(url, transport, limits, exchanges) as (send, client):
        opened = exchanges[-1].ms if transport == "sse" else 0.0  # the event stream's GET
        if await try_modern(send, exchanges, problems) is not None:
            result.era, result.protocol_version, result.handshake = "modern", MODERN_VERSIONS[0], "server/discover"
            result.connect_ms = opened + exchanges[-1].ms
        elif exchanges[-1].outcome not in NAMED_STATES:
            legacy, headers = await try_legacy(send, exchanges, problems)
            if legacy is not None:
                result.era, result.protocol_version, result.handshake = "legacy", legacy["protocolVersion"], "initialize"
                result.connect_ms = opened + next(e.ms for e in reversed(exchanges) if e.method == "initialize")
                ping = await send("ping", {}, request_id=3, headers=headers)
                exchanges.append(ping)
                result.ping_ms = ping.ms if ping.ok else None
                if "Mcp-Session-Id" in headers and transport != "sse":  # end the session we opened, as a client should
                    with anyio.move_on_after(limits.timeout):
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
            _, result.ping_ms = await _timed(client.session.send_ping)

    return await _probe("fast", server_id, running, limits, total_timeout, now, ping)


def _record_handshake(result: ProbeResult, client: Client) -> None:
    result.protocol_version = client.protocol_version
    result.era = "modern" if client.protocol_version in MODERN_VERSIONS else "legacy"
    result.handshake = "server/discover" if client.session.discover_result else "initialize"
    result.server_info = _dump(client.server_info) if client.server_info else None
    result.capabilities = _dump(client.server_capabilities)
    result.instructions = client.instructions


async def _run_checks(result: ProbeResult, client: Client) -> None:
    caps = result.capabilities or {}
    checks = result.checks

    if result.era == "legacy":
        await _check(checks, "ping", lambda: client.session.send_ping(), lambda _: (True, "pong"))
        if checks[-1].passed:
            result.ping_ms = checks[-1].ms

    async def tools() -> None:
        hints: list[bool] = []

        async def page(cursor: str | None) -> Any:
            listed = await client.list_tools(cursor=cursor)
            hints.append(listed.ttl_ms is not None)
            return listed

        result.tools, problem = await _list_all(page, "tools")
        if result.era == "modern":  # seed 003's list-cache hint, as the session saw it (stdio has no raw list)
            result.eras = EraFacts(list_cache_hints=any(hints))
        if problem:
            raise RuntimeError(problem)

    await _check(checks, "tools/list", tools, lambda _: (True, f"{len(result.tools or [])} tools"))
    if "resources" in caps and not _busy(result):

        async def resources() -> None:
            result.resources, problem = await _list_all(lambda c: client.list_resources(cursor=c), "resources")
            result.resource_templates, problem2 = await _list_all(
                lambda c: client.list_resource_templates(cursor=c), "resource_templates"
            )
            if problem or problem2:
                raise RuntimeError(problem or problem2)

        await _check(checks, "resources/list", resources, lambda _: (True, f"{len(result.resources or [])} resources"))
    if "prompts" in caps and not _busy(result):

        async def prompts() -> None:
            result.prompts, problem = await _list_all(lambda c: client.list_prompts(cursor=c), "prompts")
            if problem:
                raise RuntimeError(problem)

        await _check(checks, "prompts/list", prompts, lambda _: (True, f"{len(result.prompts or [])} prompts"))

    if result.tools is not None:
        invalid = {t.get("name", "?"): schema_problems(t) for t in result.tools}
        invalid = {name: p for name, p in invalid.items() if p}
        checks.append(
            CheckResult(
                name="schema_validity",
                outcome="valid" if not invalid else "invalid",
                passed=not invalid,
                detail="; ".join(f"{n}: {', '.join(p)}" for n, p in sorted(invalid.items()))[:2000] or None,
            )
        )
    if result.tools is not None:
        checks.extend(tool_text_checks(result.tools, result.instructions))
    if not _busy(result):
        await _check_unknown_tool(checks, client, result.tools)
    if result.tools and not _busy(result):
        await _check_apps(result, client)
    if result.tools and not _busy(result):
        await _exercise_tools(result, client)


MAX_TIMEOUTS = 2


def _busy(result: ProbeResult) -> bool:
    """Has the session timed out often enough that nothing more should be asked of it? Over the legacy era a request
    that timed out keeps its connection until the server answers; from the second on, the remaining checks are not
    run (and the tool exercise stops at its own first timeout), so the SDK's connection pool never runs dry mid-probe."""
    timeouts = sum(1 for c in result.checks if c.outcome == "timeout") + sum(1 for i in result.invocations or [] if i.outcome == "timeout")
    return timeouts >= MAX_TIMEOUTS


MAX_VIEWS = 10


def ui_views(tools: list[dict[str, Any]]) -> list[str]:
    """The ui:// views tools link to (MCP Apps: `_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`)."""
    views: list[str] = []
    for tool in tools:
        meta = tool.get("_meta") if isinstance(tool.get("_meta"), dict) else {}
        ui = meta.get("ui") if isinstance(meta.get("ui"), dict) else {}
        for uri in (ui.get("resourceUri"), meta.get("ui/resourceUri")):
            if isinstance(uri, str) and uri.startswith("ui://") and uri not in views:
                views.append(uri)
    return views


async def _check_apps(result: ProbeResult, client: Client) -> None:
    """Seed 001 MCP Apps: each linked ui:// view is read (reading is safe) for its MIME type and CSP metadata."""
    views = ui_views(result.tools or [])
    if not views:
        return
    listed = {r.get("uri"): r for r in result.resources or [] if isinstance(r, dict)}
    apps = AppsFacts(views=len(views))
    problems = []
    timed_out = False
    for uri in views[:MAX_VIEWS]:
        try:
            contents = _dump(await client.read_resource(uri)).get("contents") or []
        except Exception as exc:  # noqa: BLE001 - an unreadable view is the finding
            problems.append(f"{uri}: {type(exc).__name__}: {exc}"[:200])
            if classify(exc, connected=True)[0] == ProbeOutcome.timeout:
                timed_out = True
                break  # the session may still be busy with it: the other views are not asked for
            continue
        if not contents:
            problems.append(f"{uri}: no contents")
            continue
        apps.readable += 1
        first = contents[0]
        if str(first.get("mimeType") or listed.get(uri, {}).get("mimeType") or "").lower().startswith("text/html"):
            apps.html_mime += 1
        metas = [first.get("_meta"), listed.get(uri, {}).get("_meta")]
        if any(isinstance(m, dict) and isinstance(m.get("ui"), dict) and "csp" in m["ui"] for m in metas):
            apps.csp += 1
    result.apps = apps
    result.checks.append(CheckResult(name="mcp_apps", outcome="timeout" if timed_out else f"{apps.readable}/{apps.views} readable",
                                     passed=apps.readable == apps.views, detail="; ".join(problems) or None))


MAX_INVOKED = 8  # safe tools called once each (invocation smoke test)
MAX_FUZZED = 2  # safe tools sent seed 000's fuzz cases


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[str, Any, float]:
    """("ok" | "is_error" | "jsonrpc_error" | "timeout" | "crash", the result dict or the error text, ms)."""
    started = time.perf_counter()
    try:
        # Sent as a plain request: the SDK's call_tool would check the result against the tool's outputSchema with
        # Python's `re`, which a hostile pattern can stall for ever; functional() checks it with bounded patterns.
        reply = await client.session.send_request(CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments)), CallToolResult)
        payload = _dump(reply)
        outcome = "is_error" if reply.is_error else "ok"
    except MCPError as exc:
        payload = f"{exc.code}: {exc.message}"[:500]
        outcome = ("timeout" if "timed out" in exc.message else "crash" if _connection_closed(exc) or _stand_in(exc) else "jsonrpc_error")
    except (RuntimeError, ValidationError) as exc:  # a result that is not a CallToolResult of the negotiated version
        payload, outcome = f"{type(exc).__name__}: {exc}"[:500], "invalid_result"
    except Exception as exc:  # noqa: BLE001 - the session itself broke
        payload, outcome = f"{type(exc).__name__}: {exc}"[:500], "crash"
    if outcome == "timeout" and not await _alive(client):
        # A server that died mid-call leaves the SDK waiting out its read timeout: a timeout, then a dead session, is a crash.
        outcome, payload = "crash", f"{payload}; the server was gone afterwards"
    return outcome, payload, (time.perf_counter() - started) * 1000


async def _alive(client: Client) -> bool:
    """Does the session still answer at all? (A timeout again is not proof of death.)"""
    try:
        await client.list_tools()
    except MCPError as exc:
        return not _connection_closed(exc)
    except Exception:  # noqa: BLE001 - closed streams and broken pipes: gone
        return False
    return True


async def _exercise_tools(result: ProbeResult, client: Client) -> None:
    """Seed 000/003 invocation smoke test, functional outcome, error handling with bad arguments, and fuzzing,
    only ever on tools that are read-only by annotation and by name (pipeline.probe.invoke)."""
    plans = []
    for tool in result.tools or []:
        safe, _ = safe_to_call(tool)
        arguments = arguments_for(tool.get("inputSchema")) if safe else None
        if arguments is not None:
            plans.append((tool, arguments))
    result.invocations = []
    for tool, arguments in plans[:MAX_INVOKED]:
        outcome, payload, ms = await _call(client, tool["name"], arguments)
        works, why = functional(payload, tool.get("outputSchema")) if outcome == "ok" else (False, str(payload)[:200])
        shown = "ok" if outcome in ("ok", "invalid_result") else outcome
        result.invocations.append(Invocation(tool=tool["name"], outcome=shown, functional=works if shown == "ok" else None, ms=ms, detail=why[:300]))
        if outcome in ("crash", "timeout"):
            return  # the session is gone, or may still be busy with that call: nothing more is asked of it
    with_required = next(((t, a) for t, a in plans if missing_required(t.get("inputSchema") or {}, a) is not None), None)
    if with_required is not None:
        tool, arguments = with_required
        schema = tool.get("inputSchema") or {}
        for name, bad in (("error_missing_parameter", missing_required(schema, arguments)), ("error_wrong_type", wrong_type(schema, arguments))):
            if bad is None:
                continue
            outcome, payload, ms = await _call(client, tool["name"], bad)
            handled = outcome in ("jsonrpc_error", "is_error")
            result.checks.append(CheckResult(name=name, outcome=outcome if outcome != "ok" else "accepted", passed=handled,
                                             detail=f"{tool['name']}: {str(payload)[:300]}", ms=ms))
            if outcome in ("crash", "timeout"):
                return
    result.fuzz = []
    for tool, arguments in plans[:MAX_FUZZED]:
        for case, bad in fuzz_cases(tool.get("inputSchema") or {}, arguments):
            outcome, _, _ = await _call(client, tool["name"], bad)
            verdict = {"jsonrpc_error": "proper_error", "is_error": "proper_error", "timeout": "timeout", "crash": "crash"}.get(outcome, "accepted")
            result.fuzz.append(FuzzCase(tool=tool["name"], case=case, outcome=verdict))
            if outcome in ("crash", "timeout"):
                return


async def _check(checks: list[CheckResult], name: str, call, judge) -> None:
    started = time.perf_counter()
    try:
        value = await call()
        passed, detail = judge(value)
        outcome = "ok" if passed else "failed"
    except Exception as exc:  # noqa: BLE001
        outcome, detail = classify(exc, connected=True)
        outcome, passed = outcome.value, False
    checks.append(CheckResult(name=name, outcome=outcome, passed=passed, detail=detail, ms=(time.perf_counter() - started) * 1000))


async def _check_unknown_tool(checks: list[CheckResult], client: Client, listed: list[dict[str, Any]] | None) -> None:
    """Seed 000 error handling: calling a tool that does not exist must yield an error, not a crash.

    Safe: no server tool runs (the name is one the server did not list). JSON-RPC error and isError result both
    count as handled."""
    names = {t.get("name") for t in listed or []}
    name = UNKNOWN_TOOL
    while name in names:
        name += "_"
    outcome, payload, ms = await _call(client, name, {})
    shown = {"ok": "accepted", "is_error": "is_error_result", "invalid_result": "accepted"}.get(outcome, outcome)
    detail = _first_text(payload) if isinstance(payload, dict) else str(payload)[:500]
    checks.append(CheckResult(name="error_unknown_tool", outcome=shown, passed=outcome in ("is_error", "jsonrpc_error"), detail=detail, ms=ms))


def _first_text(reply: dict[str, Any]) -> str | None:
    for block in reply.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        if text:
            return text[:500]
    return None
