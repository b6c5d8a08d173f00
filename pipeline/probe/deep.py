"""The deep probe: which eras a server speaks, then everything a client can ask of it in one SDK session.

Over HTTP (Streamable or legacy SSE) the raw layer (pipeline.probe.raw, eras, endpoint) negotiates both eras
and records the HTTP facts the SDK hides, before the session; over stdio the session comes first.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

import anyio

from pipeline.http_headers import retry_after
from pipeline.models import CheckResult, EraFacts, ProbeOutcome, ProbeResult
from pipeline.probe.budget import Budget
from pipeline.probe.endpoint import endpoint_facts
from pipeline.probe.eras import Negotiation, negotiate, refused_streamable
from pipeline.probe.failures import named_state, record_failure
from pipeline.probe.legacy_sse import STREAM, negotiate_sse
from pipeline.probe.raw import Failure, Limits, probe_client
from pipeline.probe.sandbox import Running
from pipeline.probe.session import run_session
from pipeline.probe.stdio_eras import ask_legacy
from pipeline.probe.suite import run_checks


async def deep_probe(server_id: str, running: Running, *, limits: Limits, total_timeout: float, now: datetime) -> ProbeResult:
    """Handshake in whichever era the server speaks, list everything, run the checks and call the safe tools through
    the SDK session; find out which eras work (`limits.allow_private`: the URL may be on loopback or a private network,
    for servers we started ourselves or a target the user named).

    Over HTTP (Streamable or legacy SSE) both eras are negotiated on the raw layer first, with the endpoint's HTTP
    facts, and the SDK session is opened only when an era works: a server that floods, streams for ever, sends a
    gigabyte or lies in its handshake is classified by the bounded raw layer alone. Over stdio the session (itself
    bounded in time and bytes) comes first, and a server that speaks the modern era is asked `initialize` in a start
    of its own (pipeline.probe.stdio_eras).

    The whole probe shares one budget (`total_timeout`, or the one `limits` already carries): every exchange waits at
    most what is left of it, and once the server has shown it does not answer, or answered 429, nothing more is sent;
    what was not asked is recorded as not measured (a `skipped` check, None facts)."""
    started = time.perf_counter()
    budget = limits.budget or Budget(total_timeout)
    limits = limits.within(budget)
    if running.transport == "stdio" or not running.url:
        result = await run_session("deep", server_id, running, limits, budget.left(), now, run_checks)
        if result.era is None and result.outcome == ProbeOutcome.timeout:
            budget.halt(f"the server did not answer its handshake ({result.detail})")
        if running.transport == "stdio" and result.era is not None and not budget.stopped():
            with anyio.move_on_after(budget.left()):
                try:
                    await _other_era(result, running, limits)
                except Exception as exc:  # noqa: BLE001 - a second start that fails leaves the session's findings whole
                    result.checks.insert(0, CheckResult(name="era_negotiation", outcome=result.era, passed=True,
                                                        detail=f"the other era could not be asked: {type(exc).__name__}: {exc}"[:1000]))
        if running.transport == "stdio" and (why := budget.stopped()):
            skipped = ["the lists, checks and tool calls"] if result.era is None else []
            if result.era == "modern" and (result.eras is None or result.eras.legacy is None):
                skipped.append("the legacy era (a second start)")
            _skipped(result, why, skipped)
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result
    observed = ProbeResult(server_id=server_id, kind="deep", started_at=now, duration_ms=0, transport=running.transport,
                           outcome=ProbeOutcome.protocol_error)
    try:
        negotiation = await _observe(observed, running, limits, budget)
    except Exception as exc:  # noqa: BLE001 - the raw layer classifies what servers do; this is what it did not foresee
        observed.outcome, observed.detail = ProbeOutcome.protocol_error, f"unclassified failure: {type(exc).__name__}: {exc}"[:1000]
        observed.duration_ms = (time.perf_counter() - started) * 1000
        return observed
    why = budget.stopped()
    if negotiation is None:
        observed.outcome, observed.detail = ProbeOutcome.timeout, f"no complete negotiation within {budget.seconds:g} s"
    elif negotiation.era == "broken":
        record_failure(observed, negotiation.exchanges, negotiation.problems)
    elif why and budget.retry_after is not None:  # a 429 after the handshake (to a later request, or a well-known GET)
        observed.outcome, observed.detail = ProbeOutcome.rate_limited, why
        observed.retry_after_s = retry_after(budget.retry_after or None, time.time())
    elif why:
        observed.outcome, observed.detail = ProbeOutcome.timeout, f"the SDK session was not opened: {why}"
    if negotiation is None or negotiation.era == "broken" or why:
        if why:
            _skipped(observed, why, [*(["the eras not yet asked"] if negotiation is not None and negotiation.unasked else []),
                                     "the endpoint's other requests (well-known documents, setup page, TLS)", "the SDK session"])
        observed.duration_ms = (time.perf_counter() - started) * 1000
        return observed
    # The SDK session speaks the transport that answered (an endpoint that refused Streamable HTTP may speak SSE).
    result = await run_session("deep", server_id, replace(running, transport=negotiation.transport), limits, budget.left(), now, run_checks)
    result.eras, result.http, result.exchanges = observed.eras, observed.http, observed.exchanges
    result.checks[:0] = observed.checks
    named_state(result, negotiation.exchanges)
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


BACKSTOP = 0.5  # seconds past the budget before the raw layer's steps are cut off unclassified


async def negotiate_http(url: str, transport: str, limits: Limits) -> Negotiation:
    """Both eras over Streamable HTTP, or over legacy HTTP+SSE when the catalog says so, or when the endpoint refuses
    Streamable HTTP the way an SSE-only server does (the spec's backwards-compatibility rule)."""
    found = None
    if transport == "streamable-http":
        async with probe_client(limits) as client:
            found = await negotiate(client, url, limits)
        if found.era != "broken" or not refused_streamable(found.exchanges):
            return found
    async with probe_client(limits, connections=3) as client:  # the modern era's stream, the legacy era's, one POST
        over_sse = await negotiate_sse(client, url, limits)
    if found is None:
        return over_sse
    if over_sse.era == "broken":
        return found  # neither transport: Streamable HTTP's refusal says more about the endpoint
    status = found.exchanges[-1].status
    over_sse.problems.insert(0, f"Streamable HTTP refused (HTTP {status}); the legacy HTTP+SSE transport answered at the same URL")
    over_sse.exchanges[:0] = found.exchanges  # the refusals are evidence too
    return over_sse


async def _observe(result: ProbeResult, running: Running, limits: Limits, budget: Budget) -> Negotiation | None:
    """Dual-era negotiation and the endpoint's facts from the raw layer, into `result`; the negotiation, or None when
    the budget cut it short (what it cut short stays unknown)."""
    started = time.perf_counter()
    negotiation = None
    # A backstop: every step waits within the budget already, and classifies what it saw when the budget ends.
    with anyio.move_on_after(budget.left() + BACKSTOP):
        negotiation = await negotiate_http(running.url or "", running.transport, limits)
        result.transport = negotiation.transport
        modern, legacy = negotiation.era in ("modern", "dual"), negotiation.era in ("legacy", "dual")
        # A server that never answered server/discover was asked about neither era: not measured, not "no".
        result.eras = EraFacts() if negotiation.unasked else EraFacts(modern=modern, legacy=legacy, discover=modern,
                                                                         header_routing=negotiation.header_routing,
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
    asked, exchanges, problems = await ask_legacy(running, limits) if modern else (True, [], [])
    legacy = None if any(e.failure is Failure.skipped for e in exchanges) else asked  # the budget ran out first: not measured
    hints = result.eras.list_cache_hints if result.eras and modern else None
    result.eras = EraFacts(modern=modern, legacy=legacy, discover=modern, header_routing=None, list_cache_hints=hints)
    era = "dual" if modern and legacy else "modern" if modern else "legacy"
    detail = "; ".join([*problems, *(f"initialize: {e.detail or e.error}" for e in exchanges if not e.ok and e.method == "initialize")])
    result.checks.insert(0, CheckResult(name="era_negotiation", outcome=era, passed=True, detail=detail[:1000] or None,
                                        ms=(time.perf_counter() - started) * 1000))
    result.exchanges = [e.evidence() for e in exchanges] or None


def _skipped(result: ProbeResult, why: str, steps: list[str]) -> None:
    """Record what the probe did not ask, and why: not measured, which is neither a pass nor a failure (one `skipped`
    check, which the session may have begun)."""
    if not steps:
        return
    earlier = next((c for c in result.checks if c.name == "skipped"), None)
    if earlier is not None:
        earlier.detail = f"{earlier.detail}; {'; '.join(steps)}"[:1000]
    else:
        result.checks.append(CheckResult(name="skipped", outcome="not measured", passed=None, detail=f"skipped: {why}: {'; '.join(steps)}"[:1000]))
