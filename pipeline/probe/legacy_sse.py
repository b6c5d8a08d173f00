"""Raw MCP over the legacy HTTP+SSE transport (2024-11-05), bounded like pipeline.probe.raw.

The client GETs an event stream; the server's first event, `endpoint`, names the URL to POST messages
to; every answer comes back as a `message` event on the stream. So one exchange here is a POST plus
a wait on the stream, and the stream itself is bounded: one deadline to the `endpoint` event, the byte
cap and the event cap over its whole life, redirects counted, and an endpoint on another origin refused,
since a hostile server could otherwise point our POSTs anywhere (the client dials only the addresses its
pins allow: pipeline.net).
"""

from __future__ import annotations

import json
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from pipeline.net import AddressRefused
from pipeline.probe.eras import UNANSWERED, Negotiation, Send, negotiate_over
from pipeline.probe.raw import (
    TRANSPORT_ERRORS,
    Exchange,
    Failure,
    Limits,
    Stopped,
    gate,
    kept_headers,
    lines,
    read_failure,
    recorded,
    redirect_target,
    rpc_body,
    skipped,
)

STREAM = "GET (event stream)"


class SseStream:
    """One open HTTP+SSE connection: the GET's evidence, the endpoint it named, and the answers it carried."""

    def __init__(self, client: httpx.AsyncClient, url: str, limits: Limits) -> None:
        self.client, self.url, self.limits = client, url, limits
        self.get = Exchange(method=STREAM, url=url)
        self.endpoint: str | None = None
        self.replies: dict[int, dict[str, Any]] = {}
        self.waiters: dict[int, anyio.Event] = {}
        self.ready = anyio.Event()  # the endpoint is known, or the stream has failed
        self.ended = False

    async def send(self, method: str, params: dict[str, Any] | None = None, *, request_id: int | None = 1,
                   headers: dict[str, str] | None = None) -> Exchange:
        """POST one message to the endpoint and wait on the stream for its answer (eras.Send)."""
        found = Exchange(method=method, url=self.endpoint or self.url)
        if skipped(found, self.limits):
            return found
        if self.endpoint is None or self.ended:
            # Nothing could come back: no endpoint was named, or the stream that carries answers is gone.
            why = "no endpoint to post to" if self.endpoint is None else "the event stream had ended"
            found.failure, found.detail = self.get.failure or Failure.no_response, f"{why}: {self.get.detail or 'none named'}"
            return found
        if request_id is not None:
            self.waiters[request_id] = anyio.Event()
        sent = {"User-Agent": self.limits.user_agent, "Content-Type": "application/json", **(headers or {})}
        wait = self.limits.wait()
        try:
            with recorded(found, f"no answer on the event stream within {wait:.3g} s"), anyio.fail_after(wait):
                async with self.client.stream("POST", self.endpoint, content=rpc_body(method, params, request_id), headers=sent) as response:
                    found.status = response.status_code
                    found.headers = kept_headers(response)
                    gate(response)
                    if response.status_code >= 300:
                        raise Stopped(Failure.http_error, f"HTTP {response.status_code} to a message POST")
                if request_id is not None:
                    await self.waiters[request_id].wait()
                    found.response = self.replies.pop(request_id, None)
                    if found.response is None:
                        raise Stopped(self.get.failure or Failure.no_response, f"the event stream ended before the answer: {self.get.detail}")
        finally:
            if request_id is not None:
                self.waiters.pop(request_id, None)
        self.limits.heed(found)
        return found

    async def _read(self) -> None:
        """Open the stream and read it for as long as the connection is open, within every bound."""
        started = time.perf_counter()
        try:
            target = self.url
            for _ in range(self.limits.max_redirects + 1):
                # No read timeout: the stream may rightly sit idle between answers; each POST's wait has its own deadline.
                async with self.client.stream("GET", target, headers={"User-Agent": self.limits.user_agent, "Accept": "text/event-stream"},
                                              timeout=httpx.Timeout(self.limits.timeout, read=None, connect=self.limits.connect)) as response:
                    self.get.status = response.status_code
                    self.get.headers = kept_headers(response)
                    if response.is_redirect and "location" in response.headers:
                        target = redirect_target(target, response.headers["location"])
                        self.get.redirects.append(target[:300])
                        continue
                    gate(response)
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if response.status_code >= 400:
                        raise Stopped(Failure.http_error, f"HTTP {response.status_code} to the event-stream GET")
                    if kind != "text/event-stream":
                        raise Stopped(Failure.wrong_content_type,
                                      f"HTTP {response.status_code} with Content-Type {kind or 'none'!r}, not an event stream")
                    await self._events(response, target, started)
                    raise Stopped(Failure.no_response if self.endpoint is None else Failure.dropped, "the event stream ended")
            raise Stopped(Failure.redirect_loop, f"more than {self.limits.max_redirects} redirects: {' -> '.join(self.get.redirects[:5])}")
        except Stopped as stop:
            self.get.failure, self.get.detail = stop.failure, stop.detail
            self.limits.heed(self.get)
        except AddressRefused as refused:
            self.get.failure, self.get.detail = Failure.refused_private, str(refused)
        except TRANSPORT_ERRORS as exc:
            self.get.failure, self.get.detail = read_failure(exc, self.get.status)
        except Exception as exc:  # noqa: BLE001 - whatever else a hostile stream provokes ends the stream, classified
            self.get.failure, self.get.detail = Failure.invalid_json, f"{type(exc).__name__}: {exc}"[:500]
        finally:
            if self.endpoint is None:
                self.get.ms = (time.perf_counter() - started) * 1000
            self.ended = True
            self.ready.set()
            for waiter in self.waiters.values():
                waiter.set()

    async def _events(self, response: httpx.Response, target: str, started: float) -> None:
        name, data = "message", []
        async for line in lines(response, self.get, self.limits):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line == "":
                payload, event, name, data = "\n".join(data), name, "message", []
                if not payload:
                    continue
                self.get.events += 1
                if self.get.events > self.limits.max_events:
                    raise Stopped(Failure.notification_flood, f"{self.limits.max_events:,} events on the stream")
                if event == "endpoint" and self.endpoint is None:
                    await self._endpoint(payload, target)
                    self.get.ms = (time.perf_counter() - started) * 1000
                    self.ready.set()
                elif event == "message":
                    self._message(payload)

    async def _endpoint(self, payload: str, target: str) -> None:
        try:
            endpoint = urljoin(target, payload.strip())
            mine, theirs = urlsplit(target), urlsplit(endpoint)
        except ValueError as exc:
            raise Stopped(Failure.http_error, f"the endpoint event is not a usable URL: {payload[:120]!r} ({exc})") from exc
        if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
            raise Stopped(Failure.http_error, f"the endpoint event names another origin: {endpoint[:200]!r}")
        self.endpoint = endpoint

    def _message(self, payload: str) -> None:
        try:
            message = json.loads(payload)
        except (json.JSONDecodeError, RecursionError) as exc:  # nesting deeper than the parser goes is not JSON we take
            raise Stopped(Failure.invalid_json, f"event {self.get.events} is not JSON: {payload[:80]!r}") from exc
        rid = message.get("id") if isinstance(message, dict) else None
        if type(rid) is int and rid in self.waiters and ("result" in message or "error" in message):  # not a bool (True == 1)
            self.replies[rid] = message
            self.waiters[rid].set()
        else:
            self.get.notifications += 1


@asynccontextmanager
async def open_stream(client: httpx.AsyncClient, url: str, limits: Limits) -> AsyncIterator[SseStream]:
    """An open event stream, once its endpoint is known (or the stream failed, or the deadline passed); closed on exit.
    A stream that never names its endpoint is a server that does not answer: the probe asks it nothing more."""
    stream = SseStream(client, url, limits)
    if skipped(stream.get, limits):
        yield stream
        return
    async with anyio.create_task_group() as group:
        group.start_soon(stream._read)
        wait = limits.wait()
        with anyio.move_on_after(wait):
            await stream.ready.wait()
        if not stream.ready.is_set():
            stream.get.failure, stream.get.detail = Failure.timeout, f"no endpoint event within {wait:.3g} s"
            stream.get.ms = wait * 1000
            if limits.budget is not None:
                limits.budget.halt(f"the server did not answer ({stream.get.detail})")
        try:
            yield stream
        finally:
            group.cancel_scope.cancel()


async def negotiate_sse(client: httpx.AsyncClient, url: str, limits: Limits) -> Negotiation:
    """Both eras over legacy HTTP+SSE, each on a stream of its own: a server settles the era of a connection at its
    first request, so `initialize` after `server/discover` on one stream would find it modern already. `client` must
    allow three connections: two streams and one POST at a time."""
    found = Negotiation(transport="sse")

    @asynccontextmanager
    async def fresh_stream() -> AsyncIterator[Send | None]:
        async with open_stream(client, url, limits) as legacy:
            if legacy.get.failure is not Failure.skipped:
                found.exchanges.append(legacy.get)
            yield legacy.send if legacy.endpoint is not None else None

    async with open_stream(client, url, limits) as stream:
        found.exchanges.append(stream.get)
        if stream.endpoint is None:
            if stream.get.failure in UNANSWERED:
                found.unasked = stream.get.detail
            return found
        await negotiate_over(stream.send, found, budget=limits.budget, legacy_channel=fresh_stream)
    return found
