"""The embedded local catalog parses whole; malformed entries are reported by position and skipped."""

from __future__ import annotations

from pipeline.discover.local import LocalCatalogSource, parse_local_catalog

REQUIRED = {
    "mcp-server-time": ("pypi", "stdio"),
    "mcp-server-fetch": ("pypi", "stdio"),
    "mcp-server-git": ("pypi", "stdio"),
    "server-everything": ("npm", "stdio"),
    "server-everything-http": ("npm", "streamable-http"),
    "server-everything-sse": ("npm", "sse"),
    "server-basic-vanillajs": ("npm", "stdio"),
    "server-memory": ("npm", "stdio"),
    "server-filesystem": ("npm", "stdio"),
}


def test_embedded_catalog_lists_the_reference_servers():
    batch = LocalCatalogSource().read()
    assert batch.problems == []
    found = {e.id: (e.launch.registry, e.transport) for e in batch.entries}
    assert found == REQUIRED
    http = next(e for e in batch.entries if e.id == "server-everything-http")
    assert http.launch.url == "http://127.0.0.1:{port}/mcp" and http.launch.env == {"PORT": "{port}"}
    assert all(e.sources == ["local"] and e.records[0].key == e.id and e.keys == [f"local:{e.id}"] for e in batch.entries)


def test_malformed_entries_are_skipped_with_their_position():
    text = """
[[server]]
id = "good"
registry = "pypi"
package = "good-pkg"
command = "good"
transport = "stdio"

[[server]]
id = "no-command"
registry = "pypi"
package = "x"
transport = "stdio"

[[server]]
id = "bad-registry"
registry = "cargo"
package = "x"
command = "x"
transport = "stdio"

[[server]]
id = "http-without-url"
registry = "npm"
package = "x"
command = "x"
transport = "streamable-http"

[[server]]
id = "good"
registry = "pypi"
package = "again"
command = "again"
transport = "stdio"

[[server]]
id = "typo"
registry = "pypi"
package = "x"
command = "x"
transport = "stdio"
argz = ["oops"]
"""
    batch = parse_local_catalog(text, where="test.toml")
    assert [e.id for e in batch.entries] == ["good"]
    assert len(batch.problems) == 5
    assert batch.problems[0].startswith("test.toml: server #2 (no-command)") and "command" in batch.problems[0]
    assert "server #3 (bad-registry)" in batch.problems[1] and "registry" in batch.problems[1]
    assert "server #4" in batch.problems[2] and "url" in batch.problems[2]
    assert "server #5: duplicate id 'good'" in batch.problems[3]
    assert "server #6" in batch.problems[4] and "argz" in batch.problems[4]


def test_broken_toml_is_one_clear_problem():
    batch = parse_local_catalog("[[server]\nid = ", where="broken.toml")
    assert batch.entries == []
    assert batch.problems and batch.problems[0].startswith("broken.toml: not valid TOML")


def test_unreadable_catalog_file(tmp_path):
    batch = LocalCatalogSource(tmp_path / "missing.toml").read()
    assert batch.entries == [] and "cannot read" in batch.problems[0]
