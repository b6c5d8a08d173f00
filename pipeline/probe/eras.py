"""Dual-era negotiation over Streamable HTTP, on the raw layer (seed 003).

Modern first: `server/discover` at 2026-07-28 with the per-request `_meta` envelope and the
`Mcp-Method` header, no session. Then legacy: `initialize` with the newest handshake version,
`notifications/initialized` on the session it opens. The server is modern, legacy, dual or
broken; spec-readiness evidence is recorded beside it: whether `server/discover` answers, whether
the server routes on the `Mcp-Method` header (a request without it must be refused with -32020),
and whether list results carry cache hints (`ttlMs`). A server that claims a protocol version it
cannot have (an unknown one, or the modern one through `initialize`) is not taken at its word.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Protocol

import httpx

from pipeline.models import ProbeOutcome
from pipeline.probe.budget import Budget
from pipeline.probe.raw import (
    CLIENT_INFO,
    HANDSHAKE_VERSION,
    KNOWN_VERSIONS,
    MODERN_VERSION,
    Exchange,
    Failure,
    Limits,
    exchange,
    modern_meta,
    telling_failure,
)

HEADER_MISMATCH = -32020
Era = Literal["modern", "legacy", "dual", "broken"]


class Send(Protocol):
    """One JSON-RPC message to the server and what came back: a POST on Streamable HTTP (`raw.exchange`), or a POST
    answered on the event stream on legacy HTTP+SSE (`legacy_sse.SseStream.send`)."""

    def __call__(self, method: str, params: dict[str, Any] | None = None, *, request_id: int | None = 1,
                 headers: dict[str, str] | None = None) -> Awaitable[Exchange]: ...


def http_sender(client: httpx.AsyncClient, url: str, limits: Limits) -> Send:
    return partial(exchange, client, url, limits=limits)


@dataclass
class Negotiation:
    era: Era = "broken"
    transport: Literal["streamable-http", "sse"] = "streamable-http"
    protocol_version: str | None = None
    handshake: str | None = None  # "server/discover" or "initialize": what the session will use
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    instructions: str | None = None
    session_id: str | None = None
    header_routing: bool | None = None  # refuses a request whose Mcp-Method header is missing (modern only)
    list_cache_hints: bool | None = None  # tools/list carries ttlMs (modern only)
    unasked: str | None = None  # why nothing was asked after the first request (no answer to it): neither era is measured
    problems: list[str] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def outcome(self) -> ProbeOutcome:
        """ok when either era works; otherwise the most telling failure (a gate or a rate limit before "down")."""
        if self.era != "broken":
            return ProbeOutcome.ok
        failed = telling_failure(self.exchanges)
        return failed.outcome if failed else ProbeOutcome.unreachable

    def evidence(self) -> dict[str, Any]:
        return {"era": self.era, "transport": self.transport, "protocol_version": self.protocol_version, "handshake": self.handshake,
                "session_id": self.session_id is not None, "header_routing": self.header_routing, "list_cache_hints": self.list_cache_hints,
                "problems": self.problems, "exchanges": [e.evidence() for e in self.exchanges]}


def _modern_headers(method: str) -> dict[str, str]:
    return {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}


async def try_modern(send: Send, exchanges: list[Exchange], problems: list[str]) -> dict[str, Any] | None:
    """`server/discover` at 2026-07-28: its result when it names that version among its supported ones."""
    reply = await send("server/discover", {"_meta": modern_meta()}, request_id=1, headers=_modern_headers("server/discover"))
    exchanges.append(reply)
    if not reply.ok:
        return None
    result = reply.response["result"]  # type: ignore[index]
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    if not isinstance(versions, list) or MODERN_VERSION not in versions:
        problems.append(f"server/discover answered without {MODERN_VERSION} in supportedVersions: {str(versions)[:120]}")
        return None
    return result


async def try_legacy(send: Send, exchanges: list[Exchange], problems: list[str]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """`initialize` with the newest handshake version, then `notifications/initialized`: the result (when it names a
    version a handshake can negotiate) and the headers every later request of the session carries."""
    reply = await send("initialize", {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}, request_id=2)
    exchanges.append(reply)
    if not reply.ok:
        return None, {}
    result = reply.response["result"]  # type: ignore[index]
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if version not in KNOWN_VERSIONS or version == MODERN_VERSION:
        problems.append(f"initialize answered with protocol version {str(version)[:60]!r}, which no handshake can negotiate")
        return None, {}
    session = reply.headers.get("mcp-session-id")
    headers = {"MCP-Protocol-Version": version, **({"Mcp-Session-Id": session} if session else {})}
    exchanges.append(await send("notifications/initialized", request_id=None, headers=headers))
    return result, headers


async def negotiate(client: httpx.AsyncClient, url: str, limits: Limits = Limits()) -> Negotiation:
    """Both eras over Streamable HTTP."""
    return await negotiate_over(http_sender(client, url, limits), budget=limits.budget)


# Failures of a first request after which nothing more is asked: the address is not ours to dial, the server asked us
# to wait, it did not answer at all, or the probe had already stopped asking. A second request would not differ.
UNANSWERED = (Failure.refused_private, Failure.rate_limited, Failure.timeout, Failure.skipped)

# Where the legacy era is asked: over Streamable HTTP the same sender (each request stands alone); over HTTP+SSE a
# fresh event stream, since the era belongs to the connection (a server settles it at the connection's first request).
LegacyChannel = Callable[[], AbstractAsyncContextManager[Send | None]]


def same_channel(send: Send) -> LegacyChannel:
    @asynccontextmanager
    async def channel() -> AsyncIterator[Send]:
        yield send

    return channel


async def negotiate_over(send: Send, found: Negotiation | None = None, *, budget: Budget | None = None,
                         legacy_channel: LegacyChannel | None = None) -> Negotiation:
    """Both eras: `server/discover` through `send`, then `initialize` through `legacy_channel` (by default `send` too),
    then spec readiness through `send` when the modern era answers. A server that does not answer `server/discover`
    at all (or refuses us by policy or rate limit) is asked nothing more: the other era is not measured."""
    found = found or Negotiation()
    modern = await try_modern(send, found.exchanges, found.problems)
    first = found.exchanges[-1]
    if first.failure is Failure.timeout and budget is not None:
        budget.halt(f"the server did not answer server/discover ({first.detail})")
    if first.failure in UNANSWERED:
        found.unasked = first.detail or first.failure.value
        return found
    async with (legacy_channel or same_channel(send))() as legacy_send:
        legacy, headers = await try_legacy(legacy_send, found.exchanges, found.problems) if legacy_send is not None else (None, {})
    found.session_id = headers.get("Mcp-Session-Id")
    if modern is not None:
        await _spec_readiness(send, found)
    found.era = "dual" if modern and legacy else "modern" if modern else "legacy" if legacy else "broken"
    chosen = modern or legacy
    if chosen is not None:
        info = chosen.get("serverInfo") or (chosen.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        found.server_info = info if isinstance(info, dict) else None
        found.capabilities = chosen.get("capabilities") if isinstance(chosen.get("capabilities"), dict) else None
        found.instructions = chosen.get("instructions") if isinstance(chosen.get("instructions"), str) else None
        found.protocol_version = MODERN_VERSION if modern else legacy["protocolVersion"]  # type: ignore[index]
        found.handshake = "server/discover" if modern else "initialize"
    return found


def refused_streamable(exchanges: list[Exchange]) -> bool:
    """Did the endpoint refuse every Streamable HTTP POST the way a legacy HTTP+SSE server does (400, 404 or 405)?
    The spec's backwards-compatibility rule then has the client try the old transport at the same URL."""
    return bool(exchanges) and all(e.failure in (Failure.http_error, Failure.wrong_content_type) and e.status in (400, 404, 405)
                                   for e in exchanges)


async def _spec_readiness(send: Send, found: Negotiation) -> None:
    """Header routing (a request without Mcp-Method must be refused) and list-cache hints (ttlMs on tools/list)."""
    unrouted = await send("tools/list", {"_meta": modern_meta()}, request_id=3, headers={"MCP-Protocol-Version": MODERN_VERSION})
    if unrouted.failure is Failure.skipped:
        return  # not measured
    found.exchanges.append(unrouted)
    # Over HTTP+SSE the refusal comes on the stream, so the POST's status says nothing there.
    found.header_routing = (unrouted.error or {}).get("code") == HEADER_MISMATCH and (found.transport == "sse" or unrouted.status == 400)
    listed = await send("tools/list", {"_meta": modern_meta()}, request_id=4, headers=_modern_headers("tools/list"))
    if listed.failure is Failure.skipped:
        return
    found.exchanges.append(listed)
    if listed.ok and isinstance(listed.response["result"], dict):  # type: ignore[index]
        found.list_cache_hints = "ttlMs" in listed.response["result"]  # type: ignore[index]
