"""Endpoint discovery from a README (seed 000): URLs extracted from the text, then validated: documentation sites,
package registries, code hosts' pages, aggregators' proxy URLs, badges, placeholder and example domains are refused;
what is kept has an MCP URL pattern, is https, and resolves when a resolver is given (online runs only).

The README is hostile: it is read to a cap, at most MAX_CANDIDATES URLs are looked at, every pattern is bounded, and
no network is touched except through the injected resolver.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable
from urllib.parse import urlsplit

from pipeline.models import DiscoveredEndpoint, Transport

Resolver = Callable[[str], bool]  # host -> resolves; injected, so that analysis stays offline unless asked

MAX_README = 300_000  # characters of README read
MAX_LINE = 20_000  # characters of one line read (a URL further along a megabyte line is not looked for)
MAX_CANDIDATES = 200  # URLs looked at
MAX_ENDPOINTS = 10  # endpoints kept
MAX_RESOLVES = 10  # distinct hosts resolved

_URL = re.compile(r"""https?://[^\s<>"'`()\[\]{}|\\^]{1,2000}""", re.I)
_TRAILING = ".,;:!?*_~"

# Domains (and their subdomains) that are never an MCP endpoint of the server itself, by why.
_BLOCKED: dict[str, tuple[str, ...]] = {
    "package registry": (
        "pkg.go.dev", "rubygems.org", "nuget.org", "packagist.org", "jsr.io", "unpkg.com", "jsdelivr.net", "hub.docker.com",
        "docker.com", "ghcr.io", "quay.io", "anaconda.org", "mvnrepository.com", "search.maven.org",
    ),
    "code host": (
        "github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "githubusercontent.com", "github.io", "sourceforge.net",
    ),
    "aggregator or catalog (proxy URLs are rejected)": (
        "smithery.ai", "glama.ai", "mcp.so", "pulsemcp.com", "mcpservers.org", "mcpservers.com", "mcpmarket.com", "mcpmarket.cn",
        "mcp.run", "mcphub.io", "mcphub.com", "mcp-get.com", "mseep.ai", "mseep.net", "lobehub.com", "cursor.directory",
        "opentools.com", "mcpserverfinder.com", "mcp.pizza", "mcpverified.com", "archestra.ai", "mcpscoreboard.com", "composio.dev",
        "registry.modelcontextprotocol.io",
    ),
    "badge or image": (
        "shields.io", "badge.fury.io", "badgen.net", "codecov.io", "coveralls.io", "travis-ci.org", "travis-ci.com", "circleci.com",
        "snyk.io", "sonarcloud.io", "imgur.com", "giphy.com", "star-history.com", "api.star-history.com", "forthebadge.com",
        "app.codacy.com", "trendshift.io", "contrib.rocks",
    ),
    "documentation or social site": (
        "modelcontextprotocol.io", "readthedocs.io", "readthedocs.org", "gitbook.io", "mintlify.app", "notion.site", "medium.com",
        "dev.to", "youtube.com", "youtu.be", "twitter.com", "x.com", "discord.gg", "discord.com", "linkedin.com", "reddit.com",
        "stackoverflow.com", "wikipedia.org", "developer.mozilla.org", "docs.anthropic.com", "anthropic.com", "claude.ai",
        "platform.openai.com", "code.visualstudio.com", "vscode.dev", "visualstudio.com", "cursor.com", "cursor.sh", "lmstudio.ai",
        "opensource.org", "choosealicense.com",
        "spdx.org", "semver.org", "keepachangelog.com", "conventionalcommits.org", "nodejs.org", "python.org", "docs.astral.sh",
        "astral.sh", "json-schema.org", "ietf.org", "rfc-editor.org",
    ),
    "example or reserved domain": (
        "example.com", "example.org", "example.net", "example", "test", "invalid", "localhost", "local", "internal", "lan", "home.arpa",
    ),
}
_BLOCK = {domain: why for why, domains in _BLOCKED.items() for domain in domains}
# First host labels of documentation pages: refused unless the host itself says MCP (docs.mcp.cloudflare.com is a server)
# or the URL sits in a client configuration.
_DOC_LABELS = frozenset({"docs", "doc", "documentation", "developer", "developers", "help", "support", "blog", "learn", "wiki", "www"})
_PLACEHOLDER = re.compile(r"your[-_]?(?:domain|server|host|app|instance|company|org|name|project|url|worker|subdomain|account|deployment)"
                          r"|<[^>]{0,80}>|\{[^}]{0,80}\}|\$\{?[A-Za-z_]|YOUR_|xxx|placeholder|\.\.\.|my-?(?:server|domain|app|host)", re.I)
# A package's page or file on a registry, whichever registry: /package/<name>, /project/<name>, /packages/…, /crates/…
# (the registries' own hosts are not listed by name: a page there has one of these paths, a file one of these or none of MCP's).
_PACKAGE_PAGE = re.compile(r"^/(?:package|packages|project|projects|crates?|simple|-)(?:/|$)", re.I)
_IMAGE = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|ico|bmp)$|/badges?(?:/|$)", re.I)
_DOC_PATH = re.compile(r"\.(?:md|html?|pdf|txt|rst)$|^/(?:docs?|documentation|blog|guides?|wiki)(?:/|$)", re.I)
# Where a URL sits in a client configuration: "url"/"serverUrl" in mcpServers JSON, `npx mcp-remote URL`, `claude mcp add
# --transport http NAME URL`, `codex mcp add`, --url flags.
_CONFIG = re.compile(r"""["']?(?:url|serverUrl|server_url|endpoint|httpUrl)["']?\s{0,4}[:=]|mcp-remote|mcp\s{1,4}add|--url\b|--transport\b""",
                     re.I)
_SSE_HINT = re.compile(r"""--transport[\s=]{1,4}sse\b|["'](?:type|transport)["']\s{0,4}:\s{0,4}["']sse["']""", re.I)


def discover_endpoints(readme: str | None, resolve: Resolver | None = None) -> list[DiscoveredEndpoint]:
    """The README's remote MCP endpoints that pass validation, in the order they appear, each with its line and checks."""
    if not readme:
        return []
    found: list[DiscoveredEndpoint] = []
    seen: set[str] = set()
    resolved: dict[str, bool] = {}
    considered = 0
    for number, line in enumerate(readme[:MAX_README].splitlines(), start=1):
        line = line[:MAX_LINE]
        for match in _URL.finditer(line):
            considered += 1
            if considered > MAX_CANDIDATES or len(found) >= MAX_ENDPOINTS:
                return found
            url = _trim(match.group(0))
            if url in seen:
                continue
            seen.add(url)
            endpoint = _checked(url, line, resolve, resolved)
            if endpoint is None:
                continue
            endpoint.line = number
            found.append(endpoint)
    return found


def _checked(url: str, line: str, resolve: Resolver | None, resolved: dict[str, bool]) -> DiscoveredEndpoint | None:
    """`url` validated against its line, and resolved when a resolver is given (at most MAX_RESOLVES hosts per README)."""
    endpoint = validate(url, line)
    if endpoint is None or resolve is None:
        return endpoint
    host = urlsplit(endpoint.url).hostname or ""
    if host not in resolved:
        if len(resolved) >= MAX_RESOLVES:
            return None
        resolved[host] = _resolves(resolve, host)
    if not resolved[host]:
        return None
    endpoint.checks.append("dns")
    return endpoint


def named_endpoints(urls: list[str], readme: str, model: str, known: list[DiscoveredEndpoint],
                    resolve: Resolver | None = None) -> tuple[list[DiscoveredEndpoint], list[str]]:
    """The endpoints a model named that the README parser did not find, each through the same validation, and why each
    other one was refused (deviation 129). A model's URL counts only where the README writes it: whole, or without its
    scheme (`mcp.acme.dev/mcp`, read as https); one the README does not contain is refused whatever the README asked for."""
    found: list[DiscoveredEndpoint] = []
    refused: list[str] = []
    seen = {e.url for e in known}
    resolved: dict[str, bool] = {}
    for url in urls[:MAX_CANDIDATES]:
        url = _trim(url.strip())
        shown = url[:120].encode("ascii", "backslashreplace").decode()
        place = _written(url, readme)
        if place is None:
            refused.append(f"{shown}: not written in the README")
            continue
        number, line = place
        https = "https://" + url.split("://", 1)[-1]
        if why := refusal(https, line):
            refused.append(f"{shown}: {why}")
            continue
        endpoint = _checked(https, line, resolve, resolved)
        if endpoint is None:
            refused.append(f"{shown}: does not resolve")
            continue
        if endpoint.url in seen or len(known) + len(found) >= MAX_ENDPOINTS:
            continue
        seen.add(endpoint.url)
        endpoint.line, endpoint.found_by = number, model
        found.append(endpoint)
    return found, refused[:20]


def _written(url: str, readme: str) -> tuple[int, str] | None:
    """(line number, line) of the first place the README writes `url`: as an https URL, or without a scheme where no
    other scheme or a longer host name precedes it (exactly as written: a path's case matters). None when it does not."""
    scheme, _, rest = url.rpartition("://")
    if scheme.lower() not in ("", "https") or not rest or any(c.isspace() for c in rest):
        return None
    start = readme.find(rest)
    while start >= 0:
        before = readme[max(0, start - 8):start].lower()
        if before.endswith("https://") or not (before.endswith("/") or before.endswith(":") or (before and (before[-1].isalnum() or
                                                                                                       before[-1] in ".-_@"))):
            number = readme.count("\n", 0, start) + 1
            line_start = readme.rfind("\n", 0, start) + 1
            line_end = readme.find("\n", start)
            return number, readme[line_start:line_end if line_end >= 0 else len(readme)][:MAX_LINE]
        start = readme.find(rest, start + 1)
    return None


def _trim(url: str) -> str:
    """A URL as written, without the sentence punctuation or Markdown emphasis that follows it."""
    return url.rstrip(_TRAILING)


def _resolves(resolve: Resolver, host: str) -> bool:
    try:
        return bool(resolve(host))
    except Exception:  # noqa: BLE001 - an injected resolver's failure is "does not resolve", never a crash of the stage
        return False


def refusal(url: str, context: str = "") -> str | None:
    """Why `url` is not a remote MCP endpoint of the server, or None when it may be one."""
    if len(url) > 2000:
        return "too long"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "not a URL"
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme.lower() != "https":
        return "not https"
    if not host or "." not in host or port == 0:
        return "no public host name"
    if parts.username or parts.password:
        return "credentials in the URL"
    if _PLACEHOLDER.search(f"{host}{parts.path}"):
        return "placeholder"
    if _is_ip(host):
        return "an IP address, not a host name"
    if _PACKAGE_PAGE.search(parts.path):
        return "package registry page"
    blocked = _blocked(host)
    if blocked and not (blocked == "code host" and parts.path.lower().startswith("/api/")):
        return blocked
    if _IMAGE.search(parts.path):
        return "badge or image"
    mcp_host = _mcp_host(host)
    in_config = bool(_CONFIG.search(context))
    if not (mcp_host or in_config) and (host.split(".")[0] in _DOC_LABELS or _DOC_PATH.search(parts.path)):
        return "documentation page"
    if not (mcp_host or _mcp_path(parts.path)):
        return "no MCP URL pattern (an /mcp or /sse path, or an mcp host)"
    return None


def validate(url: str, context: str = "") -> DiscoveredEndpoint | None:
    """An endpoint for `url` (found on the line `context`) when it passes, with the checks it passed; None when refused."""
    if refusal(url, context) is not None:
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    query = parts.query
    if query and _PLACEHOLDER.search(query):
        query = ""  # an API key placeholder in the query: the endpoint without it (the probe then meets its auth)
    clean = f"https://{parts.netloc.lower()}{parts.path}" + (f"?{query}" if query else "")
    checks = ["https", "not-blocklisted", "not-placeholder"]
    checks.append("mcp-path" if _mcp_path(parts.path) else "mcp-host")
    if _mcp_path(parts.path) and _mcp_host(host):
        checks.append("mcp-host")
    if _CONFIG.search(context):
        checks.append("client-config")
    return DiscoveredEndpoint(url=clean, transport=_transport(parts.path, context), checks=checks)


def _transport(path: str, context: str) -> Transport:
    segments = [s for s in path.lower().split("/") if s]
    if (segments and segments[-1] == "sse") or _SSE_HINT.search(context):
        return "sse"
    return "streamable-http"


def _mcp_path(path: str) -> bool:
    return any(segment in ("mcp", "sse") for segment in path.lower().split("/"))


def _mcp_host(host: str) -> bool:
    return any(label == "mcp" or label.startswith("mcp-") or label.endswith("-mcp") for label in host.split(".")[:-1])


def _blocked(host: str) -> str | None:
    labels = host.split(".")
    for i in range(len(labels)):
        why = _BLOCK.get(".".join(labels[i:]))
        if why:
            return why
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
