"""Endpoints and entry points read from the READMEs of real published MCP servers, and source inference from their code,
downloaded at test time from the package registries (the npm tarball pinned; skipped when the registry cannot be reached)."""

from __future__ import annotations

import io
import tarfile
import zipfile

import httpx
import pytest

from pipeline.analyze.endpoints import discover_endpoints
from pipeline.analyze.entry import entry_points
from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.analyze.inference import infer_protocol
from pipeline.models import LaunchSpec
from pipeline.probe.from_analysis import launch_spec
from tests.support import npm_url, pypi_url

FETCH = "pypi/mcp-server-fetch/json"  # the latest release's README (the JSON API of one version is not served everywhere)
NOTION = "@notionhq/notion-mcp-server/-/notion-mcp-server-2.5.2.tgz"
MAX_BYTES = 5_000_000


def download(url: str) -> bytes:
    try:
        with httpx.Client(timeout=20, follow_redirects=True) as client, client.stream("GET", url) as response:
            if response.status_code != 200:
                pytest.skip(f"{url}: the registry answered {response.status_code}")
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    pytest.skip(f"{url}: larger than expected")
            return body
    except httpx.HTTPError as exc:
        pytest.skip(f"the package registry cannot be reached: {exc}")


@pytest.fixture(scope="module")
def fetch_release() -> dict:
    return httpx.Response(200, content=download(pypi_url(FETCH))).json()


@pytest.fixture(scope="module")
def fetch_readme(fetch_release) -> str:
    return fetch_release["info"]["description"]


@pytest.fixture(scope="module")
def fetch_wheel(fetch_release) -> dict[str, str]:
    wheel = next(u for u in fetch_release["urls"] if u["packagetype"] == "bdist_wheel")
    url = str(httpx.URL(pypi_url(FETCH)).join(wheel["url"]))  # a mirror may give the file's URL relative to the API's
    with zipfile.ZipFile(io.BytesIO(download(url))) as archive:
        return {name: archive.read(name)[:25_000].decode() for name in archive.namelist()[:100]}


@pytest.fixture(scope="module")
def fetch_sources(fetch_wheel) -> list[SourceFile]:
    return [SourceFile(path=name, text=text, language="python") for name, text in fetch_wheel.items() if name.endswith(".py")]


@pytest.fixture(scope="module")
def notion_readme() -> str:
    with tarfile.open(fileobj=io.BytesIO(download(npm_url(NOTION))), mode="r:gz") as archive:
        member = archive.getmember("package/README.md")
        assert member.isfile() and member.size < 200_000
        return archive.extractfile(member).read().decode()


def test_the_fetch_servers_readme_says_uvx_and_names_no_endpoint(fetch_readme):
    entries = entry_points(SourceTree(fetcher="t", ref=None, readme=fetch_readme), [])
    uvx = [e for e in entries if e.registry == "pypi"]
    assert uvx and (uvx[0].package, uvx[0].command, uvx[0].args) == ("mcp-server-fetch", "uvx", ["mcp-server-fetch"])
    assert any(e.command == "docker" and e.args[-1] == "mcp/fetch" for e in entries)
    assert not any(e.package == "@modelcontextprotocol/inspector" for e in entries)  # the inspector is a client
    assert launch_spec(uvx[0]) == LaunchSpec(registry="pypi", package="mcp-server-fetch", transport="stdio")
    assert discover_endpoints(fetch_readme) == []  # GitHub, badges, VS Code install links, uv's docs: all refused


def test_the_notion_servers_readme_gives_npx_with_both_transports_and_no_endpoint(notion_readme):
    entries = entry_points(SourceTree(fetcher="t", ref=None, readme=notion_readme), [])
    npx = [e for e in entries if e.registry == "npm"]
    assert {e.package for e in npx} == {"@notionhq/notion-mcp-server"}
    assert {e.transport for e in npx} == {"stdio", "streamable-http"}
    assert launch_spec(next(e for e in npx if e.transport == "stdio")) == LaunchSpec(registry="npm", package="@notionhq/notion-mcp-server",
                                                                                       transport="stdio")
    assert all(launch_spec(e) is None for e in npx if e.transport != "stdio")
    # its links: developers.notion.com documentation (about MCP), GitHub attachments, the spec, localhost examples
    assert discover_endpoints(notion_readme) == []


def test_the_fetch_servers_source_shows_error_handling_and_validation_and_no_auth_gate(fetch_sources):
    inferred = infer_protocol(fetch_sources, None)
    handling = inferred["error_handling"]
    assert handling["signals"]["exception_handling"] and handling["signals"]["mcp_error_results"]  # try/except, McpError/ToolError
    assert handling["value"] >= 65 and all(place.startswith("mcp_server_fetch/") for place in handling["evidence"])
    assert inferred["fuzz"]["signals"]["schema_validation"]  # its pydantic argument model
    assert inferred["auth_discovery"]["value"] is None  # a stdio server that checks no caller's credentials


def test_the_fetch_servers_wheel_names_its_console_script(fetch_wheel):
    tree = SourceTree(fetcher="t", ref=None, files=list(fetch_wheel), manifest={"name": "mcp-server-fetch"}, manifest_kind="pypi-metadata",
                      read=fetch_wheel.get)
    (entry,) = entry_points(tree, [])
    assert (entry.registry, entry.package, entry.command, entry.source) == ("pypi", "mcp-server-fetch", "mcp-server-fetch", "entry_points.txt")
    assert launch_spec(entry) == LaunchSpec(registry="pypi", package="mcp-server-fetch", command="mcp-server-fetch", transport="stdio")
