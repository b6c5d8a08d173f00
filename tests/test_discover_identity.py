"""Which servers a repository holds (deviations 28, 71, 72, 73): no over-merges of one monorepository's registry
entries, no under-merges of a root link and its one folder, the reference servers once each. From the real snapshots
and from small crafted listings."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest

from pipeline.discover import CallableSource, SourceBatch, run_discover
from pipeline.discover.merge import merge_listings
from pipeline.identity import ARCHIVED_REFERENCE_SERVERS, LIVE_REFERENCE_SERVERS
from pipeline.models import Listing, Package, Remote
from pipeline.progress import Progress
from tests.support import NOW, SOURCE_FIXTURES, snapshot_catalog

needs_fixtures = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")


def listing(source: str, key: str, name: str | None = None, **fields) -> Listing:
    return Listing(source=source, key=key, name=key if name is None else name, raw=fields.pop("raw", {"key": key}), **fields)


def registry(name: str, repository: str | None = None, **fields) -> Listing:
    return listing("official-registry", name, "", registry_name=name, repository=repository, **fields)


def hosted(url: str) -> list[Remote]:
    return [Remote(transport="streamable-http", url=url)]


def shape(entries) -> dict[str, list[str]]:
    """Each entry's id and the (source, key) of the listings it holds."""
    return {e.id: sorted(f"{r.source}:{r.key}" for r in e.records) for e in entries}


def discover(db, *batches: tuple[str, list[Listing]], now=NOW):
    sources = [CallableSource(name, lambda items=items: SourceBatch(listings=list(items))) for name, items in batches]
    return run_discover(db, sources=sources, now=now, progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))


# ------------------------------------------------------------------ crafted listings

def test_a_repositorys_registry_servers_stay_distinct_and_a_bare_link_joins_the_one_named_like_it():
    entries = merge_listings([
        registry("ai.way/mcp", "https://github.com/way/mcp", remotes=hosted("https://way-tools.io/mcp")),
        registry("ai.way/gmail", "https://github.com/way/mcp", remotes=hosted("https://way-tools.io/gmail/mcp")),
        registry("ai.way/slack", "https://github.com/Way/MCP.git", remotes=hosted("https://way-tools.io/slack/mcp")),
        listing("awesome-mcp-servers", "https://github.com/way/mcp", "way/mcp", repository="https://github.com/way/mcp"),
        listing("docker-mcp-catalog", "way", "Way", remotes=hosted("https://way-tools.io/mcp")),
    ])
    assert shape(entries) == {
        "registry--ai.way--gmail": ["official-registry:ai.way/gmail"],
        "registry--ai.way--slack": ["official-registry:ai.way/slack"],
        "way--mcp": ["awesome-mcp-servers:https://github.com/way/mcp", "docker-mcp-catalog:way", "official-registry:ai.way/mcp"],
    }
    assert {e.repo_key for e in entries} == {"github:way/mcp"}  # linked by their repository
    gmail = next(e for e in entries if e.id == "registry--ai.way--gmail")
    assert gmail.keys[0] == "registry:ai.way/gmail" and not [k for k in gmail.keys if k.startswith("github:")]
    assert gmail.remote_url == "https://way-tools.io/gmail/mcp"


def test_without_a_server_named_like_the_repository_a_bare_link_is_the_repositorys_own_entry():
    entries = merge_listings([
        registry("io.github.b/dc-jira", "https://github.com/b/dc", packages=[Package(registry="npm", identifier="@dc/jira")]),
        registry("io.github.b/dc-wiki", "https://github.com/b/dc", packages=[Package(registry="npm", identifier="@dc/wiki")]),
        listing("best-of-mcp-servers", "b/dc", repository="https://github.com/b/dc"),
    ])
    assert shape(entries) == {"b--dc": ["best-of-mcp-servers:b/dc"], "registry--io.github.b--dc-jira": ["official-registry:io.github.b/dc-jira"],
                              "registry--io.github.b--dc-wiki": ["official-registry:io.github.b/dc-wiki"]}
    alone = merge_listings([  # without the bare link, the server first by registry name keeps the repository's key
        registry("io.github.b/dc-wiki", "https://github.com/b/dc", packages=[Package(registry="npm", identifier="@dc/wiki")]),
        registry("io.github.b/dc-jira", "https://github.com/b/dc", packages=[Package(registry="npm", identifier="@dc/jira")])])
    assert shape(alone) == {"b--dc": ["official-registry:io.github.b/dc-jira"],
                            "registry--io.github.b--dc-wiki": ["official-registry:io.github.b/dc-wiki"]}


def test_versions_renames_seed_entries_and_aggregator_republications_are_one_server():
    pypi = [Package(registry="pypi", identifier="Acme_Tool", version="1.0")]
    entries = merge_listings([
        registry("io.github.acme/acme-tool", "https://github.com/acme/acme-tool", packages=pypi),
        registry("com.acme/acme-tool", "https://github.com/acme/acme-tool", remotes=hosted("https://mcp.acme-tools.io")),  # namespace move
        registry("dev.acme/mcp", "https://github.com/acme/acme-tool", packages=[Package(registry="pypi", identifier="acme-tool")]),  # same package
        registry("ai.smithery/acme-acme-tool", "https://github.com/acme/acme-tool", remotes=hosted("https://server.smithery.ai/@acme/acme-tool/mcp")),
        registry("ai.smithery/acme-test2", "https://github.com/acme/acme-tool", remotes=hosted("https://server.smithery.ai/@acme/test2/mcp")),
        registry("io.github.acme/old", "https://github.com/acme/acme-tool", packages=[Package(registry="unknown", identifier="acme/acme-tool")],
                 raw={"name": "io.github.acme/old", "version_detail": {"version": "0.0.1-seed"}}),  # the 2025-05 seed
        registry("io.acme/acme-tool-beta", "https://github.com/acme/acme-tool"),  # offers neither a remote nor a package
        registry("com.acme/other", "https://github.com/acme/acme-tool", packages=[Package(registry="npm", identifier="acme-other")]),
    ])
    assert [(e.id, len(e.records)) for e in entries] == [("acme--acme-tool", 7), ("registry--com.acme--other", 1)]


def test_a_root_link_joins_the_repositorys_one_listed_folder_but_not_a_monorepos():
    entries = merge_listings([
        listing("best-of-mcp-servers", "o/app", repository="https://github.com/o/app"),
        registry("io.github.o/app", "https://github.com/o/app", subfolder="packages/mcp"),
        listing("awesome-mcp-servers", "m", "mono", repository="https://github.com/o/mono"),
        listing("awesome-mcp-servers", "m1", "one", repository="https://github.com/o/mono/tree/main/src/one"),
        listing("awesome-mcp-servers", "m2", "two", repository="https://github.com/o/mono/tree/main/src/two"),
    ])
    assert shape(entries) == {
        "o--app--packages--mcp": ["best-of-mcp-servers:o/app", "official-registry:io.github.o/app"],
        "o--mono": ["awesome-mcp-servers:m"], "o--mono--src--one": ["awesome-mcp-servers:m1"], "o--mono--src--two": ["awesome-mcp-servers:m2"],
    }
    app = next(e for e in entries if e.id == "o--app--packages--mcp")
    assert app.keys[0] == "github:o/app#packages/mcp" and "github:o/app" in app.keys and app.subpath == "packages/mcp"


def test_reference_servers_that_stayed_live_are_keyed_in_servers_whichever_repository_a_link_names():
    assert not LIVE_REFERENCE_SERVERS & ARCHIVED_REFERENCE_SERVERS
    entries = merge_listings([
        listing("awesome-mcp-servers", "a", "server-memory", repository="https://github.com/modelcontextprotocol/servers-archived/tree/main/src/memory"),
        listing("docker-mcp-catalog", "memory", "Memory (Reference)", repository="https://github.com/modelcontextprotocol/servers",
                subfolder="src/memory"),
        listing("pulsemcp", "gh", repository="https://github.com/modelcontextprotocol/servers/tree/HEAD/src/github"),
        listing("awesome-mcp-servers", "g", "server-github", repository="https://github.com/modelcontextprotocol/servers-archived/tree/main/src/github"),
    ])
    assert shape(entries) == {
        "modelcontextprotocol--servers--src--memory": ["awesome-mcp-servers:a", "docker-mcp-catalog:memory"],
        "modelcontextprotocol--servers-archived--src--github": ["awesome-mcp-servers:g", "pulsemcp:gh"],
    }
    memory = entries[0]
    assert memory.repository == "https://github.com/modelcontextprotocol/servers"
    assert "github:modelcontextprotocol/servers-archived#src/memory" in memory.keys  # the link as written is kept as a key


def test_a_stored_server_that_a_run_splits_keeps_its_id_for_one_and_its_records_move(db):
    shared = hosted("https://way-tools.io/mcp")
    discover(db, ("official-registry", [registry("ai.way/mcp", "https://github.com/way/mcp", remotes=shared),
                                        registry("ai.way/gmail", "https://github.com/way/mcp", remotes=shared)]))
    assert [r["id"] for r in db.query("select id from servers")] == ["way--mcp"]  # one remote: one server
    report = discover(db, ("official-registry", [registry("ai.way/mcp", "https://github.com/way/mcp", remotes=shared),
                                                 registry("ai.way/gmail", "https://github.com/way/mcp", remotes=hosted("https://way-tools.io/gmail"))]),
                      now=NOW + timedelta(days=1))
    assert report.counts["new"] == 1
    rows = {r["id"]: r for r in db.query("select * from servers where is_active = 1")}
    assert set(rows) == {"way--mcp", "registry--ai.way--gmail"} and rows["registry--ai.way--gmail"]["repo_key"] == "github:way/mcp"
    records = {r["source_key"]: r["server_id"] for r in db.query("select source_key, server_id from source_records")}
    assert records == {"ai.way/mcp": "way--mcp", "ai.way/gmail": "registry--ai.way--gmail"}
    keys = {r["key"]: r["server_id"] for r in db.query("select key, server_id from server_keys")}
    assert keys["registry:ai.way/gmail"] == "registry--ai.way--gmail" and keys["github:way/mcp"] == "way--mcp"


def test_listings_the_stored_catalog_joined_stay_joined_when_the_source_that_joined_them_is_silent(db):
    discover(db, ("official-registry", [registry("com.o/x", "https://github.com/o/x", remotes=hosted("https://x-tools.io/mcp"))]),
             ("docker-mcp-catalog", [listing("docker-mcp-catalog", "x-remote", "X", remotes=hosted("https://x-tools.io/mcp")),
                                     listing("docker-mcp-catalog", "x", "X", repository="https://github.com/o/x")]))
    discover(db, ("docker-mcp-catalog", [listing("docker-mcp-catalog", "x-remote", "X", remotes=hosted("https://x-tools.io/mcp")),
                                         listing("docker-mcp-catalog", "x", "X", repository="https://github.com/o/x")]), now=NOW + timedelta(days=1))
    assert [r["id"] for r in db.query("select id from servers")] == ["o--x"]


# ------------------------------------------------------------------ the catalog built from the real snapshots

@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    return snapshot_catalog(tmp_path_factory.mktemp("identity") / "catalog.db")


def held(db, repo: str) -> dict[str, list[str]]:
    """The active servers of one repository and the (source, key) of the records each holds."""
    out: dict[str, list[str]] = {}
    for row in db.query("select s.id, r.source, r.source_key from servers s join source_records r on r.server_id = s.id "
                        "where s.is_active = 1 and s.repo_key = ? order by r.source, r.source_key", [f"github:{repo}"]):
        out.setdefault(row["id"], []).append(f"{row['source']}:{row['source_key']}")
    return out


@needs_fixtures
def test_real_monorepositories_keep_their_registry_servers_apart(catalog):
    waystation = held(catalog, "waystation-ai/mcp")
    assert len(waystation) == 12  # 12 hosted servers, one repository
    assert waystation["waystation-ai--mcp"] == ["awesome-mcp-servers:https://github.com/waystation-ai/mcp", "docker-mcp-catalog:waystation",
                                                "official-registry:ai.waystation/mcp"]
    assert waystation["registry--ai.waystation--airtable"] == ["official-registry:ai.waystation/airtable"]
    airtable = catalog["servers"].get("registry--ai.waystation--airtable")
    assert airtable["remote_url"].startswith("https://waystation.ai/airtable/mcp")
    # nothing but the registry names these two: the server first by registry name keeps the repository's key and page id
    assert sorted(held(catalog, "mintmcp/servers")) == ["mintmcp--servers", "registry--com.mintmcp--gmail", "registry--com.mintmcp--outlook-calendar",
                                                        "registry--com.mintmcp--outlook-email"]
    assert held(catalog, "mintmcp/servers")["mintmcp--servers"] == ["official-registry:com.mintmcp/gcal"]
    atlassian = held(catalog, "b1ff/atlassian-dc-mcp")
    assert sorted(atlassian) == ["b1ff--atlassian-dc-mcp", "registry--io.github.b1ff--atlassian-dc-mcp-confluence",
                                 "registry--io.github.b1ff--atlassian-dc-mcp-jira"]
    for server_id in atlassian:
        assert len(json.loads(catalog["servers"].get(server_id)["packages"])) == 1
    bundles = held(catalog, "thinkchainai/mcpbundles")  # no server named like the repository: the awesome link is the repository's own entry
    assert bundles == {"registry--com.mcpbundles--agent-interviews": ["official-registry:com.mcpbundles/agent-interviews"],
                       "registry--com.mcpbundles--hub": ["official-registry:com.mcpbundles/hub"],
                       "thinkchainai--mcpbundles": ["awesome-mcp-servers:https://github.com/thinkchainai/mcpbundles"]}
    keys = {r["key"]: r["server_id"] for r in catalog.query("select key, server_id from server_keys")}
    assert keys["github:waystation-ai/mcp"] == "waystation-ai--mcp" and keys["registry:ai.waystation/gmail"] == "registry--ai.waystation--gmail"


@needs_fixtures
def test_real_versions_renames_and_republications_still_merge(catalog):
    expected = {  # repository -> the registry names its one server holds
        "augmnt/augments-mcp-server": {"dev.augments/mcp", "io.github.augmnt/augments-mcp-server"},  # one PyPI package
        "brain-bbqs/neuromcp": {"io.github.brain-bbqs/neuro", "io.github.brain-bbqs/neuro-mcp"},  # one npm package
        "oxylabs/oxylabs-mcp": {"ai.smithery/oxylabs-oxylabs-mcp", "io.github.oxylabs/oxylabs-mcp", "io.oxylabs/oxylabs-mcp"},
        "ref-tools/ref-tools-mcp": {"ai.smithery/ref-tools-ref-tools-mcp", "io.github.ref-tools/ref-tools-mcp", "tools.ref/ref-tools-mcp"},
        "humanjesse/textarttools-mcp": {"com.textarttools/textarttools-mcp", "io.github.humanjesse/textarttools-mcp"},  # namespace move
        "arjunkmrm/time": {f"ai.smithery/arjunkmrm-{n}" for n in ("local001", "local02", "test0", "test01", "time")},  # five deployments
    }
    for repo, names in expected.items():
        servers = held(catalog, repo)
        assert len(servers) == 1, repo
        assert {k.split(":", 1)[1] for k in next(iter(servers.values())) if k.startswith("official-registry:")} == names, repo


@needs_fixtures
def test_real_root_links_join_the_repositorys_one_listed_folder(catalog):
    assert held(catalog, "getsentry/sentry-mcp") == {"getsentry--sentry-mcp--packages--mcp-server": [
        "awesome-mcp-servers:https://github.com/getsentry/sentry-mcp", "best-of-mcp-servers:getsentry/sentry-mcp",
        "official-registry:io.github.getsentry/sentry-mcp", "smithery:getsentry/sentry-mcp"]}
    assert list(held(catalog, "kubeshop/testkube")) == ["kubeshop--testkube--build--mcp-server"]
    assert list(held(catalog, "stripe/agent-toolkit")) == ["stripe--agent-toolkit--tools--modelcontextprotocol"]
    split = catalog.execute("select count(*) from (select repo_key from servers where is_active = 1 and repo_key is not null group by repo_key "
                            "having sum(subpath is null) >= 1 and count(distinct subpath) = 1)").fetchone()[0]
    assert split == 0  # no repository is a root server beside its one folder's
    monorepo = held(catalog, "awslabs/mcp")  # many folders listed: the root stays the repository's own entry
    assert "awslabs--mcp" in monorepo and len(monorepo) > 10


@needs_fixtures
def test_real_reference_servers_appear_once_each(catalog):
    rows = list(catalog.query("select id, repo_key, subpath from servers where is_active = 1 and repo_key in "
                              "('github:modelcontextprotocol/servers', 'github:modelcontextprotocol/servers-archived') and subpath like 'src/%'"))
    names = [row["subpath"].split("/")[1] for row in rows]
    assert len(names) == len(set(names))  # none twice
    for row in rows:
        live = row["subpath"].split("/")[1] in LIVE_REFERENCE_SERVERS
        assert row["repo_key"] == ("github:modelcontextprotocol/servers" if live else "github:modelcontextprotocol/servers-archived"), row
    assert {n for n in names if n in LIVE_REFERENCE_SERVERS} == LIVE_REFERENCE_SERVERS
    for name in ("fetch", "filesystem", "git", "memory"):
        assert held(catalog, "modelcontextprotocol/servers")[f"modelcontextprotocol--servers--src--{name}"] == [
            f"awesome-mcp-servers:https://github.com/modelcontextprotocol/servers-archived/tree/main/src/{name}", f"docker-mcp-catalog:{name}"]
