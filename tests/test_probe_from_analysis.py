"""A server discovery gave no way to reach gets one from its latest analysis: an entry point naming an npm or PyPI package
is installed and started in the sandbox like any package (and says where it came from); a discovered endpoint is probed
as a remote under the same policy."""

from __future__ import annotations

import pytest

from pipeline import store
from pipeline.config import Settings
from pipeline.discover import run_discover
from pipeline.models import AnalysisResult, DiscoveredEndpoint, EntryPoint, LaunchSpec
from pipeline.probe import run_probe
from pipeline.probe.from_analysis import launch_spec, with_analysis
from pipeline.sandbox.choice import available
from pipeline.sandbox.install import Installer
from pipeline.sandbox.installenv import Registries
from tests.registries import PypiIndex
from tests.support import NOW, TEST_SERVERS, ListSource, entry, quiet, server


def analysed(entries=(), endpoints=(), ok=True) -> AnalysisResult:
    return AnalysisResult(server_id="s", analyzed_at=NOW, fetcher="local-directory", ok=ok, entry_points=list(entries),
                          endpoints=list(endpoints))


@pytest.mark.parametrize(("entry_point", "expected"), [
    (EntryPoint(registry="npm", package="@acme/weather-mcp", command="npx", args=["-y", "@acme/weather-mcp@1.4", "/Users/me"], source="README npx"),
     LaunchSpec(registry="npm", package="@acme/weather-mcp", transport="stdio")),
    (EntryPoint(registry="pypi", package="acme-tools", command="uvx", args=["--from", "acme-tools", "acme-serve"], source="README uvx"),
     LaunchSpec(registry="pypi", package="acme-tools", command="acme-serve", transport="stdio")),
    (EntryPoint(registry="pypi", package="mcp-server-acme", command="mcp-server-acme", source="pyproject scripts"),
     LaunchSpec(registry="pypi", package="mcp-server-acme", command="mcp-server-acme", transport="stdio")),
    (EntryPoint(registry="npm", package="acme-mcp", command="acme-mcp", source="package.json bin"),
     LaunchSpec(registry="npm", package="acme-mcp", command="acme-mcp", transport="stdio")),
])
def test_entry_points_naming_a_package_become_launches_that_start_the_entry_point_alone(entry_point, expected):
    assert launch_spec(entry_point) == expected


@pytest.mark.parametrize("entry_point", [
    EntryPoint(command="docker", args=["run", "-i", "mcp/acme"], source="README docker run"),
    EntryPoint(registry="npm", package="acme-mcp", command="node", args=["build/index.js"], source="package.json main"),
    EntryPoint(registry="npm", package="acme-mcp", command="npx", args=["-y", "acme-mcp", "--port", "3000"], transport="streamable-http",
               source="README npx"),
    EntryPoint(registry="pypi", package="../../etc", command="evil", source="README pip install"),
    EntryPoint(package="github.com/acme/mcp/cmd/acme", command="acme", source="go.mod cmd/"),
])
def test_other_entry_points_are_not_started(entry_point):
    assert launch_spec(entry_point) is None


def test_a_server_discovery_knew_a_way_to_reach_is_left_alone():
    known = server()
    assert with_analysis(known, analysed([EntryPoint(registry="npm", package="other", command="other", source="package.json bin")])) == (known, None)
    bare = server(launch=None)
    assert with_analysis(bare, None) == (bare, None)
    assert with_analysis(bare, analysed([EntryPoint(registry="npm", package="x", command="x", source="s")], ok=False)) == (bare, None)


def test_an_entry_point_comes_before_an_endpoint():
    bare = server(launch=None)
    both = analysed([EntryPoint(registry="pypi", package="acme", command="acme", source="pyproject scripts")],
                    [DiscoveredEndpoint(url="https://mcp.acme.dev/sse", transport="sse", line=4)])
    started, origin = with_analysis(bare, both)
    assert started.launch == LaunchSpec(registry="pypi", package="acme", command="acme", transport="stdio")
    assert origin == "analysis entry point: pyproject scripts"
    remote, origin = with_analysis(bare, analysed([], [DiscoveredEndpoint(url="https://mcp.acme.dev/sse", transport="sse", line=4)]))
    assert (remote.remote_url, remote.transport, remote.launch) == ("https://mcp.acme.dev/sse", "sse", None)
    assert origin == "analysis endpoint: README line 4"


def test_an_endpoint_from_analysis_meets_the_remote_policy(db, tmp_path):
    """A stored analysis is data too: a private endpoint in it is refused like any catalog URL, never dialled."""
    run_discover(db, sources=[ListSource("test", [entry("bare", repository="https://github.com/acme/bare")])], now=NOW, progress=quiet(1))
    store.record_analysis(db, analysed([], [DiscoveredEndpoint(url="https://10.0.0.5/mcp", line=1)]).model_copy(update={"server_id": "bare"}))
    report = run_probe(db, servers=store.active_servers(db), installer=Installer(tmp_path / "cache"), settings=Settings(), now=NOW,
                       progress=quiet(1))
    assert report.counts["not_probeable"] == 1 and report.counts["from_analysis"] == 1
    assert store.latest_probe(db, "bare") is None


SANDBOX = available()["bubblewrap"]
MAIN = "def main():\n    import raw_stdio_mcp.server  # noqa: F401 - the server runs as it is imported\n"


@pytest.mark.skipif(isinstance(SANDBOX, str), reason=f"no bubblewrap sandbox here: {SANDBOX}")
def test_an_analysis_entry_point_is_installed_and_started_in_the_sandbox(db, tmp_path):
    source_only = entry("source-only", repository="https://github.com/acme/source-only")
    run_discover(db, sources=[ListSource("test", [source_only])], now=NOW, progress=quiet(1))
    assert store.active_servers(db)[0].launch is None  # discovery knew no way to start it
    store.record_analysis(db, analysed([
        EntryPoint(command="docker", args=["run", "-i", "acme/raw"], source="README docker run"),
        EntryPoint(registry="pypi", package="raw-stdio-mcp", command="raw-stdio-mcp", source="pyproject scripts"),
    ]).model_copy(update={"server_id": "source-only"}))
    with PypiIndex() as index:
        index.add_wheel("raw-stdio-mcp", "1.0", {"raw_stdio_mcp/__init__.py": MAIN,
                                                "raw_stdio_mcp/server.py": (TEST_SERVERS / "raw_stdio.py").read_text()},
                        scripts={"raw-stdio-mcp": "raw_stdio_mcp:main"})
        installer = Installer(tmp_path / "cache", 120, registries=Registries(pypi_index=index.url + "/simple/"))
        settings = Settings(sandbox="bubblewrap", cache_dir=tmp_path / "cache", probe_timeout=20.0, start_timeout=20.0)
        report = run_probe(db, servers=store.active_servers(db), installer=installer, settings=settings, now=NOW, progress=quiet(1))
    _, result = store.latest_probe(db, "source-only")
    assert report.counts["from_analysis"] == 1
    assert result.outcome.value == "ok", (result.outcome, result.detail, result.stderr_tail)
    assert result.kind == "sandbox" and result.sandbox and result.package_version == "1.0"
    assert result.started_from == "analysis entry point: pyproject scripts"
    assert [t["name"] for t in result.tools] == ["get_thing"]
