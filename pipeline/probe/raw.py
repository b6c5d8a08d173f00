"""Raw MCP over HTTP: one JSON-RPC exchange at a time, with the HTTP facts the SDK hides.

The SDK's client is right for the happy path, but a score needs what it does not say: the status
code, the headers (session id, protocol version, WWW-Authenticate, Retry-After, HSTS), the content
type, how many bytes and events came back, and exactly how a broken server broke. Every exchange
here is bounded in time (one deadline over connect, headers and the whole body or stream), in
bytes, in SSE events and in redirects; whatever the server does, the caller gets an `Exchange`
with a classified `failure`, never an exception and never a hang.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Iterator
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from pipeline import ENGINE_VERSION
from pipeline.models import ProbeOutcome
from pipeline.net import LOOPBACK, PRIVATE, AddressRefused, PinnedAsyncTransport, Reach, Resolver, system_resolver
from pipeline.probe.budget import Budget

USER_AGENT = f"mcp-scoreboard-probe/{ENGINE_VERSION}"
MODERN_VERSION = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"
KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
KEPT_HEADERS = ("content-type", "mcp-session-id", "mcp-protocol-version", "www-authenticate", "retry-after", "location",
                "strict-transport-security", "cache-control")
CLIENT_INFO = {"name": "mcp-scoreboard", "version": ENGINE_VERSION}


@dataclass(frozen=True)
class Limits:
    timeout: float = 10.0  # one exchange: connect, headers and the whole body or stream
    connect_timeout: float = 4.0  # opening one connection (within `timeout`): a host that never answers a SYN costs this
    max_bytes: int = 5_000_000
    max_events: int = 1_000  # SSE events before the response (notifications, keep-alives)
    max_redirects: int = 3
    allow_private: bool = False  # loopback and private addresses, whoever names them (tests allow them)
    user_agent: str = USER_AGENT  # the scoreboard's name, and (from the run's settings) where to read about its probes
    allowed: frozenset[str] = frozenset()  # non-public kinds this probe may dial: the named target's own (net.target_kinds)
    origins: frozenset[tuple[str, int]] = frozenset()  # if set, the only non-public (address, port) pairs it may dial
    resolver: Resolver = system_resolver
    budget: Budget | None = field(default=None, compare=False)  # the whole probe's time, shared by its steps

    @property
    def reach(self) -> Reach:
        """Where this probe's clients may connect (never link-local or metadata addresses, whatever is allowed)."""
        return Reach(self.allowed | (frozenset({LOOPBACK, PRIVATE}) if self.allow_private else frozenset()), self.resolver, self.origins)

    @property
    def connect(self) -> float:
        return min(self.connect_timeout, self.timeout)

    def within(self, budget: Budget) -> "Limits":
        return replace(self, budget=budget)

    def wait(self) -> float:
        """How long the next exchange may take: its own timeout, or what is left of the probe's budget if less."""
        return self.timeout if self.budget is None else min(self.timeout, self.budget.left())

    def stopped(self) -> str | None:
        """Why nothing more is to be sent to this server in this probe (None: go on)."""
        return self.budget.stopped() if self.budget is not None else None

    def heed(self, found: "Exchange") -> None:
        """After a 429 nothing more goes to the server in this probe."""
        if found.failure is Failure.rate_limited and self.budget is not None:
            self.budget.rate_limited(found.headers.get("retry-after"))


class Failure(str, Enum):
    """Exactly how one exchange failed."""

    refused_private = "refused_private"  # policy: the address is loopback, private, link-local or a metadata service
    unreachable = "unreachable"  # no connection (DNS, refused, reset before any reply)
    timeout = "timeout"  # the deadline passed: no answer, or a stream that never delivered one
    rate_limited = "rate_limited"  # 429: not measured this time, never "down"
    auth_required = "auth_required"  # 401/403: gated, never "down"
    http_error = "http_error"  # another 4xx/5xx
    redirect_loop = "redirect_loop"  # more redirects than allowed
    too_large = "too_large"  # the body or stream passed the byte cap
    wrong_content_type = "wrong_content_type"  # neither application/json nor text/event-stream
    invalid_json = "invalid_json"  # a body or event that is not JSON, or not a JSON-RPC message
    notification_flood = "notification_flood"  # more SSE events than allowed before the response
    no_response = "no_response"  # the stream ended without the response to our request
    dropped = "dropped"  # the connection broke in the middle of a response
    bad_encoding = "bad_encoding"  # a Content-Encoding we did not ask for, or a body that does not decompress
    skipped = "skipped"  # not sent: the server had stopped answering or asked us to wait, or the probe's budget was spent


OUTCOMES = {
    Failure.refused_private: ProbeOutcome.refused, Failure.unreachable: ProbeOutcome.unreachable, Failure.timeout: ProbeOutcome.timeout,
    Failure.rate_limited: ProbeOutcome.rate_limited, Failure.auth_required: ProbeOutcome.auth_required, Failure.http_error: ProbeOutcome.http_error,
    Failure.redirect_loop: ProbeOutcome.http_error, Failure.too_large: ProbeOutcome.protocol_error,
    Failure.wrong_content_type: ProbeOutcome.protocol_error, Failure.invalid_json: ProbeOutcome.protocol_error,
    Failure.notification_flood: ProbeOutcome.protocol_error, Failure.no_response: ProbeOutcome.protocol_error, Failure.dropped: ProbeOutcome.crashed,
    Failure.bad_encoding: ProbeOutcome.protocol_error,
    Failure.skipped: ProbeOutcome.timeout,
}


@dataclass
class Exchange:
    """One request and what came back, as evidence."""

    method: str
    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    response: dict[str, Any] | None = None  # the JSON-RPC response to our request
    notifications: int = 0  # messages without our id that came first (SSE)
    events: int = 0
    bytes: int = 0
    redirects: list[str] = field(default_factory=list)
    ms: float = 0.0
    failure: Failure | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and self.response is not None and "result" in self.response

    @property
    def error(self) -> dict[str, Any] | None:
        return self.response.get("error") if self.response and isinstance(self.response.get("error"), dict) else None

    @property
    def outcome(self) -> ProbeOutcome:
        if self.failure is not None:
            return OUTCOMES[self.failure]
        return ProbeOutcome.ok if self.ok else ProbeOutcome.protocol_error

    def evidence(self) -> dict[str, Any]:
        return {
            "method": self.method, "status": self.status, "headers": self.headers, "ms": round(self.ms, 1), "bytes": self.bytes,
            "events": self.events, "notifications": self.notifications, "redirects": self.redirects,
            "failure": self.failure.value if self.failure else None, "detail": self.detail,
            "error": self.error,
        }


# Outcomes that are states with names, not "down": a gate, a rate limit, a policy refusal.
NAMED_STATES = (ProbeOutcome.auth_required, ProbeOutcome.rate_limited, ProbeOutcome.refused)


def telling_failure(exchanges: list[Exchange]) -> Exchange | None:
    """The exchange that best says why a server could not be met: a named state first, then the latest
    transport failure, then the latest JSON-RPC refusal (an expected one, like a legacy server's answer to
    `server/discover`, comes earlier and gives way). A request never sent says less than any that was."""
    sent = [e for e in exchanges if e.failure is not Failure.skipped] or exchanges
    return (next((e for e in sent if e.outcome in NAMED_STATES), None)
            or next((e for e in reversed(sent) if e.failure is not None), None)
            or next((e for e in reversed(sent) if not e.ok), None))


class Stopped(Exception):
    """An exchange ends here, classified (raised inside this module and by the layers built on it)."""

    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(detail)
        self.failure, self.detail = failure, detail


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: building one loads the CA bundle (tens of milliseconds of CPU),
    which across a fleet of servers would cost more than probing them."""
    return ssl.create_default_context()


def probe_client(limits: Limits = Limits(), connections: int = 1) -> httpx.AsyncClient:
    """An HTTP client for one server: each host resolved once and dialled at that address if `limits.reach` allows it
    (pipeline.net), bodies decompressed in bounded steps, one connection at a time per host (two for legacy HTTP+SSE,
    whose event stream stays open while a message is posted), redirects followed by hand (to count them), no proxies
    or credentials from the environment."""

    def transport() -> httpx.AsyncHTTPTransport:
        return httpx.AsyncHTTPTransport(verify=_tls_context(), trust_env=False,
                                        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))

    return httpx.AsyncClient(transport=PinnedAsyncTransport(httpx, transport, limits.reach), follow_redirects=False,  # type: ignore[arg-type]
                             timeout=httpx.Timeout(limits.timeout, connect=limits.connect), trust_env=False)


def modern_meta() -> dict[str, Any]:
    """The per-request envelope of the 2026-07-28 era."""
    return {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO}


async def exchange(
    client: httpx.AsyncClient,
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: int | None = 1,
    headers: dict[str, str] | None = None,
    limits: Limits = Limits(),
) -> Exchange:
    """POST one JSON-RPC message and read until its response (or, for a notification, the status)."""
    found = Exchange(method=method, url=url)
    if skipped(found, limits):
        return found
    sent = {"User-Agent": limits.user_agent, "Accept": "application/json, text/event-stream", "Content-Type": "application/json", **(headers or {})}
    wait = limits.wait()
    with recorded(found, f"no complete answer within {wait:.3g} s"):
        with anyio.fail_after(wait):
            await _post(client, url, rpc_body(method, params, request_id), sent, request_id, found, limits)
    limits.heed(found)
    return found


def skipped(found: Exchange, limits: Limits) -> bool:
    """Mark `found` as not sent when the probe has stopped asking this server; whether it has."""
    why = limits.stopped()
    if why is not None:
        found.failure, found.detail = Failure.skipped, f"skipped: {why}"
    return why is not None


def rpc_body(method: str, params: dict[str, Any] | None, request_id: int | None) -> bytes:
    """One JSON-RPC message: a request with `request_id`, else a notification; no params key when there are none."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message).encode()


def kept_headers(response: httpx.Response) -> dict[str, str]:
    return {k: response.headers[k][:500] for k in KEPT_HEADERS if k in response.headers}


@contextmanager
def recorded(found: Exchange, on_timeout: str) -> Iterator[None]:
    """Time the exchange into `found` and turn whatever ended it early into its classified failure."""
    started = time.perf_counter()
    try:
        yield
    except Stopped as stop:
        found.failure, found.detail = stop.failure, stop.detail
    except AddressRefused as refused:
        found.failure, found.detail = Failure.refused_private, str(refused)
    except TimeoutError:
        found.failure, found.detail = Failure.timeout, on_timeout
    except TRANSPORT_ERRORS as exc:
        found.failure, found.detail = read_failure(exc, found.status)
    finally:
        found.ms = (time.perf_counter() - started) * 1000


# What a request can raise besides our own Stopped: transport errors, and URLs a server handed us (a Location, an
# SSE endpoint) that cannot be used.
TRANSPORT_ERRORS = (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError)


def read_failure(exc: Exception, status: int | None) -> tuple[Failure, str]:
    """How a transport error ended an exchange (`status`: the reply's, if one had begun)."""
    detail = f"{type(exc).__name__}: {exc}"[:500]
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return Failure.http_error, f"an unusable URL: {detail}"
    if isinstance(exc, httpx.DecodingError):
        return Failure.bad_encoding, detail
    if isinstance(exc, ValueError):  # a URL that cannot be joined, a header value that cannot be sent back, ...
        return Failure.http_error, f"the request could not be made: {detail}"
    if isinstance(exc, httpx.TimeoutException):
        return Failure.timeout, detail
    if isinstance(exc, (httpx.ConnectError, OSError)):
        return Failure.unreachable, detail
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return (Failure.dropped if status is not None else Failure.unreachable), detail
    return Failure.dropped, detail


def gate(response: httpx.Response) -> None:
    """A 429 or a 401/403 is a state with a name, whatever the body says."""
    if response.status_code == 429:
        raise Stopped(Failure.rate_limited, f"HTTP 429; Retry-After: {response.headers.get('retry-after', 'not given')}")
    if response.status_code in (401, 403):
        raise Stopped(Failure.auth_required,
                      f"HTTP {response.status_code}; WWW-Authenticate: {response.headers.get('www-authenticate', 'not given')[:300]}")


def redirect_target(base: str, location: str) -> str:
    """Where a redirect leads; one that leaves HTTP (file:, gopher:, data: …) is not followed but named."""
    target = urljoin(base, location)
    if urlsplit(target).scheme not in ("http", "https"):
        raise Stopped(Failure.http_error, f"a redirect to a URL that is not HTTP: {target[:200]!r}")
    return target


async def _post(client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str], request_id: int | None, found: Exchange,
                limits: Limits) -> None:
    target = url
    for _ in range(limits.max_redirects + 1):
        async with client.stream("POST", target, content=body, headers=headers) as response:
            found.status = response.status_code
            found.headers = kept_headers(response)
            if response.is_redirect and "location" in response.headers:
                target = redirect_target(target, response.headers["location"])
                found.redirects.append(target[:300])
                continue
            await _read(response, request_id, found, limits)
            return
    raise Stopped(Failure.redirect_loop, f"more than {limits.max_redirects} redirects: {' -> '.join(found.redirects[:5])}")


async def _read(response: httpx.Response, request_id: int | None, found: Exchange, limits: Limits) -> None:
    status = response.status_code
    gate(response)
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if request_id is None and status in (200, 202, 204):
        return  # a notification: the status is the answer
    if kind == "text/event-stream" and status < 400:
        await _read_stream(response, request_id, found, limits)
        return
    text = (await _bounded(response, found, limits)).decode("utf-8", errors="replace")
    if status >= 400 and kind != "application/json":
        raise Stopped(Failure.http_error, f"HTTP {status}: {text[:200]!r}")
    if kind != "application/json":
        raise Stopped(Failure.wrong_content_type, f"HTTP {status} with Content-Type {response.headers.get('content-type', 'none')!r}: {text[:120]!r}")
    found.response = _message(text, request_id)
    if status >= 400 and found.error is None:
        raise Stopped(Failure.http_error, f"HTTP {status}: {text[:200]!r}")


async def _bounded(response: httpx.Response, found: Exchange, limits: Limits) -> bytes:
    chunks: list[bytes] = []
    async for chunk in response.aiter_bytes():
        found.bytes += len(chunk)
        if found.bytes > limits.max_bytes:
            raise Stopped(Failure.too_large, f"body passed {limits.max_bytes:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _message(text: str, request_id: int | None) -> dict[str, Any]:
    try:
        message = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # nesting deeper than the parser goes is not JSON we take
        raise Stopped(Failure.invalid_json, f"not JSON: {exc}; starts {text[:80]!r}") from exc
    if isinstance(message, list):  # a batch: find ours
        message = next((m for m in message if isinstance(m, dict) and m.get("id") == request_id), None)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or ("result" not in message and "error" not in message):
        raise Stopped(Failure.invalid_json, f"not a JSON-RPC response: {text[:120]!r}")
    if message.get("id") != request_id and not (message.get("id") is None and "error" in message):  # null: refused before its id was read
        raise Stopped(Failure.invalid_json, f"the answer is to id {str(message.get('id'))[:40]!r}, not to ours ({request_id})")
    return message


async def _read_stream(response: httpx.Response, request_id: int | None, found: Exchange, limits: Limits) -> None:
    """Read SSE events until the response to `request_id`; everything else before it is counted."""
    data: list[str] = []
    async for line in lines(response, found, limits):
        if line == "":
            payload, data = "\n".join(data), []
            if payload:  # SSE: an event with empty data is not dispatched (servers send one to prime resumption)
                found.events += 1
                if found.events > limits.max_events:
                    raise Stopped(Failure.notification_flood, f"{limits.max_events:,} events without the response")
                try:
                    message = json.loads(payload)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise Stopped(Failure.invalid_json, f"event {found.events} is not JSON: {payload[:80]!r}") from exc
                if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
                    found.response = message
                    return
                found.notifications += 1
            continue
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    raise Stopped(Failure.no_response, f"the stream ended after {found.events} events without the response")


async def lines(response: httpx.Response, found: Exchange, limits: Limits):
    """The lines of an event stream, counted into `found.bytes` against the cap; a blank line ends it."""
    pending = ""
    async for chunk in response.aiter_text():
        found.bytes += len(chunk.encode())
        if found.bytes > limits.max_bytes:
            raise Stopped(Failure.too_large, f"stream passed {limits.max_bytes:,} bytes")
        pending += chunk
        *lines, pending = pending.replace("\r\n", "\n").split("\n")
        for line in lines:
            yield line
    if pending:
        yield pending
    yield ""
