"""Endpoint discovery from READMEs: hosted servers' /mcp and /sse URLs kept, every documentation, registry, code-host,
aggregator, badge, example and placeholder link refused; hostile READMEs stay bounded."""

from __future__ import annotations

import time

import pytest

from pipeline.analyze.endpoints import MAX_CANDIDATES, MAX_ENDPOINTS, MAX_RESOLVES, discover_endpoints, refusal

# README excerpts in the shape hosted MCP servers publish them (the endpoints are the vendors' documented ones).
LINEAR = """# Linear MCP server

Connect to `https://mcp.linear.app/sse` from any client that supports remote servers:

```json
{
  "mcpServers": {
    "linear": {
      "command": "npx",
      "args": ["-y", "mcp-remote", "https://mcp.linear.app/sse"]
    }
  }
}
```
"""
NOTION = """## Connect

```bash
claude mcp add --transport http notion https://mcp.notion.com/mcp
```
Older clients may use https://mcp.notion.com/sse.
"""
GITHUB = """### Remote server
The remote GitHub MCP Server is hosted by GitHub at https://api.githubcopilot.com/mcp/ and provides the easiest setup.

[![Install in VS Code](https://img.shields.io/badge/VS_Code-Install_Server-0098FF)](https://insiders.vscode.dev/redirect/mcp/install?name=github)

```json
{"servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}
```
"""
CLOUDFLARE = """| Server | URL |
|---|---|
| Documentation server | `https://docs.mcp.cloudflare.com/sse` |
| Workers Bindings | `https://bindings.mcp.cloudflare.com/sse` |
| Observability | https://observability.mcp.cloudflare.com/mcp |
"""
GITLAB = "Use the GitLab MCP server at `https://gitlab.com/api/v4/mcp` with OAuth.\n"
HOSTED = {
    "linear": (LINEAR, [("https://mcp.linear.app/sse", "sse", 3)]),
    "notion": (NOTION, [("https://mcp.notion.com/mcp", "streamable-http", 4), ("https://mcp.notion.com/sse", "sse", 6)]),
    "github": (GITHUB, [("https://api.githubcopilot.com/mcp/", "streamable-http", 2)]),
    "cloudflare": (CLOUDFLARE, [("https://docs.mcp.cloudflare.com/sse", "sse", 3), ("https://bindings.mcp.cloudflare.com/sse", "sse", 4),
                                ("https://observability.mcp.cloudflare.com/mcp", "streamable-http", 5)]),
    "gitlab": (GITLAB, [("https://gitlab.com/api/v4/mcp", "streamable-http", 1)]),
}

# A README of a local server: every link is documentation, a registry, a code host, a catalog, a badge or an example.
LOCAL = """# mcp-server-weather
[![npm version](https://img.shields.io/npm/v/mcp-server-weather.svg)](https://www.js-packages.dev/package/mcp-server-weather)
[![PyPI](https://badge.fury.io/py/mcp-server-weather.svg)](https://py-packages.dev/project/mcp-server-weather/)
[![smithery badge](https://smithery.ai/badge/@acme/weather)](https://smithery.ai/server/@acme/weather)
<a href="https://glama.ai/mcp/servers/abc123"><img src="https://glama.ai/mcp/servers/abc123/badge" /></a>
[![MCP.so](https://mcp.so/server/weather/mcp)](https://mcp.so/server/weather)
Listed on https://www.pulsemcp.com/servers/acme-weather and https://mcpservers.org/servers/acme/weather/mcp.
Smithery's hosted proxy: https://server.smithery.ai/@acme/weather/mcp
Read the docs at https://docs.acme.com/mcp and https://acme.readthedocs.io/en/latest/mcp/ and https://modelcontextprotocol.io/docs/mcp
Source: https://github.com/acme/weather/blob/main/src/mcp/server.ts, https://raw.githubusercontent.com/acme/weather/main/mcp/sse
Crates: https://crates.io/crates/mcp and https://docs.rs/mcp/latest/mcp/ and https://pkg.go.dev/github.com/acme/mcp
Self-host and connect to https://your-domain.com/mcp or https://<your-server>/mcp or https://{host}/sse or https://YOUR_HOST.acme.dev/mcp
Local: http://localhost:3000/mcp, http://127.0.0.1:8080/sse, https://192.168.1.20/mcp, https://10.0.0.5/mcp, https://[::1]/mcp
Examples: https://example.com/mcp, https://mcp.example.org/sse, https://api.test/mcp
Plain http: http://mcp.acme.dev/mcp
Screenshot: https://acme.dev/images/mcp.png
"""


@pytest.mark.parametrize("name", sorted(HOSTED))
def test_hosted_servers_endpoints_are_found_with_transport_and_line(name: str) -> None:
    readme, expected = HOSTED[name]
    found = discover_endpoints(readme)
    assert [(e.url, e.transport, e.line) for e in found] == expected
    for endpoint in found:
        assert {"https", "not-blocklisted", "not-placeholder"} <= set(endpoint.checks)
        assert "mcp-path" in endpoint.checks or "mcp-host" in endpoint.checks
        assert "dns" not in endpoint.checks  # offline: no resolver, no DNS check claimed


def test_a_url_in_a_client_configuration_says_so() -> None:
    (github,) = discover_endpoints(GITHUB)
    assert "client-config" not in github.checks  # first seen in prose on line 2
    (notion, _) = discover_endpoints(NOTION)
    assert "client-config" in notion.checks


def test_every_documentation_registry_catalog_badge_and_example_link_is_refused() -> None:
    assert discover_endpoints(LOCAL) == []


@pytest.mark.parametrize(("url", "why"), [
    ("https://server.smithery.ai/@acme/weather/mcp", "aggregator"),
    ("https://glama.ai/mcp/servers/abc/sse", "aggregator"),
    ("https://www.js-packages.dev/package/mcp", "registry"),
    ("https://files.py-packages.dev/packages/ab/cd/mcp/sse", "registry"),
    ("https://github.com/acme/mcp", "code host"),
    ("https://img.shields.io/badge/mcp-sse-blue", "badge"),
    ("https://acme.dev/mcp/logo.svg", "badge"),
    ("https://docs.stripe.com/mcp", "documentation"),
    ("https://acme.dev/docs/mcp", "documentation"),
    ("https://acme.dev/blog/mcp.html", "documentation"),
    ("http://mcp.acme.dev/mcp", "https"),
    ("https://localhost/mcp", "host"),
    ("https://127.0.0.1/mcp", "IP"),
    ("https://your-domain.com/mcp", "placeholder"),
    ("https://mcp.acme.dev:0/mcp", "host"),
    ("https://user:pw@mcp.acme.dev/mcp", "credentials"),
    ("https://acme.dev/api/v1/weather", "MCP URL pattern"),
    ("https://mcp.internal/mcp", "reserved"),
])
def test_refusals_say_why(url: str, why: str) -> None:
    reason = refusal(url)
    assert reason is not None and why in reason


def test_kept_urls_lose_placeholder_queries_and_fragments() -> None:
    (found,) = discover_endpoints("Connect: https://mcp.acme.dev/mcp?api_key=YOUR_API_KEY#setup\n")
    assert found.url == "https://mcp.acme.dev/mcp"
    (kept,) = discover_endpoints("Connect: https://mcp.acme.dev/mcp?profile=read-only\n")
    assert kept.url == "https://mcp.acme.dev/mcp?profile=read-only"


def test_trailing_punctuation_and_markdown_are_not_part_of_the_url() -> None:
    found = discover_endpoints("Try **https://mcp.acme.dev/mcp**. Or [here](https://mcp.other.dev/sse).\n")
    assert [e.url for e in found] == ["https://mcp.acme.dev/mcp", "https://mcp.other.dev/sse"]


def test_sse_transport_from_the_configuration_line() -> None:
    (found,) = discover_endpoints('{"acme": {"type": "sse", "url": "https://mcp.acme.dev/v1/events/mcp"}}\n')
    assert found.transport == "sse"


def test_dns_only_through_the_injected_resolver() -> None:
    asked: list[str] = []

    def resolve(host: str) -> bool:
        asked.append(host)
        return host != "mcp.gone.dev"

    found = discover_endpoints("https://mcp.acme.dev/mcp https://mcp.gone.dev/mcp https://mcp.acme.dev/sse\n", resolve)
    assert [e.url for e in found] == ["https://mcp.acme.dev/mcp", "https://mcp.acme.dev/sse"]
    assert all("dns" in e.checks for e in found)
    assert asked == ["mcp.acme.dev", "mcp.gone.dev"]  # once per host


def test_a_failing_resolver_refuses_rather_than_crashes() -> None:
    def resolve(host: str) -> bool:
        raise OSError("no network")

    assert discover_endpoints("https://mcp.acme.dev/mcp\n", resolve) == []


def test_resolves_are_capped() -> None:
    asked: list[str] = []
    readme = "\n".join(f"https://mcp.host{i}.dev/mcp" for i in range(50))
    found = discover_endpoints(readme, lambda host: asked.append(host) or True)
    assert len(asked) == MAX_RESOLVES and len(found) == MAX_RESOLVES


def test_thousands_of_urls_are_bounded() -> None:
    readme = "\n".join(f"https://mcp.host{i}.dev/mcp" for i in range(5000))
    assert len(discover_endpoints(readme)) == MAX_ENDPOINTS
    refused_first = "\n".join([f"https://github.com/a/b{i}" for i in range(MAX_CANDIDATES)] + ["https://mcp.late.dev/mcp"])
    assert discover_endpoints(refused_first) == []  # past the candidate cap nothing more is looked at


@pytest.mark.parametrize("line", [
    "https://" * 130_000,
    "https://mcp." + "a" * 1_000_000 + "/mcp",
    "x" * 1_000_000,
    "https://mcp.a.dev/" + "/mcp" * 250_000,
    "`" * 1_000_000,
    "https://mcp.acme.dev/" + "{" * 1_000_000,
])
def test_megabyte_lines_are_fast_and_safe(line: str) -> None:
    started = time.monotonic()
    discover_endpoints(line + "\nhttps://mcp.after.dev/mcp\n")
    assert time.monotonic() - started < 2


def test_empty_readme() -> None:
    assert discover_endpoints(None) == [] and discover_endpoints("") == []


def test_the_public_resolver_refuses_private_and_unresolvable_hosts():
    from pipeline.net import resolves_public

    assert not resolves_public("localhost") and not resolves_public("127.0.0.1") and not resolves_public("10.1.2.3")
    assert not resolves_public("no-such-host.invalid") and not resolves_public("a" * 300)
    assert resolves_public("8.8.8.8")  # a literal public address needs no lookup
