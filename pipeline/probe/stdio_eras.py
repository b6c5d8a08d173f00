"""The other era over stdio, raw: does a server that speaks 2026-07-28 also accept `initialize`?

Over HTTP each request stands alone, so both eras are asked of one endpoint. Over stdio the era
belongs to the connection: a server serving 2026-07-28 refuses `initialize` on it (the Python SDK
answers -32022), so the question needs a start of its own. The SDK session's own handshake asks
the modern question first (`server/discover`, falling back to `initialize`); when it settled on the
modern era, the prober starts the server once more and asks `initialize` and
`notifications/initialized` itself, over the bounded stdio transport. The answer is awaited within
the call timeout; whatever else the server writes meanwhile is counted and capped.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from pipeline.probe.eras import try_legacy
from pipeline.probe.raw import Exchange, Failure, Limits, Stopped, skipped
from pipeline.probe.sandbox import Running
from pipeline.probe.transports import MessageCap, bounded_stdio


class StdioChannel:
    """Raw JSON-RPC over an open stdio transport (eras.Send): one message out, read until its answer."""

    def __init__(self, read: MemoryObjectReceiveStream, write: MemoryObjectSendStream, limits: Limits, cap: MessageCap) -> None:
        self.read, self.write, self.limits, self.cap = read, write, limits, cap
        self.gone: Exchange | None = None  # set once the server has stopped answering for good

    async def send(self, method: str, params: dict[str, Any] | None = None, *, request_id: int | None = 1,
                   headers: dict[str, str] | None = None) -> Exchange:  # headers: stdio has none
        found = Exchange(method=method, url="stdio")
        if skipped(found, self.limits):
            return found
        if self.gone is not None:
            found.failure, found.detail = self.gone.failure, f"the server had already stopped: {self.gone.detail}"
            return found
        started = time.perf_counter()
        wait = self.limits.wait()
        try:
            with anyio.fail_after(wait):
                extra = {"params": params} if params is not None else {}  # JSON-RPC has no null params: leave them out
                message = (mcp_types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, **extra) if request_id is not None
                           else mcp_types.JSONRPCNotification(jsonrpc="2.0", method=method, **extra))
                await self.write.send(SessionMessage(message))
                if request_id is not None:
                    found.response = await self._answer(request_id, found)
        except Stopped as stop:
            found.failure, found.detail = stop.failure, stop.detail
        except TimeoutError:
            found.failure, found.detail = Failure.timeout, "; ".join(filter(None, [f"no answer within {wait:.3g} s", found.detail]))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            if self.cap.exceeded:
                found.failure, found.detail = Failure(self.cap.kind), self.cap.exceeded
            else:
                found.failure, found.detail = Failure.dropped, "the server closed its stdout (it exited, or stopped reading)"
        found.ms = (time.perf_counter() - started) * 1000
        if found.failure in (Failure.too_large, Failure.dropped, Failure.notification_flood):
            self.gone = found
        return found

    async def _answer(self, request_id: int, found: Exchange) -> dict[str, Any]:
        """Read until the answer to `request_id`. Lines that are not JSON-RPC are counted and passed over, as the SDK
        session does (servers that log to stdout are common; the session's invalid_messages check reports them)."""
        invalid, first = 0, ""
        while True:
            item = await self.read.receive()
            found.events += 1
            if found.events > self.limits.max_events:
                raise Stopped(Failure.notification_flood, f"{self.limits.max_events:,} lines without the answer ({invalid} not JSON-RPC)")
            if isinstance(item, Exception):
                invalid, first = invalid + 1, first or str(item)[:120]
                found.detail = f"{invalid} lines were not JSON-RPC (the first: {first})"
                continue
            message = item.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
            found.notifications += 1


async def ask_legacy(running: Running, limits: Limits) -> tuple[bool, list[Exchange], list[str]]:
    """(does `initialize` work, the exchanges, problems) in a start of the server of its own."""
    exchanges: list[Exchange] = []
    problems: list[str] = []
    cap = MessageCap(limits.max_bytes, limits.max_events)
    async with bounded_stdio(running, cap) as (read, write):
        legacy, _ = await try_legacy(StdioChannel(read, write, limits, cap).send, exchanges, problems)
    return legacy is not None, exchanges, problems
