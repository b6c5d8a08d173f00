"""PackageArchiveFetcher: real packages of real MCP servers downloaded from npm and PyPI at test time (skipped when the
registries cannot be reached), and the registry's hostile answers (wrong hashes, foreign hosts, oversized bodies)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
from typing import Any, Callable

import httpx
import pytest

from pipeline.analyze import analyze_source
from pipeline.analyze.fetch import FetchFailed, NotModified, Unavailable
from pipeline.analyze.registries import PackageArchiveFetcher, is_prerelease, package_of
from pipeline.models import AnalysisResult, LaunchSpec, Package
from tests.support import NOW, npm_url, pypi_url, registries, server


@pytest.fixture(scope="module")
def online():
    """A client that reaches the real registries, with a count of the requests it made."""
    requests: list[str] = []
    client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0), event_hooks={"request": [lambda r: requests.append(str(r.url))]})
    try:
        client.get(pypi_url("pypi/mcp-server-time/json")).raise_for_status()
        client.get(npm_url("@modelcontextprotocol%2fserver-memory"), headers={"Accept": "application/json"}).raise_for_status()
    except httpx.HTTPError as exc:
        client.close()
        pytest.skip(f"the package registries cannot be reached from here: {exc}")
    requests.clear()
    yield client, requests
    client.close()


def configured(client: httpx.Client) -> PackageArchiveFetcher:
    """The fetcher as the CLI makes it: the registries npm and pip are configured with."""
    found = registries()
    return PackageArchiveFetcher(client, found.npm, found.pypi, found.pypi_files)


def twin_fetcher(client: httpx.Client) -> PackageArchiveFetcher:
    """The fetcher pointed at the twin's registries."""
    return PackageArchiveFetcher(client, NPM_TWIN, PYPI_TWIN, (FILES_TWIN,))


NPM_TWIN, PYPI_TWIN, FILES_TWIN = "https://npm.registry.test", "https://pypi.registry.test", "files.registry.test"


def packaged(registry: str, name: str, version: str | None = None, **fields: Any):
    return server(repository=None, launch=LaunchSpec(registry=registry, package=name, version=version, transport="stdio"), **fields)


@pytest.fixture(scope="module")
def time_tree(online):
    return configured(online[0]).fetch(packaged("pypi", "mcp-server-time"))


def test_a_pypi_sdist_is_fetched_checked_and_read(time_tree):
    tree = time_tree
    assert tree.fetcher == "pypi-archive" and tree.manifest_kind == "pypi-metadata" and "PKG-INFO" in tree.manifests
    assert any(f.endswith("mcp_server_time/server.py") for f in tree.files)  # the sdist's source tree, not just a wheel
    source = next(f for f in tree.files if f.endswith("mcp_server_time/server.py"))
    assert "def " in tree.read(source) and "mcp" in tree.dependencies and tree.readme and "Time" in tree.readme
    facts = tree.repository
    assert facts.host == "pypi" and len(facts.releases) >= 10 and facts.releases[0].tag == tree.ref
    assert facts.created_at < facts.pushed_at and facts.stars is None and all(r.notes_chars is None for r in facts.releases)


def test_the_history_feeds_maintenance_and_version_hygiene(time_tree):
    result = analyze_source(packaged("pypi", "mcp-server-time"), time_tree, NOW)
    pulse, hygiene = result.metrics["maintenance_pulse"], result.metrics["version_hygiene"]
    assert pulse["host"] == "pypi" and pulse["measured_max"] == 45 and not pulse["signals"]["stars"]["measured"]
    assert hygiene["measured_max"] == 75 and hygiene["signals"]["releases"]["points"] == 30
    assert result.repository.host == "pypi" and result.license == "MIT" and result.spec_version
    assert result.metrics["dependency_health"]["scope"] == "package" and result.metrics["dependency_health"]["signals"]["lock_file"]  # uv.lock


def test_a_pinned_pypi_version_and_not_modified(online):
    client, requests = online
    fetcher = configured(client)
    tree = fetcher.fetch(packaged("pypi", "mcp-server-time", "0.6.2"))
    assert tree.ref == "0.6.2" and any(f.endswith("server.py") for f in tree.files)
    previous = AnalysisResult(server_id="s", analyzed_at=NOW, fetcher="pypi-archive", ok=True, source_ref="0.6.2", repository=tree.repository)
    requests.clear()
    with pytest.raises(NotModified):
        fetcher.fetch(packaged("pypi", "mcp-server-time", "0.6.2"), previous)
    assert len(requests) == 1  # the project's JSON, no download


def test_an_npm_tarball_is_fetched_checked_and_read(online):
    client, requests = online
    requests.clear()
    tree = configured(client).fetch(packaged("npm", "@modelcontextprotocol/server-memory"))
    assert tree.fetcher == "npm-archive" and tree.manifest_kind == "package.json" and tree.manifest["name"] == "@modelcontextprotocol/server-memory"
    assert "package.json" in tree.files and any(f.endswith(".js") for f in tree.files) and tree.readme
    assert "@modelcontextprotocol/sdk" in tree.dependencies and tree.ref == tree.manifest["version"]
    assert tree.repository.host == "npm" and tree.repository.releases and tree.repository.pushed_at
    assert requests[0].endswith("/@modelcontextprotocol%2Fserver-memory") and requests[1].endswith(".tgz") and len(requests) == 2


def test_a_package_listed_by_discovery_is_fetched(online):
    listed = server(repository=None, launch=None, packages=[Package(registry="oci", identifier="x/y"),
                                                            Package(registry="pypi", identifier="mcp-server-time", version="0.6.2")])
    assert package_of(listed) == ("pypi", "mcp-server-time", "0.6.2")
    assert configured(online[0]).fetch(listed).ref == "0.6.2"


# ---------------------------------------------------------------- hostile registries (a client twin)


def npm_tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"package/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


TARBALL = npm_tarball({"package.json": b'{"name": "demo-mcp", "version": "1.0.0-beta.2"}', "index.js": b"console.log(1)"})


def packument(tarball_url: str, integrity: str | None = None, shasum: str | None = None) -> dict:
    dist = {"tarball": tarball_url, **({"integrity": integrity} if integrity else {}), **({"shasum": shasum} if shasum else {})}
    return {"name": "demo-mcp", "dist-tags": {"latest": "1.0.0-beta.2"},
            "versions": {"0.9.0": {"dist": dist}, "1.0.0-beta.2": {"name": "demo-mcp", "version": "1.0.0-beta.2", "dist": dist}},
            "time": {"created": "2026-01-01T00:00:00.000Z", "modified": "2026-06-02T00:00:00.000Z", "0.9.0": "2026-01-01T00:00:00.000Z",
                     "1.0.0-beta.2": "2026-06-01T00:00:00.000Z"}}


def twin(routes: dict[str, Callable[[], httpx.Response]]) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(lambda request: routes.get(str(request.url), lambda: httpx.Response(404))()))


SRI = "sha512-" + base64.b64encode(hashlib.sha512(TARBALL).digest()).decode()


def npm_fetch(document: dict, tarball: bytes = TARBALL, packument_body: bytes | None = None):
    client = twin({f"{NPM_TWIN}/demo-mcp": lambda: httpx.Response(200, content=packument_body or json.dumps(document).encode()),
                   f"{NPM_TWIN}/demo-mcp/-/demo-mcp-1.0.0-beta.2.tgz": lambda: httpx.Response(200, content=tarball)})
    return twin_fetcher(client).fetch(packaged("npm", "demo-mcp"))


URL = f"{NPM_TWIN}/demo-mcp/-/demo-mcp-1.0.0-beta.2.tgz"


def test_an_npm_tarball_matching_its_integrity_or_shasum_is_read():
    tree = npm_fetch(packument(URL, integrity=SRI))
    assert tree.ref == "1.0.0-beta.2" and tree.files == ["package.json", "index.js"]
    assert [(r.tag, r.prerelease) for r in tree.repository.releases] == [("1.0.0-beta.2", True), ("0.9.0", False)]
    assert npm_fetch(packument(URL, shasum=hashlib.sha1(TARBALL).hexdigest())).ref == "1.0.0-beta.2"


@pytest.mark.parametrize("document,message", [
    (packument(URL, integrity="sha512-" + base64.b64encode(b"0" * 64).decode()), "does not match its sha512 integrity"),
    (packument(URL, shasum="0" * 40), "does not match its shasum"),
    (packument(URL), "gives no hash"),
    (packument("https://evil.example/demo.tgz", integrity=SRI), "not a host of the registry"),
    (packument(NPM_TWIN.replace("https:", "http:") + "/demo.tgz", integrity=SRI), "not a host of the registry"),
    ({"name": "demo-mcp", "versions": {}}, "has no version"),
    ({"dist-tags": {"latest": "1.0.0-beta.2"}, "versions": {"1.0.0-beta.2": {"dist": {}}}}, "names no tarball"),
])
def test_an_npm_answer_that_does_not_add_up_is_refused(document, message):
    with pytest.raises(FetchFailed, match=message):
        npm_fetch(document)


def test_bodies_over_their_caps_are_refused():
    with pytest.raises(FetchFailed, match="over the"):
        npm_fetch({}, packument_body=b"{" + b" " * 20_000_001 + b"}")
    with pytest.raises(FetchFailed, match="not JSON"):
        npm_fetch({}, packument_body=b"<html>")


def test_a_registry_error_is_transient_and_a_404_is_not():
    client = twin({f"{PYPI_TWIN}/pypi/gone/json": lambda: httpx.Response(404),
                   f"{PYPI_TWIN}/pypi/busy/json": lambda: httpx.Response(503)})
    fetcher = twin_fetcher(client)
    with pytest.raises(FetchFailed, match="is not published") as failure:
        fetcher.fetch(packaged("pypi", "gone"))
    assert not isinstance(failure.value, Unavailable)
    with pytest.raises(Unavailable):
        fetcher.fetch(packaged("pypi", "busy"))


def pypi_project(url: str, sha256: str, packagetype: str = "sdist", filename: str = "demo-1.0.tar.gz") -> dict:
    file = {"filename": filename, "packagetype": packagetype, "url": url, "digests": {"sha256": sha256},
            "upload_time_iso_8601": "2026-05-01T10:00:00.000000Z"}
    candidate = {**file, "upload_time_iso_8601": "2026-04-01T10:00:00Z"}
    return {"info": {"name": "demo", "version": "1.0"}, "releases": {"1.0": [file], "1.0rc1": [candidate], "0.1": []}, "urls": [file]}


SDIST = npm_tarball({"PKG-INFO": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: mcp>=1.6\n\n# Demo\n"})


@pytest.mark.parametrize("url", [f"https://{FILES_TWIN}/packages/ab/cd/demo-1.0.tar.gz", "../../packages/ab/cd/demo-1.0.tar.gz"])
def test_a_pypi_sdist_absolute_or_relative_to_the_json_is_read(url):
    resolved = url if url.startswith("https") else f"{PYPI_TWIN}/packages/ab/cd/demo-1.0.tar.gz"
    client = twin({f"{PYPI_TWIN}/pypi/demo/json": lambda: httpx.Response(200, json=pypi_project(url, hashlib.sha256(SDIST).hexdigest())),
                   resolved: lambda: httpx.Response(200, content=SDIST)})
    tree = twin_fetcher(client).fetch(packaged("pypi", "demo"))
    assert tree.dependencies == {"mcp": ">=1.6"} and tree.readme.startswith("# Demo")
    assert [(r.tag, r.prerelease) for r in tree.repository.releases] == [("1.0", False), ("1.0rc1", True)]  # 0.1 has no files


@pytest.mark.parametrize("url,sha,message", [
    (f"https://{FILES_TWIN}/demo-1.0.tar.gz", "0" * 64, "sha256 does not match"),
    ("https://evil.example/demo-1.0.tar.gz", None, "not a host of the registry"),
])
def test_a_pypi_file_that_does_not_add_up_is_refused(url, sha, message):
    client = twin({f"{PYPI_TWIN}/pypi/demo/json": lambda: httpx.Response(200, json=pypi_project(url, sha or hashlib.sha256(SDIST).hexdigest())),
                   url: lambda: httpx.Response(200, content=SDIST)})
    with pytest.raises(FetchFailed, match=message):
        twin_fetcher(client).fetch(packaged("pypi", "demo"))


@pytest.mark.parametrize("registry,name,version", [
    ("npm", "../../etc/passwd", None), ("npm", "UPPER", None), ("pypi", "a b", None), ("pypi", "demo", "1.0; rm -rf /"),
    ("npm", "demo", "--registry=evil"),
])
def test_names_and_versions_are_checked_before_any_request(registry, name, version):
    client = twin({})
    with pytest.raises(FetchFailed, match="is not"):
        twin_fetcher(client).fetch(packaged(registry, name, version))


@pytest.mark.parametrize("registry,version,expected", [
    ("npm", "1.0.0", False), ("npm", "1.0.0-beta.1", True), ("npm", "2026.8.31", False),
    ("pypi", "1.0", False), ("pypi", "1.0rc1", True), ("pypi", "2.0.0a3", True), ("pypi", "1.0.dev4", True), ("pypi", "1.0.post1", False),
    ("pypi", "2026.10.19", False),
])
def test_prereleases(registry, version, expected):
    assert is_prerelease(registry, version) is expected


def test_the_registries_come_from_npm_and_pip_configuration(tmp_path):
    from pipeline.sandbox.installenv import package_registries

    environ = {"PATH": "", "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull,
               "PIP_INDEX_URL": "https://pypi.registry.test/simple/", "npm_config_registry": "https://npm.registry.test/"}
    found = package_registries(environ)
    assert (found.npm, found.pypi, found.pypi_files) == ("https://npm.registry.test/", "https://pypi.registry.test", ())
    (tmp_path / ".npmrc").write_text("registry=https://npm.other.test/\n")
    unset = package_registries({"PATH": "", "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "file:///srv/simple"})
    assert unset.npm == "https://npm.other.test/" and unset.pypi is None  # a local directory index has no JSON API
