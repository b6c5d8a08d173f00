"""The SDK session's transports, bounded in bytes as well as time.

After the raw handshake, lists and tool calls go through the official SDK; its own transports read a
response (a JSON body, one stdout line) whole, however large. These keep its protocol handling but cap
what one message may weigh: over HTTP, each response body, or each SSE event on a stream; over stdio,
each line. A message past the cap ends that exchange (Streamable HTTP) or the session (stdio, where the
line cannot be skipped; legacy SSE, whose one stream carries every answer). Over stdio a run of
messages that are not answers (notifications, requests to us) is capped as well, and so, apart, is a
run of lines that are not JSON-RPC. `MessageCap.exceeded` says which bound was passed, so the probe
records "too large", "notification flood" or "unparseable output" rather than a vague failure; and a
stdio server that exits by itself leaves its exit status (`ServerExit`). Over HTTP the session dials
only pinned, allowed addresses and reads bodies decompressed in bounded steps (pipeline.net), so the
cap counts decompressed bytes; `MessageCap.refused` says when an address was refused. Before the SDK
parses a message (a stdio line, a JSON body, an SSE data line), JSON escapes of lone surrogates, which its
strict parser refuses, become U+FFFD's (pipeline.clean). A 429 to any request of the session is recorded
(`MessageCap.retry_after`), ends the session (`MessageCap.stop`), and every later request, the SDK's closing
DELETE included, is answered here without reaching the server.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator

import anyio
import httpx2
import mcp_types
from anyio.abc import Process
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from pipeline.clean import json_without_lone_surrogates
from pipeline.lifetime import end, guarded
from pipeline.net import AddressRefused, PinnedAsyncTransport, Reach
from pipeline.probe.raw import USER_AGENT
from pipeline.probe.sandbox import Running

EXIT_GRACE = 1.0  # seconds a stdio server gets to exit once its stdin closes, then again after SIGTERM and SIGKILL


@dataclass
class MessageCap:
    """The most one message may weigh and how many messages, or lines that are not JSON-RPC, may come in a row without
    an answer; which bound was passed first (`kind`: "too_large", "notification_flood" or "unparseable_output") and how
    (None while none has)."""

    limit: int = 5_000_000
    max_unanswered: int = 1_000
    max_unparseable: int = 10_000  # lines that are not JSON-RPC: a verbose banner is measured, endless babble is not
    exceeded: str | None = None
    kind: str | None = None
    refused: str | None = None  # an address the session was not allowed to dial
    retry_after: str | None = None  # set by a 429 to a request of the session: its Retry-After ("" when it gave none)
    limited: str | None = None  # the request the 429 answered
    stop: anyio.CancelScope | None = None  # the session (handshake and body), which a 429 ends: nothing more is asked

    def rate_limited(self, request: str, retry_after: str | None) -> None:
        """After a 429 nothing more goes to the server in this session (the first 429 is the one kept)."""
        if self.retry_after is None:
            self.retry_after, self.limited = retry_after or "", request
            if self.stop is not None:
                self.stop.cancel()

    def over(self, what: str) -> str:
        if self.exceeded is None:
            self.exceeded, self.kind = f"{what} passed {self.limit:,} bytes", "too_large"
        return self.exceeded

    def flooded(self) -> None:
        if self.exceeded is None:
            self.exceeded, self.kind = f"{self.max_unanswered:,} messages came in a row without an answer", "notification_flood"

    def babbled(self) -> None:
        if self.exceeded is None:
            self.exceeded, self.kind = f"{self.max_unparseable:,} lines that are not JSON-RPC came in a row without an answer", "unparseable_output"


@dataclass
class ServerExit:
    """How a stdio server ended when it ended by itself, before the prober stopped it: its exit status (negative: the
    signal that killed it), or None when it did not."""

    code: int | None = None

    def describe(self) -> str | None:
        if self.code is None:
            return None
        return f"the server was killed by signal {-self.code}" if self.code < 0 else f"the server exited with code {self.code}"


class ResponseTooLarge(httpx2.StreamError):
    """Raised into the SDK's read of a response past the cap; it fails that request, not the run."""


class ConnectionDropped(httpx2.StreamError):
    """Raised into the SDK's read of a response whose connection dropped; like ResponseTooLarge, it fails that request
    (the SDK's "Failed to parse JSON response: ...", which the prober counts as a crash), not the whole session."""


_DROPS = (httpx2.NetworkError, httpx2.RemoteProtocolError)
DROPPED = "the connection dropped"  # how ConnectionDropped begins, in the SDK's error for that request


class _Dropped(httpx2.AsyncByteStream):
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise ConnectionDropped(f"{DROPPED} ({type(self.exc).__name__}: {self.exc})")
        yield b""  # an async generator that raises on its first step


class _CappedStream(httpx2.AsyncByteStream):
    """A response body capped (`MessageCap`), with JSON's lone surrogate escapes rewritten (pipeline.clean) for the SDK's
    strict parser: a JSON body (`json_body`) is held to its end, an event stream (`events`) to the end of each line."""

    def __init__(self, inner: Any, cap: MessageCap, events: bool, json_body: bool = False) -> None:
        self.inner, self.cap, self.events, self.json_body = inner, cap, events, json_body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._readable():
                yield chunk
        except _DROPS as exc:
            raise ConnectionDropped(f"{DROPPED} mid-response ({type(exc).__name__}: {exc})") from exc

    async def _readable(self) -> AsyncIterator[bytes]:
        if not (self.events or self.json_body):
            async for chunk in self._capped():
                yield chunk
            return
        held = bytearray()
        async for chunk in self._capped():
            held += chunk
            if self.events and (end := max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1):
                end += len(held) - len(chunk)
                yield _events_without_lone_surrogates(bytes(held[:end]))
                del held[:end]
        if held:
            yield _events_without_lone_surrogates(bytes(held)) if self.events else json_without_lone_surrogates(bytes(held))

    async def _capped(self) -> AsyncIterator[bytes]:
        size, last = 0, b""
        async for chunk in self.inner:
            if self.events:
                # An event stream is long-lived: the cap applies to each event (bytes since the last blank line).
                joined = last[-3:] + chunk
                end = max(joined.rfind(b"\n\n"), joined.rfind(b"\r\n\r\n"))
                size = len(joined) - end - 2 if end >= 0 else size + len(chunk)
                last = chunk
            else:
                size += len(chunk)
            if size > self.cap.limit:
                raise ResponseTooLarge(self.cap.over("an SSE event" if self.events else "a response body"))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _events_without_lone_surrogates(lines: bytes) -> bytes:
    """Whole lines of an event stream with each `data:` line's JSON freed of lone surrogate escapes; the rest as sent."""
    if b"\\u" not in lines:
        return lines
    return b"".join(json_without_lone_surrogates(line) if line.startswith(b"data:") else line for line in lines.splitlines(keepends=True))


class _CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, cap: MessageCap, reach: Reach) -> None:
        # The prober sends one request at a time, but the protocol keeps an event stream open beside it, and over the
        # legacy era the SDK leaves a request that timed out waiting on its connection (and then posts its
        # cancellation). The session stops asking after two timeouts (suite._busy): the stream, two stuck
        # requests, their cancellations and one live request fit in six connections, with room to spare in eight.
        self.inner = PinnedAsyncTransport(
            httpx2, lambda: httpx2.AsyncHTTPTransport(trust_env=False, limits=httpx2.Limits(max_connections=8, max_keepalive_connections=2)), reach)
        self.cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.cap.retry_after is not None:
            # The server asked us to wait: this request (a later list, a tool call, the SDK's closing DELETE, a stream's
            # reconnection) is answered here, never sent. A 429 is what every SDK path handles without a fuss.
            return httpx2.Response(429, headers={"content-type": "text/plain"}, content=b"not sent: the server answered HTTP 429 earlier",
                                   request=request)
        try:
            response = await self.inner.handle_async_request(request)
        except AddressRefused as refused:
            self.cap.refused = self.cap.refused or str(refused)
            raise httpx2.ConnectError(str(refused), request=request) from refused
        except _DROPS as exc:
            # The SDK would let this end its whole transport (the session, every check done): one request failed.
            return httpx2.Response(200, headers={"content-type": "application/json"}, stream=_Dropped(exc), request=request)
        if response.status_code == 429:
            self.cap.rate_limited(_named(request), response.headers.get("retry-after"))
        kind = response.headers.get("content-type", "").lower()
        stream = _CappedStream(response.stream, self.cap, events=kind.startswith("text/event-stream"), json_body=kind.startswith("application/json"))
        return httpx2.Response(response.status_code, headers=response.headers, stream=stream,
                               extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _named(request: httpx2.Request) -> str:
    """A request as the evidence names it: its JSON-RPC method when it has one (a POST), else its HTTP method."""
    try:
        method = json.loads(request.content).get("method") if request.method == "POST" else None
    except (ValueError, AttributeError, httpx2.RequestNotRead):
        method = None
    return method if isinstance(method, str) else request.method


def capped_http_client(cap: MessageCap, call_timeout: float, stream_timeout: float, user_agent: str = USER_AGENT, reach: Reach = Reach(),
                       connect_timeout: float | None = None):
    """A factory of SDK HTTP clients (the signature `sse_client` wants) bounded by `cap`, dialling what `reach` allows,
    naming the scoreboard."""

    def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=_CappedTransport(cap, reach), headers={**(headers or {}), "User-Agent": user_agent}, auth=auth,
                                  timeout=httpx2.Timeout(call_timeout, read=stream_timeout, connect=connect_timeout or call_timeout),
                                  trust_env=False)

    return factory


@asynccontextmanager
async def bounded_stdio(running: Running, cap: MessageCap, exited: ServerExit | None = None):
    """The SDK's stdio transport, rebuilt with a cap on each line, lines that are not JSON-RPC surfaced as bad messages
    rather than a dead reader (and bounded apart from notifications: a banner is not a flood), the server's exit status
    kept in `exited` when it ended by itself, and the server run under a guardian that stops all it started afterwards
    (npx and friends start children), or when the pipeline dies."""
    process = await anyio.open_process(guarded([running.command or "", *running.args], running.max_file_bytes), env=running.env,
                                       cwd=running.cwd, stderr=running.errlog if running.errlog else subprocess.DEVNULL, start_new_session=True)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    server_ended = False  # the server closed its stdout or stopped reading: it may have exited by itself

    async def read() -> None:
        nonlocal server_ended
        assert process.stdout is not None
        pending = bytearray()
        unanswered = unparseable = 0
        async with read_writer:  # closing it tells the session the connection is gone
            try:
                async for chunk in process.stdout:
                    pending += chunk
                    while (end := pending.find(b"\n")) >= 0:
                        line = bytes(pending[:end])
                        del pending[: end + 1]
                        if len(line) > cap.limit:
                            cap.over("a message")
                            return
                        if not line.strip():
                            continue
                        message = _parse(line)
                        answer = isinstance(message, SessionMessage) and isinstance(message.message,
                                                                                    (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError))
                        # Lines that are not JSON-RPC (a banner, log lines) are unparseable output, bounded on their own;
                        # messages that are not answers (notifications, requests to us) are a flood past their bound.
                        unparseable = 0 if answer else unparseable + isinstance(message, Exception)
                        unanswered = 0 if answer else unanswered + isinstance(message, SessionMessage)
                        if unparseable > cap.max_unparseable:
                            cap.babbled()
                            return
                        if unanswered > cap.max_unanswered:
                            cap.flooded()
                            return
                        await read_writer.send(message)
                    if len(pending) > cap.limit:
                        cap.over("a message")
                        return
                server_ended = True
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                return

    async def write() -> None:
        nonlocal server_ended
        assert process.stdin is not None
        async with write_reader:
            try:
                async for message in write_reader:
                    await process.stdin.send((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                server_ended = True
                await read_writer.aclose()  # the server stopped reading: pending requests must not wait for ever

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    if server_ended:  # its exit status is the server's own only if it exits before we stop it
                        with anyio.move_on_after(EXIT_GRACE):
                            await process.wait()
                        if exited is not None:
                            exited.code = process.returncode
                    await _stop(process)
                group.cancel_scope.cancel()
    finally:
        for stream in (read_stream, write_stream, read_writer, write_reader):
            stream.close()


# An answer's id, where it stands before anything nested (as every JSON-RPC library writes it).
_ANSWER_ID = re.compile(rb'^\s*\{[^{}\[\]]{0,200}?"id"\s*:\s*(-?\d{1,18})\s*,[^{}\[\]]{0,200}?"(?:result|error)"')


def _parse(line: bytes) -> SessionMessage | Exception:
    """The line as a JSON-RPC message; else the reason, as a bad message. An answer that cannot be parsed (nested deeper
    than the parser goes, say) but whose id can be read fails that request at once, named, rather than leave it waiting
    for its timeout."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(json_without_lone_surrogates(line), by_name=False))
    except (ValidationError, ValueError, RecursionError) as exc:
        if found := _ANSWER_ID.match(line[:1000]):
            reason = f"the prober could not parse the server's answer: {str(exc).splitlines()[-1][:200]}"
            return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=int(found.group(1)),
                                                         error=mcp_types.ErrorData(code=mcp_types.PARSE_ERROR, message=reason)))
        return exc


async def _stop(process: Process) -> None:
    """Close stdin (the polite way to end a stdio server), then SIGTERM its process group, then have its guardian
    (pipeline.lifetime) kill the server and all it started, then SIGKILL the group."""
    if process.stdin is not None:
        try:
            await process.stdin.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
    group = functools.partial(os.killpg, process.pid)
    for stop in (None, functools.partial(group, signal.SIGTERM), functools.partial(end, process.pid), functools.partial(group, signal.SIGKILL)):
        if stop is not None:
            try:
                stop()
            except (ProcessLookupError, PermissionError):
                pass
        with anyio.move_on_after(EXIT_GRACE):
            await process.wait()
            break
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what is left of the group, should the guardian itself have been stopped
    except (ProcessLookupError, PermissionError):
        pass
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with anyio.CancelScope(shield=True):
                await pipe.aclose()
    if process.returncode is not None:
        await process.aclose()  # reaps it; a process SIGKILL could not end (stuck in the kernel) is not waited for
