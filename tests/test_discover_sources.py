"""Every real source snapshot parses whole; documented examples parse; bad input is named and skipped."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from pipeline.discover import awesome, bestof, docker_catalog, downloads, github_topics, glama, pulsemcp, registry, smithery
from tests.support import SOURCE_FIXTURES, glama_item

pytestmark = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES} (shared fixtures)")


def load(*parts, encoding="utf-8"):
    return json.loads(SOURCE_FIXTURES.joinpath(*parts).read_text(encoding=encoding))


def test_registry_dump_lists_the_latest_version_of_every_name():
    items = load("official-registry", "servers_dump_2025-12-18.json", encoding="utf-8-sig")
    batch = registry.parse_registry(items, "dump")
    names = {item["server"]["name"] for item in items}
    assert len(items) == 2794 and len(names) == 1108
    assert not batch.problems and len(batch.listings) == len(names)
    latest = {i["server"]["name"]: i["server"]["version"] for i in items if i["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"]}
    assert {listing.key: listing.attributes["version"] for listing in batch.listings} == latest
    assert sum(1 for listing in batch.listings if not listing.repository) == 258  # mostly remote-only (fixtures README)
    assert sum(1 for listing in batch.listings if listing.subfolder) == 58
    with_headers = [listing for listing in batch.listings if any(r.auth_headers for r in listing.remotes)]
    assert with_headers and all(any(v.name in r.auth_headers for r in listing.remotes for v in listing.env_vars) for listing in with_headers)
    smithery_hosted = [listing for listing in batch.listings if listing.key.startswith("ai.smithery/")]
    assert len(smithery_hosted) == 211
    assert all(r.url.startswith("https://server.smithery.ai/") for listing in smithery_hosted for r in listing.remotes)


def test_registry_legacy_and_current_seeds_parse():
    legacy = registry.parse_registry(load("official-registry", "seed_2025_05_16_legacy.json"), "legacy")
    assert legacy.records_read == 471 and len(legacy.listings) == 464
    assert len(legacy.problems) == 7 and all(re.match(r"legacy: item \d+: name is empty", p) for p in legacy.problems)
    magic = next(listing for listing in legacy.listings if listing.key == "io.github.21st-dev/magic-mcp")
    assert magic.packages[0].registry == "npm" and magic.packages[0].identifier == "@21st-dev/magic"
    assert [v.name for v in magic.env_vars] == ["API_KEY"] and magic.env_vars[0].secret  # named like a key
    current = registry.parse_registry(load("official-registry", "seed_2026-01.json"), "seed")
    assert not current.problems and {p.registry for listing in current.listings for p in listing.packages} >= {"npm", "oci"}


def awesome_bullets() -> int:
    """An independent count: bullets with a link between `## Server Implementations` and the next `##`."""
    text = SOURCE_FIXTURES.joinpath("awesome-mcp-servers", "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Server Implementations", 1)[1].split("\n## ", 1)[0]
    return sum(1 for line in section.splitlines() if re.match(r"^\s*[-*]\s+\[[^\]]+\]\((?!#)", line))


def test_awesome_readme_parses_every_bullet_with_its_category_and_badges():
    batch = awesome.read_snapshot(SOURCE_FIXTURES / "awesome-mcp-servers")
    assert not batch.problems and len(batch.listings) == awesome_bullets() == 2172
    first = batch.listings[0]
    assert first.name == "1mcp/agent" and first.repository == "https://github.com/1mcp-app/agent" and first.categories == ["Aggregators"]
    assert first.attributes == {"awesome_language": ["TypeScript"], "awesome_scope": ["cloud", "local"], "awesome_os": ["macOS", "Windows", "Linux"]}
    assert first.description.startswith("A unified Model Context Protocol server")
    assert len({c for listing in batch.listings for c in listing.categories}) >= 45
    glama_linked = [listing for listing in batch.listings if "glama" in listing.external_links]
    assert glama_linked and all(listing.external_links["glama"].startswith("https://glama.ai/mcp/servers/") for listing in glama_linked)
    assert not any("glama.ai" in (listing.description or "") for listing in glama_linked)  # the badge is not the description
    gitlab = next(listing for listing in batch.listings if listing.repository and "gitlab.com/elementfm" in listing.repository)
    assert gitlab.attributes["awesome_official"] is True
    docs_only = [listing for listing in batch.listings if listing.repository is None]
    assert docs_only and all(listing.homepage for listing in docs_only)  # a docs link is a homepage, not a repository


def test_best_of_projects_with_metrics_and_renames():
    batch = bestof.read_snapshot(SOURCE_FIXTURES / "best-of-mcp-servers")
    assert not batch.problems and len(batch.listings) == 405
    assert batch.aliases["github:mindsdb/mindsdb"] == "github:mindsdb/minds"
    assert batch.aliases["github:supabase-community/supabase-mcp"] == "github:supabase/mcp"
    assert len(batch.aliases) == 14  # the fixtures README: 14 projects carry updated_github_id
    netdata = next(listing for listing in batch.listings if listing.key == "netdata/netdata")
    assert netdata.metrics["github_stars"] == 79442.0 and netdata.metrics["contributors"] == 684.0  # floats in the CSV
    assert netdata.categories == ["Monitoring"]  # the title projects.yaml gives the category id `monitoring`
    assert sum(1 for listing in batch.listings if listing.attributes.get("bestof_hidden")) == 37


def test_best_of_old_csv_with_other_columns_still_reads():
    text = SOURCE_FIXTURES.joinpath("best-of-mcp-servers", "history", "2025-08-04_projects.csv").read_text(encoding="utf-8")
    rows, _, problems = bestof.parse_history(text, "2025-08-04_projects.csv")
    assert not problems and len(rows) == 335  # the `labels` column of 2025 is simply not read


def test_docker_catalog_images_remotes_tools_and_secrets():
    batch = docker_catalog.read_snapshot(SOURCE_FIXTURES / "docker-mcp-catalog")
    assert not batch.problems and len(batch.listings) == 328
    assert sum(1 for listing in batch.listings if listing.remotes) == 76
    assert sum(1 for listing in batch.listings if "docker_tool_count" in listing.attributes) == 82
    airtable = next(listing for listing in batch.listings if listing.key == "airtable-mcp-server")
    assert airtable.repository == "https://github.com/domdomegg/airtable-mcp-server" and airtable.packages[0].identifier == "mcp/airtable-mcp-server"
    assert [(v.name, v.secret) for v in airtable.env_vars] == [("AIRTABLE_API_KEY", True), ("NODE_ENV", False)]
    assert airtable.external_links == {"docker_hub": "https://hub.docker.com/r/mcp/airtable-mcp-server"}
    everart = next(listing for listing in batch.listings if listing.key == "everart")  # no `directory`: the Dockerfile's folder
    assert (everart.repository, everart.subfolder) == ("https://github.com/modelcontextprotocol/servers", "src/everart")
    hub = docker_catalog.parse_hub(load("docker-mcp-catalog", "DOCUMENTED_dockerhub_repository_example.json"))
    assert hub == {"loudml/community": 28844.0}


def test_smithery_dump_with_guessed_repositories():
    batch = smithery.read_snapshot(SOURCE_FIXTURES / "smithery")
    assert not batch.problems and len(batch.listings) == 5186
    toolbox = batch.listings[0]
    assert toolbox.key == "smithery/toolbox" and toolbox.metrics == {"smithery_uses": 13648.0}
    assert toolbox.weak_repository == "https://github.com/smithery/toolbox" and toolbox.repository is None
    assert toolbox.external_links == {"smithery": "https://smithery.ai/server/@smithery/toolbox"}
    assert sum(1 for listing in batch.listings if listing.weak_repository is None) == 277  # names without a `/` (neon, exa)


def test_documented_examples_parse_with_the_same_parsers():
    camel = load("pulsemcp", "DOCUMENTED_v0beta_servers_captured_by_camel-ai.json")
    first = pulsemcp.parse_pulsemcp(camel["example_1_query_github"], "camel")
    assert not first.problems and len(first.listings) == 4
    reference = first.listings[0]
    assert reference.repository.endswith("/tree/HEAD/src/github") and reference.packages[0].identifier == "@modelcontextprotocol/server-github"
    assert reference.external_links == {"pulsemcp": "https://www.pulsemcp.com/servers/modelcontextprotocol-github"}
    assert reference.metrics == {"github_stars": 41847.0, "package_downloads": 710829.0}
    search = github_topics.parse_search(load("github-topics", "DOCUMENTED_search_repositories_example.json"))
    assert [listing.key for listing in search.listings] == ["dtrupenn/tetris"] and search.listings[0].metrics["github_stars"] == 1.0
    npm = load("npm-pypi-downloads", "DOCUMENTED_npm_download_counts_examples.json")
    assert downloads.parse_npm(npm["point_GET_downloads_point_period_package"]) == {"jquery": 31623.0}
    assert downloads.parse_npm(npm["range_GET_downloads_range_period_package"]) == {"somepackage": 1904088.0 + 7904294.0}
    pypi = load("npm-pypi-downloads", "DOCUMENTED_pypistats_examples.json")
    assert downloads.parse_pypistats(pypi["recent"]) == {"pip": 15706750.0}
    assert downloads.parse_pypistats(pypi["overall"]) == {}  # not a weekly figure


def test_glama_items_in_the_documented_shape():
    spec = load("glama", "DOCUMENTED_glama-mcp-api.openapi.json")
    required = set(spec["components"]["schemas"]["McpServer"]["required"])
    assert required <= set(glama_item(1))  # the test item carries every field the spec requires
    batch = glama.parse_glama({"servers": [glama_item(1), glama_item(2, repository=None, spdxLicense=None)], "pageInfo": {"hasNextPage": False}})
    assert not batch.problems and len(batch.listings) == 2
    one = batch.listings[0]
    assert one.key == "owner1/server-1" and one.attributes["license"] == "MIT" and one.attributes["glama_official"] is True
    assert [(v.name, v.secret) for v in one.env_vars] == [("API_TOKEN", True), ("REGION", False)]
    assert batch.listings[1].repository is None


def test_malformed_records_are_named_skipped_and_counted():
    items = [
        {"server": {"name": "io.example/ok", "description": "fine"}, "_meta": {}},
        {"server": {"name": 7}},  # wrong type
        "not an object",
        {"server": {"name": "io.example/bad-remote", "remotes": [{"type": "sse", "url": "https://x.example/sse", "headers": "oops"}]}},
        {"server": {"name": "io.example/gone"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "deleted", "isLatest": True}}},
    ]
    batch = registry.parse_registry(items, "page 3")
    assert [listing.key for listing in batch.listings] == ["io.example/bad-remote", "io.example/ok"]  # bad headers are ignored, not fatal
    assert batch.problems == ["page 3: item 1: name is empty or not a string", "page 3: item 2: item is str, expected an object"]
    assert registry.parse_registry({"unexpected": True}, "page 9").complete is False


def test_a_truncated_or_broken_snapshot_file_is_reported_and_the_rest_read(tmp_path):
    shutil.copytree(SOURCE_FIXTURES / "official-registry", tmp_path / "official-registry", copy_function=shutil.copyfile)
    (tmp_path / "official-registry").chmod(0o755)  # the shared fixtures are read-only; the copy must not be
    shutil.copyfile(SOURCE_FIXTURES / "official-registry" / "seed_2026-01.json", tmp_path / "official-registry" / "truncated.json")
    broken = tmp_path / "official-registry" / "truncated.json"
    broken.write_text(broken.read_text()[:700])
    batch = registry.read_snapshot(tmp_path / "official-registry")
    assert any(p.startswith("truncated.json: unreadable:") for p in batch.problems) and not batch.complete
    assert len(batch.listings) >= 1108  # the other files still count
    (tmp_path / "awesome").mkdir()
    (tmp_path / "awesome" / "README.md").write_text("# nothing here\n")
    empty = awesome.read_snapshot(tmp_path / "awesome")
    assert empty.problems and not empty.complete  # a reformatted README must not deactivate 2,000 servers
    (tmp_path / "docker" / "servers" / "x").mkdir(parents=True)
    (tmp_path / "docker" / "servers" / "x" / "server.yaml").write_text("name: [unclosed\n")
    docker = docker_catalog.read_snapshot(tmp_path / "docker")
    assert docker.problems and docker.problems[0].startswith("servers/x/server.yaml:") and not docker.listings
