"""Where the prober and the discovery fetchers may connect, and how a body is read without trusting its encoding.

A name is resolved once per client: the answer is checked (public, or a kind the caller allows) and every later
connection to that host goes to that address, with the real name kept for the Host header and for TLS (SNI and
certificate checks). So a host that answers a public address for the check and a private one for the connection
(DNS rebinding) reaches nothing it should not, and a redirect is checked the same way, since it is another request
through the same transport. Link-local and cloud metadata addresses are never dialled, whatever the caller allows.

Bodies are decompressed here, as a stream, in bounded steps: a reader's byte cap then counts the decompressed
bytes, and a gzip bomb costs one step of memory, not the whole inflated chunk. Only gzip and deflate are asked for
and taken; another Content-Encoding is a decoding error when the body is read.

The transports wrap httpx's (or httpx2's, the SDK's fork: the same design) and are built for either module.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import zlib
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterable, Iterator
from urllib.parse import urlsplit

import anyio

Resolver = Callable[[str, int], list[str]]  # (host, port) -> addresses, in the order to try them

PUBLIC, LOOPBACK, PRIVATE, LINK_LOCAL, METADATA = "public", "loopback", "private", "link-local", "metadata"
NEVER = frozenset({LINK_LOCAL, METADATA})
# Instance metadata services: AWS, GCP, Azure, Oracle (169.254.169.254), ECS and EKS task credentials, Alibaba,
# AWS over IPv6, Oracle's legacy address. The link-local ones are refused as link-local anyway; the others are not.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "fd00:ec2::254", "fd00:ec2::23", "192.0.0.192"))
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal",
                            "metadata.azure.internal", "metadata.tencentyun.com"})
NAT64 = ipaddress.ip_network("64:ff9b::/96")
ACCEPT_ENCODING = "gzip, deflate"
STEP = 64 * 1024  # the most one decompression step may produce
MAX_ENCODINGS = 2  # "gzip, gzip" is legal; a longer stack is a trick


class AddressRefused(Exception):
    """A host resolves to an address this client may not dial."""


class Unresolvable(OSError):
    """A host name that does not resolve."""


def address_kind(text: str) -> str:
    """public, loopback, private, link-local or metadata; an IPv6 address carrying an IPv4 one (mapped, NAT64, 6to4)
    is what it carries."""
    address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(text.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and not (address.is_loopback or address.is_unspecified):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and (address in NAT64 or int(address) >> 32 == 0):  # NAT64, or the old IPv4-compatible form
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        address = embedded or address
    if address in METADATA_ADDRESSES:
        return METADATA
    if address.is_link_local:
        return LINK_LOCAL
    if address.is_loopback or address.is_unspecified:  # 0.0.0.0 reaches this machine
        return LOOPBACK
    return PUBLIC if address.is_global else PRIVATE


def system_resolver(host: str, port: int) -> list[str]:
    """Addresses of `host` from the system resolver, of the families this machine can use, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolves_public(host: str) -> bool:
    """The host resolves, and to at least one public address (an endpoint named in a README is checked so, when asked)."""
    try:
        return any(address_kind(address) == PUBLIC for address in system_resolver(host, 443))
    except (OSError, ValueError, UnicodeError):
        return False


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


@dataclass(frozen=True)
class Reach:
    """Which addresses a client may dial (public ones always; `kinds` adds loopback or private, never link-local or
    metadata), and how a name becomes addresses (`resolver`, a stub in tests)."""

    kinds: frozenset[str] = frozenset()
    resolver: Resolver = system_resolver
    # When set, the only loopback or private (address, port) pairs that may be dialled: a server we started in the
    # sandbox is reached through its relay's one port, and a redirect to any other port of the host's loopback is not
    # followed (the host's own services are not the stranger's to reach through us).
    origins: frozenset[tuple[str, int]] = frozenset()

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to dial for `host`, all checked; raises AddressRefused or Unresolvable. Blocks (DNS)."""
        name = host.rstrip(".").lower()
        if name in METADATA_HOSTS:
            raise AddressRefused(f"{host} is a cloud metadata service")
        literal = _literal(name)
        try:
            found = [literal] if literal else self.resolver(name, port)
        except (OSError, UnicodeError) as exc:
            raise Unresolvable(f"cannot resolve {host!r}: {exc}") from exc
        if not found:
            raise Unresolvable(f"cannot resolve {host!r}: no address")
        allowed = (self.kinds - NEVER) | {PUBLIC}
        for address in found:
            kind = address_kind(address)
            if kind not in allowed:
                what = "which is not a public address" if kind in (LOOPBACK, PRIVATE) else f"a {kind} address, never dialled"
                raise AddressRefused(f"{host} resolves to {address}, {what}")
            self.check_origin(address, port)
        return found

    def check_origin(self, address: str, port: int) -> None:
        """With `origins`, a loopback or private address is dialled at those ports only (checked on each request: an
        address pinned for one port is not thereby allowed at another)."""
        if self.origins and address_kind(address) in (LOOPBACK, PRIVATE) and (address, port) not in self.origins:
            raise AddressRefused(f"{address}:{port} is not the address of the server we started")


def target_kinds(url: str, resolver: Resolver = system_resolver) -> frozenset[str]:
    """The non-public kinds (loopback, private) of the address a named target resolves to: what a probe of that
    target may dial besides public addresses. Empty for a public target, or one that does not resolve."""
    parts = urlsplit(url)
    try:
        found = Reach(frozenset({LOOPBACK, PRIVATE}), resolver).addresses(parts.hostname or "", parts.port or 443)
    except (AddressRefused, Unresolvable, ValueError):
        return frozenset()
    return frozenset(address_kind(a) for a in found) & {LOOPBACK, PRIVATE}


# -- decompression -------------------------------------------------------------------------------------------------


class _Inflate:
    """One gzip or deflate layer undone STEP bytes at a time (HTTP's deflate is zlib-wrapped, but some servers send it raw)."""

    def __init__(self, gzip: bool) -> None:
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self.may_be_raw = not gzip  # until the first step succeeds

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while not self.inflater.eof:  # what follows the end of the stream is ignored, as browsers do
            try:
                out = self.inflater.decompress(pending, STEP)
            except zlib.error:
                if not self.may_be_raw:
                    raise
                self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                out = self.inflater.decompress(pending, STEP)
            self.may_be_raw = False
            pending = self.inflater.unconsumed_tail
            if out:
                yield out
            if not pending and len(out) < STEP:  # input used up and the output not cut short: nothing more for now
                return


class Decoder:
    """A response body's Content-Encoding undone as a stream; raises ValueError for an encoding it does not take or a
    body that does not decode (on the first byte of body, so a bodiless reply with any header passes)."""

    def __init__(self, content_encoding: str) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip() and n.strip().lower() != "identity"]
        self.problem = None if len(names) <= MAX_ENCODINGS else f"{len(names)} stacked content encodings"
        unknown = [n for n in names if n not in ("gzip", "x-gzip", "deflate")]
        if unknown:
            self.problem = f"Content-Encoding {unknown[0][:40]!r} is not one we asked for ({ACCEPT_ENCODING})"
        # Encodings are listed in the order applied: undo the last first.
        self.layers = [] if self.problem else [_Inflate(n != "deflate") for n in reversed(names)]

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        if self.problem:
            raise ValueError(self.problem)
        pieces: Iterable[bytes] = [data]
        for layer in self.layers:
            pieces = _through(layer, pieces)
        try:
            yield from pieces
        except zlib.error as exc:
            raise ValueError(f"the body does not decode: {exc}") from exc


def _through(layer: _Inflate, pieces: Iterable[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from layer.feed(piece)


@functools.cache
def _decoded_stream_class(http: Any) -> type:
    """A byte stream of `http` (httpx or httpx2) that yields a body decompressed (the module's DecodingError when it
    cannot be): both its sync and async base, so either kind of client takes it."""

    class Decoded(http.SyncByteStream, http.AsyncByteStream):
        def __init__(self, inner: Any, decoder: Decoder) -> None:
            self.inner, self.decoder = inner, decoder

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                yield from self._decode(chunk)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self.inner:
                for piece in self._decode(chunk):
                    yield piece

        def _decode(self, chunk: bytes) -> Iterator[bytes]:
            try:
                yield from self.decoder.feed(chunk)
            except ValueError as exc:
                raise http.DecodingError(str(exc)) from exc

        def close(self) -> None:
            self.inner.close()

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Decoded


# -- transports ----------------------------------------------------------------------------------------------------


class _Pinning:
    """What the sync and async transports share: the pins, one inner transport per host (a connection is never reused
    for another name, whose TLS it was not verified for), the pinned request and the decoded response."""

    def __init__(self, http: Any, make_inner: Callable[[], Any], reach: Reach) -> None:
        self.http, self.make_inner, self.reach = http, make_inner, reach
        self.pins: dict[str, list[str] | Exception] = {}
        self.inners: dict[str, Any] = {}

    def _pinned(self, request: Any, address: str) -> Any:
        host = request.url.host
        extensions = dict(request.extensions)
        if request.url.scheme == "https" and _literal(host) is None:
            extensions["sni_hostname"] = host  # TLS verifies the name, not the address we dial
        headers = self.http.Headers(request.headers)
        headers["Accept-Encoding"] = ACCEPT_ENCODING  # only what Decoder undoes
        return self.http.Request(request.method, request.url.copy_with(host=address), headers=headers, stream=request.stream,
                                 extensions=extensions)

    def _inner(self, host: str) -> Any:
        if host not in self.inners:
            self.inners[host] = self.make_inner()
        return self.inners[host]

    def _settled(self, host: str, request: Any) -> list[str]:
        pinned = self.pins[host]
        if isinstance(pinned, Unresolvable):
            raise self.http.ConnectError(str(pinned), request=request)
        if isinstance(pinned, Exception):
            raise AddressRefused(str(pinned))
        for address in pinned:
            self.reach.check_origin(address, _port(request))
        return pinned

    def _decoded(self, response: Any) -> Any:
        encoding = response.headers.get("content-encoding")
        if not encoding:
            return response
        headers = self.http.Headers(response.headers)
        del headers["content-encoding"]  # decoded here: the client must not decode again
        headers.pop("content-length", None)
        stream = _decoded_stream_class(self.http)(response.stream, Decoder(encoding))
        return self.http.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions)


def _lookup(reach: Reach, host: str, port: int) -> list[str] | Exception:
    try:
        return reach.addresses(host, port)
    except (AddressRefused, Unresolvable) as exc:
        return exc


def _port(request: Any) -> int:
    return request.url.port or (443 if request.url.scheme == "https" else 80)


class PinnedAsyncTransport(_Pinning):
    """An async transport for httpx or httpx2 (`http`) that dials only pinned, allowed addresses; `make_inner` builds
    the module's own transport (one per host)."""

    def __init__(self, http: Any, make_inner: Callable[[], Any], reach: Reach) -> None:
        super().__init__(http, make_inner, reach)
        self.lock = anyio.Lock()

    async def handle_async_request(self, request: Any) -> Any:
        host = request.url.host
        async with self.lock:
            if host not in self.pins and _literal(host):
                self.pins[host] = _lookup(self.reach, host, _port(request))  # an address: nothing to look up
            if host not in self.pins:
                # DNS blocks: off the event loop, and abandoned (not waited out) when the caller's deadline passes.
                self.pins[host] = await anyio.to_thread.run_sync(_lookup, self.reach, host, _port(request), abandon_on_cancel=True)
        addresses = self._settled(host, request)
        for address in addresses[:-1]:
            try:
                return self._decoded(await self._inner(host).handle_async_request(self._pinned(request, address)))
            except self.http.ConnectError:
                continue  # the next pinned address (another family, say); nothing was sent
        return self._decoded(await self._inner(host).handle_async_request(self._pinned(request, addresses[-1])))

    async def aclose(self) -> None:
        for inner in self.inners.values():
            await inner.aclose()

    async def __aenter__(self) -> PinnedAsyncTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class PinnedTransport(_Pinning):
    """The sync twin of PinnedAsyncTransport (discovery's fetchers)."""

    def handle_request(self, request: Any) -> Any:
        host = request.url.host
        if host not in self.pins:
            self.pins[host] = _lookup(self.reach, host, _port(request))
        addresses = self._settled(host, request)
        for address in addresses[:-1]:
            try:
                return self._decoded(self._inner(host).handle_request(self._pinned(request, address)))
            except self.http.ConnectError:
                continue
        return self._decoded(self._inner(host).handle_request(self._pinned(request, addresses[-1])))

    def close(self) -> None:
        for inner in self.inners.values():
            inner.close()

    def __enter__(self) -> PinnedTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
