"""Endpoint facts: OAuth discovery for a gated server (RFC 9728 then RFC 8414), server card, browser page, opt-out, TLS and HSTS."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading

import anyio
import pytest

from pipeline import ENGINE_VERSION
from pipeline.probe.endpoint import endpoint_facts, opt_out, tls_facts
from pipeline.probe.raw import Limits, exchange, probe_client
from tests.support import self_signed_tls

LIMITS = Limits(timeout=3, allow_private=True)


def response(status: str, body: bytes = b"", kind: str = "application/json", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n".encode() + body


class Site:
    """A tiny HTTP server answering canned responses by (method, path); the origin is filled in once known."""

    def __init__(self, routes, ssl_context=None):
        self.routes, self.ssl_context = routes, ssl_context
        self.agents: list[str] = []  # the User-Agent of every request

    async def handle(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path = head.split(b" ", 2)[:2]
            self.agents.extend(x.split(b":", 1)[1].strip().decode() for x in head.split(b"\r\n") if x.lower().startswith(b"user-agent:"))
            length = next((int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")), 0)
            if length:
                await reader.readexactly(length)
            make = self.routes.get((method.decode(), path.decode()))
            writer.write(make(self.origin) if make else response("404 Not Found", b"no", kind="text/plain"))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def __enter__(self):
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=self.ssl_context))
        scheme = "https" if self.ssl_context else "http"
        self.origin = f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.server.close()
        self.loop.close()


def js(value) -> bytes:
    return json.dumps(value).encode()


def facts_for(url: str):
    async def go():
        async with probe_client(LIMITS) as client:
            first = await exchange(client, url, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, limits=LIMITS)
            return first, await endpoint_facts(client, url, first, LIMITS), await opt_out(client, url, LIMITS)
    return anyio.run(go)


GATED = {
    ("POST", "/mcp"): lambda o: response("401 Unauthorized", extra=f'WWW-Authenticate: Bearer resource_metadata="{o}/meta/prm"\r\n'),
    ("GET", "/meta/prm"): lambda o: response("200 OK", js({"resource": f"{o}/mcp", "authorization_servers": [f"{o}/tenant"]})),
    ("GET", "/.well-known/oauth-authorization-server/tenant"):
        lambda o: response("200 OK", js({"issuer": f"{o}/tenant", "token_endpoint": f"{o}/token"})),
    ("GET", "/.well-known/mcp.json"): lambda o: response("200 OK", js({"name": "gated", "description": "a card"})),
    ("GET", "/mcp"): lambda o: response("200 OK", b"<html><h1>Add this server</h1></html>", kind="text/html"),
    ("GET", "/.well-known/mcp-scoreboard"): lambda o: response("200 OK", js({"optout": True, "delist": True})),
}


def test_a_gated_server_is_auth_required_with_its_discovery_documents_found():
    with Site(GATED) as site:
        first, facts, out = facts_for(site.origin + "/mcp")
    assert first.outcome.value == "auth_required"
    assert facts.auth_required and facts.protected_resource_metadata and facts.authorization_server_metadata
    assert facts.server_card is True and facts.html_setup_page is True
    assert facts.tls_version is None and facts.hsts is None  # plain http: not measured
    assert out == {"optout": True, "delist": True}


def test_the_path_suffixed_document_is_found_without_a_hint_and_bad_documents_do_not_count():
    routes = {
        ("POST", "/v1/mcp"): lambda o: response("401 Unauthorized", extra="WWW-Authenticate: Bearer\r\n"),
        ("GET", "/.well-known/oauth-protected-resource/v1/mcp"): lambda o: response("200 OK", js({"resource": f"{o}/v1/mcp",
                                                                                                      "authorization_servers": [f"{o}/"]})),
        ("GET", "/.well-known/oauth-authorization-server"): lambda o: response("200 OK", b"{not json"),
        ("GET", "/.well-known/openid-configuration"): lambda o: response("200 OK", js({"issuer": o})),  # no endpoints
        ("GET", "/.well-known/mcp.json"): lambda o: response("200 OK", b"<html>not a card</html>", kind="text/html"),
        ("GET", "/.well-known/mcp-scoreboard"): lambda o: response("200 OK", js({"optout": "yes"})),  # only true counts
    }
    with Site(routes) as site:
        _, facts, out = facts_for(site.origin + "/v1/mcp")
    assert facts.auth_required and facts.protected_resource_metadata is True and facts.authorization_server_metadata is False
    assert facts.server_card is False and facts.html_setup_page is False and out is None

def test_without_a_protected_resource_document_the_servers_own_origin_is_its_authorization_server():
    """The 2025-03-26 rule: no RFC 9728 document, so RFC 8414 metadata is read at the MCP server's origin."""
    routes = {
        ("POST", "/v1/mcp"): lambda o: response("401 Unauthorized", extra="WWW-Authenticate: Bearer\r\n"),
        ("GET", "/.well-known/oauth-authorization-server"):
            lambda o: response("200 OK", js({"issuer": o, "authorization_endpoint": f"{o}/authorize"})),
    }
    with Site(routes) as site:
        _, facts, _ = facts_for(site.origin + "/v1/mcp")
    assert facts.auth_required and facts.protected_resource_metadata is False and facts.authorization_server_metadata is True



def test_metadata_pointing_at_a_private_address_is_not_fetched():
    routes = {("POST", "/mcp"): lambda o: response("401 Unauthorized", extra='WWW-Authenticate: Bearer resource_metadata="http://10.0.0.1/prm"\r\n')}
    with Site(routes) as site:
        async def go():
            limits = Limits(timeout=2, allowed=frozenset({"loopback"}))  # the target's own kind (a target the user named)
            async with probe_client(limits) as client:
                first = await exchange(client, site.origin + "/mcp", "initialize", {}, limits=limits)
                return await endpoint_facts(client, site.origin + "/mcp", first, limits)
        facts = anyio.run(go)
    assert facts.auth_required and facts.protected_resource_metadata is False  # 10.0.0.1 refused; the loopback fallbacks: 404


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    context, _ = self_signed_tls(tmp_path_factory.mktemp("tls"), "127.0.0.1")
    return context


def test_tls_version_is_read_and_an_untrusted_certificate_is_invalid(self_signed):
    routes = {("POST", "/mcp"): lambda o: response("200 OK", js({"jsonrpc": "2.0", "id": 1, "result": {}}),
                                                   extra="Strict-Transport-Security: max-age=63072000\r\n")}
    with Site(routes, ssl_context=self_signed) as site:
        version, valid = anyio.run(tls_facts, site.origin + "/mcp", 3.0, LIMITS.reach)
        assert version in ("TLSv1.2", "TLSv1.3") and valid is False
        first, facts, _ = facts_for(site.origin + "/mcp")  # the probe's own client refuses the untrusted certificate ...
        assert first.failure.value == "unreachable" and "CERTIFICATE" in first.detail.upper()
        assert facts.tls_version == version and facts.cert_valid is False  # ... and the facts say why


def test_a_tls_handshake_dripped_a_byte_at_a_time_is_cut_at_the_deadline():
    import socket
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip():
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"\x16\x03\x03\x40\x00")  # a TLS record header announcing 16 KB of handshake ...
            while not stop.is_set():  # ... then a byte every 0.2 s: no single read times out, the handshake never ends
                try:
                    conn.sendall(b"\x00")
                except OSError:
                    return
                time.sleep(0.2)

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    try:
        assert anyio.run(tls_facts, f"https://127.0.0.1:{listener.getsockname()[1]}/mcp", 1.0, LIMITS.reach) == (None, None)
        assert time.monotonic() - started < 2
    finally:
        stop.set()
        listener.close()


def test_opted_out_servers_are_not_probed_and_delisted_ones_stay_off(db, settings):
    import io
    from datetime import timedelta

    from pipeline import store
    from pipeline.probe import run_probe
    from pipeline.progress import Progress
    from pipeline.sandbox.install import Installer
    from tests.support import NOW, ListSource, entry, quiet

    calls = []
    routes = {
        ("GET", "/.well-known/mcp-scoreboard"): lambda o: response("200 OK", js({"optout": True, "delist": True})),
        ("POST", "/mcp"): lambda o: calls.append("mcp") or response("200 OK", js({"jsonrpc": "2.0", "id": 1, "result": {}})),
    }
    with Site(routes) as site:
        servers = [entry("gone", transport="streamable-http", remote_url=site.origin + "/mcp"),
                   entry("private", transport="streamable-http", remote_url="http://10.1.2.3/mcp")]
        from pipeline.discover import run_discover
        run_discover(db, sources=[ListSource("test", servers)], now=NOW, progress=quiet(1))

        def probe(allow_private):
            return run_probe(db, servers=store.active_servers(db), installer=Installer(settings.cache_dir), now=NOW,
                             settings=settings.model_copy(update={"allow_private": allow_private, "call_timeout": 2.0}),
                             progress=Progress("probe", 2, stream=io.StringIO()))

        refused = probe(False)  # loopback and 10.x are not ours to dial by default
        assert refused.counts == {"not_probeable": 2}
        report = probe(True)  # configuration allows them (as tests do): the opt-out file is honoured
    assert report.counts.get("opted_out") == 1 and calls == []  # never a single MCP request
    row = db["servers"].get("gone")
    assert row["is_active"] == 0 and "delisted_at" in json.loads(row["attributes"])
    run_discover(db, sources=[ListSource("test", servers)], now=NOW + timedelta(days=1), progress=quiet(1))
    assert db["servers"].get("gone")["is_active"] == 0  # still listed by the source, still off the scoreboard
    assert [s.id for s in store.active_servers(db)] == ["private"]


def test_gated_and_rate_limited_servers_are_named_states_and_retry_after_is_honoured(db, settings):
    import io
    from datetime import timedelta

    from pipeline import store
    from pipeline.discover import run_discover
    from pipeline.probe import run_probe
    from pipeline.probe.monitor import run_monitor
    from pipeline.progress import Progress
    from pipeline.sandbox.install import Installer
    from tests.support import NOW, ListSource, entry, quiet

    routes = {
        ("POST", "/limited/mcp"): lambda o: response("429 Too Many Requests", js({"error": "slow down"}), extra="Retry-After: 120\r\n"),
        ("POST", "/gated/mcp"): lambda o: response("401 Unauthorized", extra='WWW-Authenticate: Bearer resource_metadata="' + o + '/prm"\r\n'),
    }
    with Site(routes) as site:
        servers = [entry("limited", transport="streamable-http", remote_url=site.origin + "/limited/mcp"),
                   entry("gated", transport="streamable-http", remote_url=site.origin + "/gated/mcp")]
        run_discover(db, sources=[ListSource("test", servers)], now=NOW, progress=quiet(1))
        allowed = settings.model_copy(update={"allow_private": True, "call_timeout": 2.0, "probe_timeout": 10.0, "fast_probe_timeout": 5.0})

        def stage(run, at):
            return run(db, servers=store.active_servers(db), installer=Installer(settings.cache_dir), now=at, settings=allowed,
                       progress=Progress("probe", 2, stream=io.StringIO()))

        first = stage(run_probe, NOW)
        assert first.counts == {"rate_limited": 1, "auth_required": 1}  # named states, never "down"
        latest = {sid: store.latest_probe(db, sid)[1] for sid in ("limited", "gated")}
        assert latest["limited"].retry_after_s == 120 and "Retry-After: 120" in latest["limited"].detail
        assert latest["gated"].http.auth_required is True and latest["gated"].http.protected_resource_metadata is False
        soon = stage(run_monitor, NOW + timedelta(seconds=60))
        assert soon.counts == {"waiting_retry_after": 1, "auth_required": 1}  # the limited one asked for two minutes
        later = stage(run_monitor, NOW + timedelta(seconds=180))
        assert later.counts == {"rate_limited": 1, "auth_required": 1}
    # Every request named the scoreboard and where its probing is explained (probe policy).
    assert site.agents and set(site.agents) == {f"mcp-scoreboard-probe/{ENGINE_VERSION} (+{allowed.site_url}methodology/index.html)"}


def test_health_checks_honour_the_last_opt_out_without_fetching_it_again(db, settings):
    import io

    from pipeline import store
    from pipeline.discover import run_discover
    from pipeline.probe import run_probe
    from pipeline.probe.monitor import run_monitor
    from pipeline.progress import Progress
    from pipeline.sandbox.install import Installer
    from tests.support import NOW, ListSource, entry, quiet

    seen = []
    routes = {("GET", "/.well-known/mcp-scoreboard"): lambda o: seen.append("optout") or response("200 OK", js({"optout": True})),
              ("POST", "/mcp"): lambda o: seen.append("mcp") or response("200 OK", js({"jsonrpc": "2.0", "id": 1, "result": {}}))}
    with Site(routes) as site:
        run_discover(db, sources=[ListSource("test", [entry("quiet", transport="streamable-http", remote_url=site.origin + "/mcp")])], now=NOW,
                     progress=quiet(1))
        allowed = settings.model_copy(update={"allow_private": True, "call_timeout": 2.0})
        stage = {"probe": run_probe, "monitor": run_monitor}

        def run(name):
            return stage[name](db, servers=store.active_servers(db), installer=Installer(settings.cache_dir), now=NOW, settings=allowed,
                               progress=Progress(name, 1, stream=io.StringIO()))

        assert run("probe").counts == {"opted_out": 1} and seen == ["optout"]
        assert run("monitor").counts == {"opted_out": 1} and seen == ["optout"]  # not a single request more
    assert db["servers"].get("quiet")["is_active"] == 1  # opted out of probing, not delisted
