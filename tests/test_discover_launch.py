"""Launches of discovered servers: server.json package entries read as argv, refusals recorded, and real snapshots counted."""

from __future__ import annotations

import collections
import copy

import pytest

from pipeline.discover import snapshot_sources
from pipeline.discover.launch import MAX_CHARS, Refused, first_launch, registry_launch, simple_launch
from pipeline.discover.merge import merge_listings
from pipeline.discover.registry import parse_registry
from pipeline.models import Listing, Package, Remote

from .support import SOURCE_FIXTURES

BRAVE = {  # the shape of a real registry entry (server.json 2025-12-11)
    "registryType": "npm", "registryBaseUrl": "https://npm-registry.invalid", "identifier": "@brave/brave-search-mcp-server", "version": "2.0.58",
    "transport": {"type": "stdio"},
    "environmentVariables": [{"name": "BRAVE_API_KEY", "description": "Your API key", "isRequired": True, "isSecret": True, "format": "string"}],
}


def entry(**fields):
    return {**copy.deepcopy(BRAVE), **fields}


def test_a_plain_stdio_entry_is_its_own_entry_point():
    launch = registry_launch(BRAVE)
    assert (launch.registry, launch.package, launch.version, launch.command, launch.args, launch.env, launch.transport) == (
        "npm", "@brave/brave-search-mcp-server", "2.0.58", None, [], {}, "stdio")
    assert launch.requirement == "@brave/brave-search-mcp-server@2.0.58"


@pytest.mark.parametrize("arguments, expected", [
    ([{"type": "positional", "value": "stdio"}], ["stdio"]),
    ([{"type": "named", "name": "--mode", "value": "static", "isRequired": True}], ["--mode", "static"]),
    ([{"type": "named", "name": "--level=", "value": "info"}], ["--level=info"]),
    ([{"type": "named", "name": "--log", "default": "WARNING"}], ["--log", "WARNING"]),
    ([{"type": "named", "name": "--debug", "format": "boolean"}], []),  # optional, no value: left out
    ([{"type": "named", "name": "--read-only", "format": "boolean", "default": "true"}], ["--read-only"]),  # a flag, present
    ([{"type": "named", "name": "--verbose", "format": "boolean", "default": "false"}], []),
    ([{"type": "positional", "valueHint": "config_path", "format": "filepath"}], []),
    ([{"type": "positional", "valueHint": "allowed_dir", "format": "filepath", "isRequired": True}], ["{workdir}"]),
    ([{"type": "named", "name": "--api-key", "isRequired": True, "isSecret": True}], ["--api-key", "mock-"]),
    ([{"type": "named", "name": "--service-config-file", "isRequired": True}], ["--service-config-file", "{workdir}/service_config_file"]),
    ([{"type": "named", "name": "--log_level", "value": "{log_level}", "default": "WARNING"}], ["--log_level", "WARNING"]),  # unfilled: default
    ([{"type": "named", "name": "--token", "value": "<YOUR_TOKEN>"}], []),  # a placeholder is no value
    ([{"type": "named", "name": "-e", "value": "ID={client_id}", "variables": {"client_id": {"default": "abc"}}}], ["-e", "ID=abc"]),
    ([{"type": "positional", "value": "; rm -rf ~"}], ["; rm -rf ~"]),  # argv, never a shell: kept as one item
])
def test_package_arguments(arguments, expected):
    args = registry_launch(entry(packageArguments=arguments)).args
    assert len(args) == len(expected) and all(a.startswith(e) for a, e in zip(args, expected)), args


@pytest.mark.parametrize("hint, runtime, command, args", [
    ("npx", [{"type": "positional", "value": "-y"}], None, []),
    ("npx", [{"type": "named", "name": "-y", "value": "@brave/brave-search-mcp-server@latest", "isRequired": True}], None, []),
    ("npx", [{"type": "positional", "value": "--yes"}, {"type": "positional", "value": "@brave/brave-search-mcp-server@2.0.58"},
             {"type": "positional", "value": "serve"}], None, ["serve"]),
    ("uvx", [{"type": "named", "name": "--from", "value": "brave-mcp"}, {"type": "positional", "value": "mcp-server"}], "mcp-server", []),
    ("uvx", [{"type": "named", "name": "--transport", "value": "stdio"}], None, ["--transport", "stdio"]),
    ("python", [{"type": "positional", "value": "-m"}, {"type": "positional", "value": "brave_mcp.server"}], "python", ["-m", "brave_mcp.server"]),
    (None, [{"value": "-m", "type": ""}, {"value": "memphora_mcp.server", "type": ""}], "python", ["-m", "memphora_mcp.server"]),
    ("docker", [{"type": "named", "name": "--rm", "value": "true"}], None, []),  # another runtime's options are not the server's
    ("node", [{"type": "named", "name": "--max-old-space-size", "value": "4096"}], None, []),
])
def test_runtime_arguments_are_read_for_the_entry_point_we_start(hint, runtime, command, args):
    launch = registry_launch(entry(runtimeHint=hint, runtimeArguments=runtime))
    assert (launch.command, launch.args) == (command, args)


def test_http_transports_carry_our_port():
    env_port = registry_launch(entry(transport={"type": "streamable-http", "url": "http://localhost:{PORT}/mcp"},
                                     environmentVariables=[{"name": "PORT", "default": "3000"}]))
    assert (env_port.transport, env_port.url, env_port.env) == ("streamable-http", "http://localhost:{port}/mcp", {"PORT": "{port}"})
    arg_port = registry_launch(entry(transport={"type": "sse", "url": "http://{host}:{port}/sse"},
                                     packageArguments=[{"type": "named", "name": "--port", "default": "8000", "valueHint": "port"}]))
    assert (arg_port.url, arg_port.args) == ("http://127.0.0.1:{port}/sse", ["--port", "{port}"])
    fixed = registry_launch(entry(transport={"type": "streamable-http", "url": "http://0.0.0.0:8000/mcp/"}))
    assert (fixed.url, fixed.args) == ("http://127.0.0.1:8000/mcp/", [])


@pytest.mark.parametrize("change, reason", [
    ({"identifier": "owner/repo"}, "not an npm package name"),
    ({"identifier": "https://example.com/x.tgz"}, "not an npm package name"),
    ({"version": "1.0.0 && curl evil"}, "not a plain version"),
    ({"transport": {"type": "streamable-http", "url": "https://api.example.com/mcp"}}, "not plain http"),
    ({"transport": {"type": "streamable-http", "url": "http://example.com:8080/mcp"}}, "not on loopback"),
    ({"transport": {"type": "streamable-http", "url": "http://127.0.0.1:{port}/mcp"}}, "set by no argument"),
    ({"transport": {"type": "streamable-http"}}, "without a URL"),
    ({"transport": {"type": "websocket"}}, "unknown type"),
    ({"packageArguments": [{"type": "positional", "value": "a\x00b"}]}, "control character"),
    ({"packageArguments": [{"type": "positional", "value": "line\nbreak"}]}, "control character"),
    ({"packageArguments": [{"type": "positional", "value": "x" * (MAX_CHARS + 1)}]}, "characters; at most"),
    ({"packageArguments": [{"type": "positional", "value": "x"}] * 65}, "at most 64"),
    ({"packageArguments": [{"type": "named", "name": "--directory <path>", "value": "x"}]}, "not a flag name"),
    ({"environmentVariables": [{"name": "TOKEN", "value": "v\x00"}]}, "control character"),
])
def test_absurd_entries_are_refused_with_a_reason(change, reason):
    with pytest.raises(Refused, match=reason):
        registry_launch(entry(**change))


def test_reserved_and_odd_environment_names_are_never_set():
    launch = registry_launch(entry(environmentVariables=[{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}, {"name": "PATH", "value": "/x"},
                                                         {"name": "lower", "value": "v"}, {"name": "MODE", "value": "readonly"}]))
    assert launch.env == {"MODE": "readonly"}


def test_the_first_startable_package_wins_and_refusals_are_kept():
    launch, refused = first_launch([{"registryType": "oci", "identifier": "docker.io/x/y"}, entry(identifier="bad/name"), entry(), "junk"])
    assert launch.package == "@brave/brave-search-mcp-server" and "package 1: identifier 'bad/name'" in refused
    assert first_launch([{"registryType": "nuget", "identifier": "X"}]) == (None, None)
    assert simple_launch("pypi", "mcp-server-time", "latest").version is None and simple_launch("cargo", "x") is None


def test_the_registry_adapter_records_launches_and_refusals():
    page = {"servers": [
        {"server": {"name": "io.github.a/ok", "packages": [BRAVE]}},
        {"server": {"name": "io.github.a/refused", "packages": [entry(packageArguments=[{"type": "positional", "value": "\x00"}])]}},
    ]}
    listings = {listing.key: listing for listing in parse_registry(page).listings}
    assert listings["io.github.a/ok"].launch.package == "@brave/brave-search-mcp-server"
    variable = listings["io.github.a/ok"].env_vars[0]
    assert (variable.name, variable.required, variable.secret, variable.format) == ("BRAVE_API_KEY", True, True, "string")
    assert listings["io.github.a/refused"].launch is None and "control character" in listings["io.github.a/refused"].attributes["launch_refused"]


def test_merging_prefers_a_public_endpoint_and_takes_other_sources_packages():
    hosted = Listing(source="official-registry", key="io.github.o/r", name="r", repository="https://github.com/o/r",
                     remotes=[Remote(transport="streamable-http", url="https://mcp.acme.dev/mcp")],
                     packages=[Package(registry="npm", identifier="r")], launch=simple_launch("npm", "r"))
    local_remote = Listing(source="official-registry", key="io.github.o/s", name="s", repository="https://github.com/o/s",
                           remotes=[Remote(transport="sse", url="http://localhost:3000/sse")], launch=simple_launch("npm", "s"))
    pulse = Listing(source="pulsemcp", key="t", name="t", repository="https://github.com/o/t",
                    packages=[Package(registry="pypi", identifier="t-mcp")])
    entries = {e.name: e for e in merge_listings([hosted, local_remote, pulse])}
    assert entries["r"].launch is None and entries["r"].transport == "streamable-http"  # measured at its endpoint
    assert entries["s"].launch.package == "s" and entries["s"].transport == "stdio" and entries["s"].provenance["launch"] == "official-registry"
    assert entries["t"].launch.registry == "pypi" and entries["t"].launch.package == "t-mcp" and entries["t"].launch.command is None


@pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES} (shared fixtures)")
def test_discovered_servers_with_a_package_get_a_launch():
    listings = [listing for source in snapshot_sources(SOURCE_FIXTURES) for listing in source.read().listings]
    entries = merge_listings(listings)
    launched = [e for e in entries if e.launch]
    by = collections.Counter((e.launch.registry, e.launch.transport) for e in launched)
    packaged = [e for e in entries if any(p.registry in ("npm", "pypi") for p in e.packages)]
    # Measured on the snapshots of 2025-12 .. 2026-07: 588 of the 630 servers with an npm or PyPI package get a launch
    # (npm 383 stdio + 4 HTTP, PyPI 198 stdio + 3 HTTP); 38 others are measured at their public endpoint, 14 are refused.
    assert len(launched) >= 570 and by["npm", "stdio"] >= 370 and by["pypi", "stdio"] >= 190
    assert by["npm", "streamable-http"] + by["npm", "sse"] + by["pypi", "streamable-http"] >= 6
    unlaunched = [e for e in packaged if not e.launch]
    assert all(e.remote_url or e.attributes.get("launch_refused") or not e.packages for e in unlaunched)
    assert sum(1 for e in unlaunched if e.attributes.get("launch_refused")) <= 20
    assert all("\x00" not in a and len(a) <= MAX_CHARS for e in launched for a in e.launch.args)
