"""Tool extraction on real published packages of real MCP servers, downloaded at test time from npm and PyPI, compared
with the tools those servers list at runtime (listed by an MCP client against the same versions, installed)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin

import httpx
import pytest

from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.extract import extract_tools
from pipeline.analyze.select import select_files
from pipeline.analyze.spec import spec_version
from tests.support import npm_url, pypi_url

MAX_ARCHIVE = 5_000_000
# (registry, package, version) -> the tools the server lists at runtime to a client without roots, sampling or elicitation
RUNTIME = {
    ("npm", "@modelcontextprotocol/server-memory", "2026.8.31"): {
        "add_observations", "create_entities", "create_relations", "delete_entities", "delete_observations", "delete_relations", "open_nodes",
        "read_graph", "search_nodes"},
    ("npm", "@modelcontextprotocol/server-filesystem", "2026.8.31"): {
        "create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories", "list_directory",
        "list_directory_with_sizes", "move_file", "read_file", "read_media_file", "read_multiple_files", "read_text_file", "search_files",
        "write_file"},
    ("npm", "@modelcontextprotocol/server-everything", "2026.8.31"): {
        "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-structured-content", "get-sum",
        "get-tiny-image", "gzip-file-as-resource", "simulate-research-query", "toggle-simulated-logging", "toggle-subscriber-updates",
        "trigger-long-running-operation"},
    ("pypi", "mcp-server-time", "2026.10.19"): {"convert_time", "get_current_time"},
    ("pypi", "mcp-server-fetch", "2026.10.24"): {"fetch"},
    ("pypi", "mcp-server-git", "2026.10.19"): {
        "git_add", "git_branch", "git_checkout", "git_commit", "git_create_branch", "git_diff", "git_diff_staged", "git_diff_unstaged",
        "git_log", "git_reset", "git_show", "git_status"},
}
# server-everything registers these only once the client offers roots, sampling or elicitation: real definitions, absent here
CONDITIONAL = {"get-roots-list", "trigger-elicitation-request", "trigger-elicitation-request-async", "trigger-sampling-request",
               "trigger-sampling-request-async", "trigger-url-elicitation"}


def archive_url(client: httpx.Client, registry: str, package: str, version: str) -> str:
    if registry == "npm":
        return client.get(npm_url(f"{package}/{version}")).raise_for_status().json()["dist"]["tarball"]
    meta_url = pypi_url(f"pypi/{package}/json")
    files = client.get(meta_url).raise_for_status().json()["releases"][version]
    return urljoin(meta_url, next(f["url"] for f in files if f["packagetype"] == "sdist"))


def unpack(data: bytes, root: Path) -> Path:
    """Regular files only, first path component dropped, nothing outside root."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers()[:2000]:
            parts = PurePosixPath(member.name).parts[1:]
            if not member.isfile() or not parts or ".." in parts or member.size > 2_000_000:
                continue
            target = root.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.extractfile(member).read())
    return root


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[tuple[str, str, str], Path]:
    roots = {}
    try:
        with httpx.Client(timeout=20, follow_redirects=True) as client:
            for key in RUNTIME:
                response = client.get(archive_url(client, *key)).raise_for_status()
                if len(response.content) > MAX_ARCHIVE:
                    pytest.fail(f"{key[1]}: archive larger than expected")
                roots[key] = unpack(response.content, tmp_path_factory.mktemp(key[1].replace("/", "_")))
    except httpx.TransportError as exc:
        pytest.skip(f"the package registries cannot be reached: {exc}")
    return roots


def extracted(root: Path) -> tuple[set[str], list]:
    tree = LocalDirectoryFetcher(root).fetch()
    files = select_files(tree)
    return {t.name for t in extract_tools(files) or []}, files


@pytest.mark.parametrize("key", [k for k in RUNTIME if k[1] != "@modelcontextprotocol/server-everything" and k[1] != "mcp-server-git"],
                         ids=lambda k: k[1])
def test_every_runtime_tool_and_nothing_else(packages, key):
    names, _ = extracted(packages[key])
    assert names == RUNTIME[key]


def test_server_everything_conditional_tools_are_found_too(packages):
    key = ("npm", "@modelcontextprotocol/server-everything", "2026.8.31")
    names, files = extracted(packages[key])
    assert names == RUNTIME[key] | CONDITIONAL
    assert all(f.path.startswith("dist/") and "__tests__" not in f.path for f in files)  # the package ships only compiled output


def test_server_git_beyond_the_seed_budget(packages):
    """server.py is 27 KB: the seed reads 25 KB per file, so the tools defined past the cut are not seen (and none invented)."""
    key = ("pypi", "mcp-server-git", "2026.10.19")
    names, files = extracted(packages[key])
    assert names < RUNTIME[key] and len(names) >= 10
    assert spec_version(LocalDirectoryFetcher(packages[key]).fetch(), files)["value"] == "2026-07-28"
