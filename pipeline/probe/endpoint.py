"""What an HTTP endpoint shows beyond MCP (seeds 000, 001, 004): TLS and HSTS, OAuth discovery for a
gated server (RFC 9728, RFC 8414), a server card, a setup page for browsers, and our opt-out file.

Every read is a bounded GET; whatever a server sends, the answer is a fact or None ("not seen").
"""

from __future__ import annotations

import functools
import json
import re
import socket
import ssl
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from pipeline.models import HttpFacts
from pipeline.net import AddressRefused, Reach
from pipeline.probe.raw import Exchange, Limits

OPT_OUT_PATH = "/.well-known/mcp-scoreboard"
SERVER_CARD_PATHS = ("/.well-known/mcp.json", "/.well-known/mcp/server-card.json")  # SEP-2127 and the older name
_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]+)"')


async def get_json(client: httpx.AsyncClient, url: str, limits: Limits, accept: str = "application/json") -> tuple[int | None, str, Any]:
    """(status, content type, parsed JSON or None) of a bounded GET; never raises."""
    status, kind, body = await get_bytes(client, url, limits, accept)
    if body is None or "json" not in kind:
        return status, kind, None
    try:
        return status, kind, json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return status, kind, None


async def get_bytes(client: httpx.AsyncClient, url: str, limits: Limits, accept: str) -> tuple[int | None, str, bytes | None]:
    """A bounded GET; a URL whose host the client may not dial is not fetched (a hostile server may point us anywhere),
    nor is anything once the probe has stopped asking this server (status None: not fetched)."""
    if limits.stopped():
        return None, "", None
    try:
        with anyio.fail_after(limits.wait()):
            async with client.stream("GET", url, headers={"User-Agent": limits.user_agent, "Accept": accept}) as response:
                if response.status_code == 429 and limits.budget is not None:
                    limits.budget.rate_limited(response.headers.get("retry-after"))
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or kind == "text/event-stream":
                    return response.status_code, kind, None  # an event stream (an SSE endpoint opened like a page) never ends
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > min(limits.max_bytes, 1_000_000):
                        return response.status_code, kind, None
                    chunks.append(chunk)
                return response.status_code, kind, b"".join(chunks)
    except httpx.ConnectTimeout:
        if limits.budget is not None:  # a host that does not take a connection is not dialled again in this probe
            limits.budget.halt(f"no connection within {limits.connect:g} s ({url})")
        return None, "", None
    except (TimeoutError, httpx.HTTPError, OSError, AddressRefused):
        return None, "", None


async def opt_out(client: httpx.AsyncClient, url: str, limits: Limits) -> dict[str, bool] | None:
    """The server's answer at /.well-known/mcp-scoreboard: {"optout": true} (and "delist") means leave it alone."""
    _, _, document = await get_json(client, urljoin(url, OPT_OUT_PATH), limits)
    if isinstance(document, dict) and document.get("optout") is True:
        return {"optout": True, "delist": document.get("delist") is True}
    return None


async def endpoint_facts(client: httpx.AsyncClient, url: str, first: Exchange, limits: Limits) -> HttpFacts:
    """Facts about the endpoint, given the first MCP exchange with it (its status and headers). A fact whose request
    got no HTTP answer, or was not sent (the server had stopped answering, asked us to wait, or the budget was spent),
    is None: not measured, never "no"."""
    secure = urlsplit(url).scheme == "https"
    answered = first.status is not None
    # A 429 says nothing about a gate: auth stays unmeasured, like every other fact after it.
    facts = HttpFacts(auth_required=first.status in (401, 403) if answered and first.status != 429 else None)
    if secure:
        facts.hsts = "strict-transport-security" in first.headers if answered else None
    if limits.stopped():
        return facts
    if secure:
        facts.tls_version, facts.cert_valid = await tls_facts(url, limits.wait(), limits.reach, limits.connect)
    if first.status in (401, 403):
        resource = await _protected_resource(client, url, first.headers.get("www-authenticate", ""), limits)
        facts.protected_resource_metadata = resource is not None
        # Without an RFC 9728 document, the 2025-03-26 rule applies: the MCP server's own origin is its authorization server.
        issuers = resource["authorization_servers"] if resource is not None else [_origin(url)]
        facts.authorization_server_metadata = await _authorization_server(client, issuers, limits)
    for path in SERVER_CARD_PATHS:
        status, _, card = await get_json(client, urljoin(url, path), limits)
        if isinstance(card, dict) and (card.get("name") or card.get("serverInfo")):
            facts.server_card = True
            break
        if status is not None:
            facts.server_card = False
    status, kind, _ = await get_bytes(client, url, limits, accept="text/html")
    facts.html_setup_page = status == 200 and kind == "text/html" if status is not None else None
    return facts


async def tls_facts(url: str, timeout: float, reach: Reach = Reach(), connect: float | None = None) -> tuple[str | None, bool | None]:
    """(TLS version, certificate valid) of an https endpoint; the version is read even when the certificate fails.
    The host is resolved once and dialled at that address only if `reach` allows it, with its name for SNI and the
    certificate check. The handshake runs in a thread, bounded twice: the socket's timeout is a deadline for the whole
    handshake (so a server that drips it byte by byte is cut off), and the probe stops waiting at `timeout` whatever
    the thread does."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    pinned: list[str] = []

    def handshake(verify: bool) -> str | None:
        if not pinned:
            pinned.append(reach.addresses(host, port)[0])
        with socket.create_connection((pinned[0], port), timeout=min(connect or timeout, timeout)) as raw:
            raw.settimeout(timeout)
            with _tls_contexts(verify).wrap_socket(raw, server_hostname=host) as secured:
                return secured.version()

    async def bounded(verify: bool) -> str | None:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(handshake, verify, abandon_on_cancel=True)

    try:
        return await bounded(True), True
    except ssl.SSLCertVerificationError:
        try:
            return await bounded(False), False
        except (OSError, ssl.SSLError, TimeoutError):
            return None, False
    except (OSError, ssl.SSLError, TimeoutError, AddressRefused):
        return None, None


@functools.cache
def _tls_contexts(verify: bool) -> ssl.SSLContext:
    """Built once each: a context loads the CA bundle, tens of milliseconds of CPU."""
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


async def _protected_resource(client: httpx.AsyncClient, url: str, challenge: str, limits: Limits) -> dict[str, Any] | None:
    """RFC 9728: the URL in WWW-Authenticate's resource_metadata, else the path-suffixed, else the root well-known document."""
    parts = urlsplit(url)
    origin = _origin(url)
    candidates = [m.group(1) for m in _RESOURCE_METADATA.finditer(challenge)]
    path = parts.path.rstrip("/")
    if path:
        candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    candidates.append(f"{origin}/.well-known/oauth-protected-resource")
    for candidate in dict.fromkeys(candidates):
        _, _, document = await get_json(client, candidate, limits)
        if isinstance(document, dict) and isinstance(document.get("resource"), str) and isinstance(document.get("authorization_servers"), list):
            return document
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def _authorization_server(client: httpx.AsyncClient, issuers: list[Any], limits: Limits) -> bool:
    """RFC 8414 (or OpenID discovery) metadata of the first authorization server named."""
    servers = [s for s in issuers if isinstance(s, str)]
    if not servers:
        return False
    issuer = servers[0].rstrip("/")
    origin, path = _origin(issuer), urlsplit(issuer).path
    for candidate in (f"{origin}/.well-known/oauth-authorization-server{path}", f"{issuer}/.well-known/openid-configuration"):
        _, _, document = await get_json(client, candidate, limits)
        if isinstance(document, dict) and document.get("issuer") and (document.get("token_endpoint") or document.get("authorization_endpoint")):
            return True
    return False
