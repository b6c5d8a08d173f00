"""Pinned addresses (pipeline.net): a name is resolved once per client, checked, and dialled at that address with the
real name for Host and TLS; a resolver that answers differently the second time (DNS rebinding) gets nowhere.

The resolver is a stub wherever the test needs a second answer; the servers are real (raw asyncio HTTP, TLS with a
self-signed certificate, and an SDK server for the deep probe)."""

from __future__ import annotations

import json
import socket
import ssl
from datetime import datetime, timezone

import anyio
import httpx
import pytest

from pipeline.discover.http import SourceError, SourceHTTP, source_client
from pipeline.models import ProbeOutcome
from pipeline.net import LOOPBACK, AddressRefused, PinnedAsyncTransport, Reach, address_kind, target_kinds
from pipeline.probe.deep import deep_probe
from pipeline.probe.endpoint import get_bytes, tls_facts
from pipeline.probe.raw import Failure, Limits, exchange, probe_client
from pipeline.probe.sandbox import Running
from tests.support import python_server, self_signed_tls, threaded_server

PUBLIC_IP = "93.184.215.14"  # a global address; never dialled by these tests


class Flipping:
    """A resolver stub: `first` for the first lookup, `then` for every later one; it records each name asked."""

    def __init__(self, first: str, then: str) -> None:
        self.first, self.then, self.asked = first, then, []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return [self.first if len(self.asked) == 1 else self.then]


class Recording:
    """A test twin of httpx's transport: records every request it is handed and answers 200 (or what `reply` says)."""

    def __init__(self, seen: list[httpx.Request], reply=None) -> None:
        self.seen, self.reply = seen, reply

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if self.reply:
            return self.reply(request)
        return httpx.Response(200, headers={"Content-Type": "application/json"}, content=b'{"jsonrpc":"2.0","id":1,"result":{}}')

    async def aclose(self) -> None:
        pass


def test_address_kinds_see_through_ipv6_wrappings():
    assert address_kind("127.0.0.1") == address_kind("::1") == address_kind("0.0.0.0") == "loopback"
    assert address_kind("10.1.2.3") == address_kind("fd12::1") == address_kind("100.64.0.1") == "private"
    assert address_kind("169.254.1.1") == address_kind("fe80::1%eth0") == "link-local"
    for metadata in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"):
        assert address_kind(metadata) == "metadata", metadata
    assert address_kind("::ffff:127.0.0.1") == "loopback" and address_kind(PUBLIC_IP) == "public"


def test_link_local_and_metadata_are_never_allowed():
    everything = Reach(frozenset({"loopback", "private", "link-local", "metadata"}))
    for host in ("169.254.169.254", "fe80::1", "metadata.google.internal", "METADATA.google.internal."):
        with pytest.raises(AddressRefused):
            everything.addresses(host, 80)
    with pytest.raises(AddressRefused, match="not a public address"):
        Reach().addresses("127.0.0.1", 80)
    assert Reach(frozenset({LOOPBACK})).addresses("127.0.0.1", 80) == ["127.0.0.1"]


def test_a_second_answer_is_never_asked_for_within_a_client():
    """Public first, loopback second: every request of the client goes to the first answer, with the name as Host and SNI."""
    resolver = Flipping(PUBLIC_IP, "127.0.0.1")
    seen: list[httpx.Request] = []

    async def go():
        transport = PinnedAsyncTransport(httpx, lambda: Recording(seen), Reach(resolver=resolver))
        async with httpx.AsyncClient(transport=transport) as client:  # type: ignore[arg-type]
            for _ in range(3):
                await client.post("https://mcp.example.com:8443/mcp", content=b"{}")

    anyio.run(go)
    assert resolver.asked == ["mcp.example.com"]
    assert [r.url.host for r in seen] == [PUBLIC_IP] * 3
    assert all(r.headers["host"] == "mcp.example.com:8443" and r.extensions["sni_hostname"] == "mcp.example.com" for r in seen)
    assert all(r.headers["accept-encoding"] == "gzip, deflate" for r in seen)


def test_a_public_target_that_redirects_to_loopback_is_refused():
    seen: list[httpx.Request] = []

    def redirect(request: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"Location": "http://127.0.0.1:9/admin"})

    async def go():
        limits = Limits(timeout=2, resolver=lambda host, port: [PUBLIC_IP])
        transport = PinnedAsyncTransport(httpx, lambda: Recording(seen, redirect), limits.reach)
        async with httpx.AsyncClient(transport=transport) as client:  # type: ignore[arg-type]
            return await exchange(client, "https://mcp.example.com/mcp", "initialize", {}, limits=limits)

    found = anyio.run(go)
    assert found.failure is Failure.refused_private and found.outcome is ProbeOutcome.refused and "127.0.0.1" in found.detail
    assert [r.url.host for r in seen] == [PUBLIC_IP]  # the redirect was never dialled


@pytest.fixture
def recorder():
    """A real HTTP server answering every POST with a JSON-RPC result and a redirect at /to?url; records each Host header."""
    hosts: list[str] = []

    async def handle(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        hosts.append(headers.get("host", ""))
        if int(headers.get("content-length", 0)):
            await reader.readexactly(int(headers["content-length"]))
        if path.startswith("/to?"):
            writer.write(f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {path[4:]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
        else:
            body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
            # one request per connection (the server closes each after its handler): said, so no client reuses one it closed
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            writer.write(head + body)
        await writer.drain()

    with threaded_server(handle) as port:
        yield port, hosts


def test_rebinding_against_a_real_server_reaches_the_first_answer_or_nothing(recorder):
    port, hosts = recorder
    resolver = Flipping("127.0.0.1", "10.255.0.1")
    limits = Limits(timeout=10, allowed=frozenset({LOOPBACK}), resolver=resolver)  # no timing is asserted: room for a loaded machine
    url = f"http://rebind.test:{port}/mcp"

    async def go():
        async with probe_client(limits) as client:  # one client: one lookup, every exchange at 127.0.0.1
            pinned = [await exchange(client, url, "ping", {}, limits=limits) for _ in range(3)]
        async with probe_client(limits) as client:  # a new client asks again and is told 10.255.0.1: refused, never dialled
            again = await exchange(client, url, "ping", {}, limits=limits)
        return pinned, again

    pinned, again = anyio.run(go)
    assert all(e.ok for e in pinned) and hosts == [f"rebind.test:{port}"] * 3
    assert again.failure is Failure.refused_private and "10.255.0.1" in again.detail and len(hosts) == 3
    assert resolver.asked == ["rebind.test", "rebind.test"]


def test_redirects_to_link_local_or_metadata_are_never_followed_whatever_is_allowed(recorder):
    port, hosts = recorder
    limits = Limits(timeout=2, allow_private=True)  # loopback and private allowed, as in the tests' catalog runs
    for target in ("http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/computeMetadata/v1/",
                   "http://[fe80::1]/", "http://[::ffff:169.254.169.254]/", "http://100.100.100.200/latest/meta-data/"):
        async def go():
            async with probe_client(limits) as client:
                return await exchange(client, f"http://127.0.0.1:{port}/to?{target}", "initialize", {}, limits=limits)

        found = anyio.run(go)
        assert found.failure is Failure.refused_private and found.redirects == [target], (target, found.detail)
        status, _, body = anyio.run(lambda: _get(target, limits))
        assert status is None and body is None  # endpoint facts (which follow no redirect) never fetch such a URL either


def test_a_redirect_that_leaves_http_is_named_not_followed(recorder):
    port, hosts = recorder
    limits = Limits(timeout=2, allow_private=True)
    for target in ("file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://127.0.0.1/x"):
        async def go():
            async with probe_client(limits) as client:
                return await exchange(client, f"http://127.0.0.1:{port}/to?{target}", "initialize", {}, limits=limits)

        asked = len(hosts)
        found = anyio.run(go)
        assert found.failure is Failure.http_error and "not HTTP" in found.detail, (target, found.detail)
        assert len(hosts) == asked + 1  # the redirect itself, nothing after it


async def _get(url: str, limits: Limits):
    async with probe_client(limits) as client:
        return await get_bytes(client, url, limits, "application/json")


def test_probe_and_check_targets_allow_only_their_own_kind():
    assert target_kinds("http://127.0.0.1:8000/mcp") == {"loopback"}
    assert target_kinds("http://10.0.0.5/mcp") == {"private"}
    assert target_kinds("https://mcp.example.com/mcp", resolver=lambda host, port: [PUBLIC_IP]) == frozenset()
    assert target_kinds("http://169.254.169.254/") == frozenset()  # never dialled, so nothing to allow
    assert target_kinds("http://no-such-host.invalid/", resolver=lambda host, port: []) == frozenset()


def test_discovery_fetchers_are_pinned_and_refuse_private_redirects(recorder):
    port, hosts = recorder
    resolver = Flipping("127.0.0.1", "127.0.0.2")
    with source_client(Reach(frozenset({LOOPBACK}), resolver)) as client:
        http = SourceHTTP(client, retries=2, sleep=lambda _: None)
        for _ in range(2):
            http.get_bytes(f"http://source.test:{port}/list")
        assert resolver.asked == ["source.test"] and hosts == [f"source.test:{port}"] * 2
    with source_client(Reach(frozenset({LOOPBACK}))) as client:  # a redirect to a metadata service: refused at once, not retried
        http = SourceHTTP(client, retries=2, sleep=lambda _: None)
        with pytest.raises(SourceError, match="169.254.169.254"):
            http.get_bytes(f"http://127.0.0.1:{port}/to?http://169.254.169.254/latest/meta-data/")
        assert http.requests == 1
    with source_client(Reach()) as client, pytest.raises(SourceError, match="not a public address"):  # sources are public
        SourceHTTP(client, retries=2, sleep=lambda _: None).get_bytes(f"http://127.0.0.1:{port}/list")


@pytest.fixture(scope="module")
def named_certificate(tmp_path_factory):
    """A TLS server context for a certificate naming mcp.test, and the SNI names its handshakes saw."""
    context, certificate = self_signed_tls(tmp_path_factory.mktemp("named-tls"), "mcp.test")
    names: list[str | None] = []
    context.sni_callback = lambda sock, server_name, ctx: names.append(server_name)
    return context, names, certificate


def test_tls_goes_to_the_pinned_address_with_the_real_name(named_certificate):
    context, names, certificate = named_certificate

    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()

    with threaded_server(handle, context) as port:
        names.clear()
        resolver = Flipping("127.0.0.1", "10.255.0.1")
        reach = Reach(frozenset({LOOPBACK}), resolver)
        version, valid = anyio.run(tls_facts, f"https://mcp.test:{port}/mcp", 3.0, reach)
        assert version in ("TLSv1.2", "TLSv1.3") and valid is False  # self-signed: the name matched, the issuer is unknown
        assert names == ["mcp.test", "mcp.test"] and resolver.asked == ["mcp.test"]  # both handshakes: one lookup, the name as SNI
        limits = Limits(timeout=3, allowed=frozenset({LOOPBACK}), resolver=lambda host, port: ["127.0.0.1"])

        async def go():
            async with probe_client(limits) as client:
                untrusted = await exchange(client, f"https://mcp.test:{port}/mcp", "ping", {}, limits=limits)
            # A client that trusts the certificate (it names mcp.test only, not 127.0.0.1): the pinned connection verifies.
            inner = lambda: httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cafile=str(certificate)))  # noqa: E731
            async with httpx.AsyncClient(transport=PinnedAsyncTransport(httpx, inner, limits.reach)) as client:  # type: ignore[arg-type]
                trusted = await client.get(f"https://mcp.test:{port}/mcp")
            return untrusted, trusted

        untrusted, trusted = anyio.run(go)
        assert names[-2:] == ["mcp.test", "mcp.test"]
        assert untrusted.failure is Failure.unreachable and "CERTIFICATE_VERIFY_FAILED" in untrusted.detail  # the probe trusts real CAs only
        assert trusted.status_code == 200 and trusted.request.url.host == "mcp.test"


def test_a_deep_probe_whose_name_rebinds_is_refused_never_redirected():
    """The raw negotiation's client pins 127.0.0.1; the next clients (endpoint facts, the SDK session) are told a
    private address and refuse it, so the probe is `refused`, and nothing but the real server was dialled."""
    with python_server("dual_http.py") as url:
        name_url = url.replace("127.0.0.1", "localhost")  # the SDK server accepts only local Host headers
        for then, outcome in (("127.0.0.1", ProbeOutcome.ok), ("10.255.0.1", ProbeOutcome.refused)):
            resolver = Flipping("127.0.0.1", then)
            limits = Limits(timeout=3, allowed=frozenset({LOOPBACK}), resolver=resolver)
            result = anyio.run(lambda: deep_probe("rebind", Running(transport="streamable-http", url=name_url), limits=limits,
                                                  total_timeout=15, now=datetime.now(timezone.utc)))
            assert result.outcome is outcome, (then, result.outcome, result.detail)
            assert set(resolver.asked) == {"localhost"} and len(resolver.asked) >= 3  # one lookup per client, several clients
            if outcome is ProbeOutcome.refused:
                assert "10.255.0.1" in result.detail and result.tools is None


def test_a_hostname_that_does_not_resolve_is_unreachable():
    def nowhere(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    limits = Limits(timeout=2, resolver=nowhere)

    async def go():
        async with probe_client(limits) as client:
            return await exchange(client, "https://nowhere.test/mcp", "ping", {}, limits=limits)

    found = anyio.run(go)
    assert found.failure is Failure.unreachable and "cannot resolve" in found.detail
    assert json.dumps(found.evidence())  # the evidence stays serialisable


def test_probe_and_check_of_a_loopback_target_refuse_its_redirects_elsewhere(recorder, settings):
    """`scoreboard probe URL` / `check URL`: a loopback target may be dialled, but what it redirects to must be loopback
    (or public) too: not the private network, and never a metadata service, although the user named a local URL."""
    from pipeline.check import probe_target

    port, hosts = recorder
    quick = settings.model_copy(update={"call_timeout": 2.0, "probe_timeout": 8.0})
    now = datetime.now(timezone.utc)
    for target in ("http://10.255.0.1/mcp", "http://169.254.169.254/latest/meta-data/"):
        result = probe_target(f"http://127.0.0.1:{port}/to?{target}", None, quick, now)
        assert result.outcome is ProbeOutcome.refused and target.split("/")[2] in result.detail, (target, result.detail)
    assert probe_target(f"http://127.0.0.1:{port}/mcp", None, quick, now).eras is not None  # the target itself is dialled


def test_allowed_addresses_are_tried_in_the_resolvers_order(recorder):
    port, hosts = recorder  # listening on 127.0.0.1 only: 127.0.0.2 refuses the connection
    limits = Limits(timeout=2, allowed=frozenset({LOOPBACK}), resolver=lambda host, port: ["127.0.0.2", "127.0.0.1"])

    async def go():
        async with probe_client(limits) as client:
            return await exchange(client, f"http://two.test:{port}/mcp", "ping", {}, limits=limits)

    assert anyio.run(go).ok and hosts == [f"two.test:{port}"]
