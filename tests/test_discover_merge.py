"""Deduplication: the quirks the source snapshots show, merged the way seed 000 says, into a real catalog."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from datetime import timedelta

import pytest
import yaml

from pipeline import store
from pipeline.discover import CallableSource, SourceBatch, run_discover, snapshot_sources
from pipeline.discover.merge import merge_listings
from pipeline.models import Listing, Package, Remote
from pipeline.progress import Progress
from pipeline.score.registry import infos
from tests.support import NOW, SOURCE_FIXTURES


def listing(source: str, key: str, name: str | None = None, **fields) -> Listing:
    return Listing(source=source, key=key, name=key if name is None else name, raw={"key": key}, **fields)


def discover(db, *batches: tuple[str, list[Listing]], now=NOW, complete=True, aliases=None):
    sources = [CallableSource(name, lambda items=items: SourceBatch(listings=list(items), complete=complete, aliases=aliases or {}))
               for name, items in batches]
    return run_discover(db, sources=sources, now=now, progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))


def server_rows(db) -> dict[str, dict]:
    return {row["id"]: row for row in db.query("select * from servers where is_active = 1")}


def test_spellings_of_one_repository_merge_with_every_source_kept(db):
    discover(
        db,
        ("official-registry", [listing("official-registry", "io.github.octo/tool", "", repository="https://github.com/Octo/Tool.git",
                                       registry_name="io.github.octo/tool", description="From the registry")]),
        ("awesome-mcp-servers", [listing("awesome-mcp-servers", "a", "octo/tool", repository="http://www.github.com/octo/tool/#readme",
                                         description="From the list", external_links={"glama": "https://glama.ai/mcp/servers/octo/tool"})]),
        ("best-of-mcp-servers", [listing("best-of-mcp-servers", "octo/tool", repository="https://github.com/OCTO/TOOL/",
                                         metrics={"github_stars": 5})]),
    )
    rows = server_rows(db)
    assert list(rows) == ["octo--tool"]
    row = rows["octo--tool"]
    assert json.loads(row["sources"]) == ["awesome-mcp-servers", "best-of-mcp-servers", "official-registry"]
    assert row["description"] == "From the registry"  # registry first
    assert row["name"] == "octo/tool"  # the registry has no title (a reverse-DNS name is no display name): best-of's name
    assert json.loads(row["provenance"])["description"] == "official-registry" and json.loads(row["provenance"])["name"] == "best-of-mcp-servers"
    assert row["repository"] == "https://github.com/octo/tool" and row["repo_key"] == "github:octo/tool"
    assert json.loads(row["metrics"]) == {"github_stars": 5}
    assert {r["source"] for r in db.query("select source from source_records where server_id = 'octo--tool'")} == set(json.loads(row["sources"]))
    keys = {r["key"] for r in db.query("select key from server_keys where server_id = 'octo--tool'")}
    assert {"github:octo/tool", "registry:io.github.octo/tool", "best-of-mcp-servers:octo/tool"} <= keys


def test_monorepo_servers_stay_distinct_but_linked():
    entries = merge_listings([
        listing("awesome-mcp-servers", "1", "postgres", repository="https://github.com/acme/mcp/tree/main/servers/postgres"),
        listing("official-registry", "io.github.acme/mysql", repository="https://github.com/acme/mcp", subfolder="servers/mysql"),
        listing("docker-mcp-catalog", "pg", "Postgres", repository="https://github.com/acme/mcp", subfolder="servers/postgres/"),
    ])
    assert [(e.id, e.subpath, e.repo_key, e.sources) for e in entries] == [
        ("acme--mcp--servers--mysql", "servers/mysql", "github:acme/mcp", ["official-registry"]),
        ("acme--mcp--servers--postgres", "servers/postgres", "github:acme/mcp", ["awesome-mcp-servers", "docker-mcp-catalog"]),
    ]


def test_reference_servers_moved_to_servers_archived_merge_with_old_links():
    entries = merge_listings([
        listing("pulsemcp", "github", repository="https://github.com/modelcontextprotocol/servers/tree/HEAD/src/github"),
        listing("docker-mcp-catalog", "github-ref", repository="https://github.com/modelcontextprotocol/servers-archived", subfolder="src/github"),
        listing("awesome-mcp-servers", "fetch", repository="https://github.com/modelcontextprotocol/servers/tree/main/src/fetch"),
    ])
    assert [(e.repository, e.subpath, len(e.sources)) for e in entries] == [
        ("https://github.com/modelcontextprotocol/servers", "src/fetch", 1),
        ("https://github.com/modelcontextprotocol/servers-archived", "src/github", 2),
    ]


def test_renamed_repositories_resolve_and_keep_their_stored_id(db):
    discover(db, ("awesome-mcp-servers", [listing("awesome-mcp-servers", "f", "fastmcp", repository="https://github.com/jlowin/fastmcp")]))
    assert list(server_rows(db)) == ["jlowin--fastmcp"]
    aliases = {"github:jlowin/fastmcp": "github:prefecthq/fastmcp"}
    discover(
        db,
        ("awesome-mcp-servers", [listing("awesome-mcp-servers", "f", "fastmcp", repository="https://github.com/jlowin/fastmcp")]),
        ("best-of-mcp-servers", [listing("best-of-mcp-servers", "prefecthq/fastmcp", repository="https://github.com/PrefectHQ/fastmcp")]),
        now=NOW + timedelta(days=1), aliases=aliases,
    )
    rows = server_rows(db)
    assert list(rows) == ["jlowin--fastmcp"]  # the page keeps its address; the repository is the new one
    assert rows["jlowin--fastmcp"]["repo_key"] == "github:prefecthq/fastmcp"
    assert json.loads(rows["jlowin--fastmcp"]["sources"]) == ["awesome-mcp-servers", "best-of-mcp-servers"]
    assert store.repo_aliases(db) == aliases


def test_two_stored_servers_found_to_be_one_are_folded_into_one(db):
    guess = listing("smithery", "o/tool", "Tool", weak_repository="https://github.com/o/tool")
    repo = listing("awesome-mcp-servers", "t", "o/tool", repository="https://github.com/o/tool")
    discover(db, ("smithery", [guess]))
    discover(db, ("awesome-mcp-servers", [repo]), now=NOW + timedelta(hours=1))
    assert set(server_rows(db)) == {"smithery--o--tool", "o--tool"}  # nothing yet says they are one
    report = discover(db, ("smithery", [guess]), ("awesome-mcp-servers", [repo]), now=NOW + timedelta(hours=2))
    assert report.counts["merged"] == 1
    assert list(server_rows(db)) == ["o--tool"]
    assert json.loads(db["servers"].get("o--tool")["sources"]) == ["awesome-mcp-servers", "smithery"]
    assert db["servers"].get("smithery--o--tool")["is_active"] == 0  # kept, never deleted
    assert {r["server_id"] for r in db.query("select server_id from server_keys")} == {"o--tool"}


def test_hosted_only_servers_are_keyed_by_remote_url():
    remote = [Remote(transport="streamable-http", url="https://mcp.acme-hosted.io/mcp/")]
    entries = merge_listings([
        listing("official-registry", "ai.smithery/acme-x", registry_name="ai.smithery/acme-x", remotes=remote, description="registry"),
        listing("docker-mcp-catalog", "acme-x", "Acme X", remotes=[Remote(transport="streamable-http", url="https://MCP.acme-hosted.io/mcp")]),
        listing("official-registry", "io.example/packaged", registry_name="io.example/packaged", packages=[Package(registry="npm", identifier="x")],
                remotes=[Remote(transport="sse", url="https://other.acme-hosted.io/sse")]),
    ])
    hosted = next(e for e in entries if e.registry_name == "ai.smithery/acme-x")
    assert hosted.keys[0] == "remote:https://mcp.acme-hosted.io/mcp" and hosted.id == "remote--mcp.acme-hosted.io--mcp"
    assert hosted.sources == ["docker-mcp-catalog", "official-registry"]
    assert hosted.remote_url == "https://MCP.acme-hosted.io/mcp"  # Docker's spelling: ai.smithery/* is a republication, after it
    packaged = next(e for e in entries if e.registry_name == "io.example/packaged")
    assert packaged.keys[0] == "registry:io.example/packaged" and packaged.transport == "sse"  # packages too: the registry id is the key


def test_shared_local_urls_and_names_never_join_two_repositories():
    """Registry entries list `http://localhost:8000/sse` as a "remote"; two repositories are never one server."""
    local = [Remote(transport="sse", url="http://localhost:8000/sse")]
    entries = merge_listings([
        listing("official-registry", "io.github.a/one", repository="https://github.com/a/one", remotes=local),
        listing("official-registry", "io.github.b/two", repository="https://github.com/b/two", remotes=local),
        listing("smithery", "x/shared", remotes=[Remote(transport="streamable-http", url="https://gw.acme-hosted.io/mcp")], weak_repository="https://github.com/a/one"),
        listing("docker-mcp-catalog", "shared", repository="https://github.com/b/two", remotes=[Remote(transport="streamable-http", url="https://gw.acme-hosted.io/mcp")]),
    ])
    assert sorted(e.repo_key for e in entries) == ["github:a/one", "github:b/two"]
    assert all("remote:http://localhost:8000/sse" not in e.keys for e in entries)


def test_a_vendor_bundle_of_endpoints_does_not_swallow_the_servers_listed_one_by_one():
    bundle = [Remote(transport="sse", url=f"https://{name}.mcp.vendor.io/sse") for name in ("docs", "radar", "logs")]
    entries = merge_listings([
        listing("official-registry", "io.github.vendor/mcp", repository="https://github.com/vendor/mcp", remotes=bundle),
        *[listing("docker-mcp-catalog", f"vendor-{name}", remotes=[Remote(transport="sse", url=f"https://{name}.mcp.vendor.io/sse")])
          for name in ("docs", "radar")],
        listing("official-registry", "ai.vendor/docs-twice", remotes=[Remote(transport="sse", url="https://docs.mcp.vendor.io/sse"),
                                                                    Remote(transport="streamable-http", url="https://docs.mcp.vendor.io/mcp")]),
    ])
    assert sorted((e.keys[0], e.sources) for e in entries) == [
        ("github:vendor/mcp", ["official-registry"]),
        ("remote:https://docs.mcp.vendor.io/sse", ["docker-mcp-catalog", "official-registry"]),  # one host, two transports: one server
        ("remote:https://radar.mcp.vendor.io/sse", ["docker-mcp-catalog"]),
    ]


def test_smithery_guesses_join_only_known_repositories():
    smithery_listings = [
        listing("smithery", "acme/tool", "Acme Tool", weak_repository="https://github.com/acme/tool", metrics={"smithery_uses": 9}),
        listing("smithery", "nobody/else", "Else", weak_repository="https://github.com/nobody/else"),
    ]
    alone = merge_listings(smithery_listings)
    assert [e.repo_key for e in alone] == [None, None]  # a guess alone names no repository
    joined = merge_listings([*smithery_listings, listing("awesome-mcp-servers", "t", "acme/tool", repository="https://github.com/acme/tool")])
    tool = next(e for e in joined if e.repo_key == "github:acme/tool")
    assert tool.sources == ["awesome-mcp-servers", "smithery"] and tool.metrics == {"smithery_uses": 9}
    known = merge_listings(smithery_listings, known_keys={"github:nobody/else": "nobody--else"})  # the stored catalog knows it
    assert {e.repo_key for e in known} == {None, "github:nobody/else"}


def test_links_accumulate_and_are_never_blanked(db):
    first = listing("awesome-mcp-servers", "x", "x", repository="https://github.com/o/x", external_links={"glama": "https://glama.ai/mcp/servers/o/x"})
    discover(db, ("awesome-mcp-servers", [first]), ("smithery", [listing("smithery", "o/x", weak_repository="https://github.com/o/x",
                                                                           external_links={"smithery": "https://smithery.ai/server/o/x"})]))
    discover(db, ("awesome-mcp-servers", [first.model_copy(update={"external_links": {}, "description": None})]), now=NOW + timedelta(days=1))
    row = server_rows(db)["o--x"]
    assert json.loads(row["external_links"]) == {"glama": "https://glama.ai/mcp/servers/o/x", "smithery": "https://smithery.ai/server/o/x"}


def test_lower_priority_sources_do_not_overwrite_and_a_source_that_ran_can_change_its_value(db):
    registry = listing("official-registry", "io.github.o/y", "Y", repository="https://github.com/o/y", description="Registry text")
    awesome = listing("awesome-mcp-servers", "y", "o/y", repository="https://github.com/o/y", description="List text")
    discover(db, ("official-registry", [registry]), ("awesome-mcp-servers", [awesome]))
    discover(db, ("awesome-mcp-servers", [awesome.model_copy(update={"description": "Edited list text"})]), now=NOW + timedelta(hours=1))
    assert server_rows(db)["o--y"]["description"] == "Registry text"  # the registry did not run: its value stands
    discover(db, ("official-registry", [registry.model_copy(update={"description": "New registry text"})]), now=NOW + timedelta(hours=2))
    assert server_rows(db)["o--y"]["description"] == "New registry text"


def test_incomplete_sources_deactivate_nothing_and_absent_servers_are_deactivated_not_deleted(db):
    a = listing("glama", "o/a", repository="https://github.com/o/a")
    b = listing("glama", "o/b", repository="https://github.com/o/b")
    discover(db, ("glama", [a, b]))
    report = discover(db, ("glama", [a]), now=NOW + timedelta(hours=1), complete=False)  # a failed page: b may still exist
    assert report.counts["deactivated"] == 0 and set(server_rows(db)) == {"o--a", "o--b"}
    report = discover(db, ("glama", [a]), now=NOW + timedelta(hours=2))
    assert report.counts["deactivated"] == 1 and set(server_rows(db)) == {"o--a"}
    assert db["servers"].get("o--b")["deactivated_at"] and db["servers"].count == 2


def test_verified_publishers_come_from_the_table(db):
    discover(db, ("official-registry", [
        listing("official-registry", "com.stripe/mcp", "Stripe", registry_name="com.stripe/mcp", remotes=[Remote(transport="streamable-http", url="https://mcp.stripe.com")]),
        listing("official-registry", "io.github.cloudflare/x", "CF", registry_name="io.github.cloudflare/x", repository="https://github.com/someone/fork"),
        listing("official-registry", "io.github.newco/y", "Y", registry_name="io.github.newco/y", repository="https://github.com/newco/y"),
    ]))
    assert {r["name"]: r["verified_publisher"] for r in server_rows(db).values()} == {"Stripe": "Stripe", "CF": "Cloudflare", "Y": None}
    db["verified_publishers"].insert({"match": "github:newco", "publisher": "NewCo"})  # no code deploy
    discover(db, ("official-registry", [listing("official-registry", "io.github.newco/y", "Y", registry_name="io.github.newco/y",
                                                repository="https://github.com/newco/y")]), now=NOW + timedelta(hours=1))
    assert db["servers"].get("newco--y")["verified_publisher"] == "NewCo"


# ------------------------------------------------------------------ the catalog built from the real snapshots

needs_fixtures = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")
ARCHIVED = {"aws-kb-retrieval-server", "brave-search", "everart", "gdrive", "github", "gitlab", "google-maps", "postgres", "puppeteer", "redis",
            "sentry", "slack", "sqlite"}
LIVE = {"everything", "fetch", "filesystem", "git", "memory", "sequentialthinking", "time"}  # never archived: a servers-archived link means these


def independent_repo(url, aliases):
    """A second, deliberately simple reading of a GitHub URL: owner/repo lower-cased, renames followed."""
    match = re.search(r"github\.com[/:]([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?(?:[/#?]|$)(?:(?:tree|blob)/[^/]+/src/([^/]+))?", url or "", re.I)
    if not match or match.group(1).lower() in ("topics", "orgs"):
        return None
    repo = f"{match.group(1)}/{match.group(2)}".lower()
    if repo == "modelcontextprotocol/servers" and (match.group(3) or "").lower() in ARCHIVED:
        repo = "modelcontextprotocol/servers-archived"
    if repo == "modelcontextprotocol/servers-archived" and (match.group(3) or "").lower() in LIVE:
        repo = "modelcontextprotocol/servers"
    while repo in aliases:
        repo = aliases.pop(repo)
    return repo


def independent_counts() -> tuple[dict[str, set[str]], list[set[str]]]:
    """Unique repositories per source, read straight from the snapshot files without the adapters."""
    root = SOURCE_FIXTURES
    aliases: dict[str, str] = {}
    for path in sorted((root / "best-of-mcp-servers" / "history").glob("*_projects.csv")):
        for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))):
            if row.get("updated_github_id") and row["updated_github_id"].lower() != row["github_id"].lower():
                aliases[row["github_id"].lower()] = row["updated_github_id"].lower()
    per_source: dict[str, set[str]] = {}
    publishers: dict[str, set[str]] = {}  # an npm or PyPI package -> the repositories whose registry entries publish it

    def add(source, url):
        repo = independent_repo(url, dict(aliases))
        if repo:
            per_source.setdefault(source, set()).add(repo)

    for path in (root / "official-registry").glob("*.json"):
        if path.name.endswith(".schema.json"):
            continue
        items = json.loads(path.read_text(encoding="utf-8-sig"))
        latest = {}
        for item in items:
            server = item.get("server", item)
            meta = item.get("_meta", {}).get("io.modelcontextprotocol.registry/official", {"isLatest": True})
            if server.get("name") and (meta.get("isLatest") or server["name"] not in latest):
                latest[server["name"]] = server
        for server in latest.values():
            add("official-registry", (server.get("repository") or {}).get("url"))
            repo = independent_repo((server.get("repository") or {}).get("url"), dict(aliases))
            for package in server.get("packages") or []:
                kind = (package.get("registryType") or package.get("registry_name") or "").lower()
                name = (package.get("identifier") or package.get("name") or "").strip().lower()
                if repo and kind in ("npm", "pypi") and name and ("/" not in name or name.startswith("@")):
                    publishers.setdefault(f"{kind}:{re.sub(r'[-_.]+', '-', name) if kind == 'pypi' else name}", set()).add(repo)
    readme = (root / "awesome-mcp-servers" / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Server Implementations", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if match := re.match(r"^\s*[-*]\s+\[[^\]]+\]\(([^)\s]+)\)", line):
            add("awesome-mcp-servers", match.group(1))
    for project in yaml.safe_load((root / "best-of-mcp-servers" / "projects.yaml").read_text())["projects"]:
        add("best-of-mcp-servers", f"https://github.com/{project['github_id']}")
    for path in (root / "docker-mcp-catalog" / "servers").glob("*/server.yaml"):
        add("docker-mcp-catalog", (yaml.safe_load(path.read_text()).get("source") or {}).get("project"))
    return per_source, [repos for repos in publishers.values() if len(repos) > 1]


def one_of(classes: list[set[str]]):
    """Repositories that publish one package are one server under either name (deviation 74): each stands for its class."""
    named: dict[str, str] = {}
    for repos in classes:
        joined = set(repos).union(*(c for c in classes if c & repos))
        for repo in joined:
            named[repo] = min(joined)
    return lambda repo: named.get(repo, repo)


@needs_fixtures
def test_catalog_from_snapshots_agrees_with_an_independent_count(db):
    report = run_discover(db, sources=snapshot_sources(SOURCE_FIXTURES), now=NOW, progress=Progress("discover", 9, stream=io.StringIO()))
    named, classes = independent_counts()
    assert len(classes) >= 3  # pkolawa's krs-poland, MR901's plots and Digital Defiance's debugger each under two repositories
    same = one_of(classes)
    expected = {source: {same(repo) for repo in repos} for source, repos in named.items()}
    catalog: dict[str, set[str]] = {}
    for row in db.query("select repo_key, sources from servers where is_active = 1 and repo_key is not null"):
        for source in json.loads(row["sources"]):
            catalog.setdefault(same(row["repo_key"].removeprefix("github:")), set()).add(source)
    servers_of = Counter(same(r["repo_key"].removeprefix("github:")) for r in db.query(
        "select distinct repo_key from servers where is_active = 1 and repo_key is not null"))
    assert all(servers_of[same(next(iter(repos)))] == 1 for repos in classes)  # one repository key per package
    union = set().union(*expected.values())
    assert set(catalog) == union and len(union) > 3000
    for source, repos in expected.items():  # every repository shows every source that names it
        shown = {repo for repo, sources in catalog.items() if source in sources}
        assert shown >= repos, source
        if source in ("awesome-mcp-servers", "best-of-mcp-servers"):  # these name repositories only, so exactly
            assert shown == repos, source
    for a in expected:  # so the pairwise overlaps are at least the independent ones
        for b in expected:
            if a < b:
                assert sum(1 for sources in catalog.values() if {a, b} <= sources) >= len(expected[a] & expected[b]), (a, b)
    listed = sum(v for k, v in report.counts.items() if k.startswith("listed:"))
    stored = db.execute("select count(*) from (select distinct source, source_key from source_records)").fetchone()[0]
    assert report.counts["new"] == db["servers"].count and listed >= stored > 9000


def test_server_pages_say_where_each_field_came_from(db, tmp_path):
    from pipeline.render import run_build
    from pipeline.score import run_score
    from tests.support import validator

    discover(
        db,
        ("official-registry", [listing("official-registry", "com.stripe/agent", "", registry_name="com.stripe/agent",
                                       repository="https://github.com/stripe/agent-toolkit", description="Stripe <b>payments</b>",
                                       packages=[Package(registry="npm", identifier="@stripe/mcp", version="0.2.4")],
                                       remotes=[Remote(transport="streamable-http", url="https://mcp.stripe.com", auth_headers=["Authorization"])])]),
        ("awesome-mcp-servers", [listing("awesome-mcp-servers", "s", "stripe/agent-toolkit", repository="https://github.com/stripe/agent-toolkit",
                                         categories=["Finance & Fintech"], external_links={"glama": "https://glama.ai/mcp/servers/stripe/agent-toolkit"})]),
        ("docker-mcp-catalog", [listing("docker-mcp-catalog", "stripe", "Stripe", repository="https://github.com/stripe/agent-toolkit",
                                        metrics={"docker_pulls": 12345}, categories=["finance"])]),
    )
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW)
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    data = json.loads((tmp_path / "site" / "api" / "servers" / "stripe--agent-toolkit.json").read_text())
    assert not list(validator(tmp_path / "site", "server.schema.json").iter_errors(data))
    server = data["server"]
    assert server["verified_publisher"] == "Stripe"
    assert [(row["field"], row["source"]) for row in server["provenance"]][:3] == [
        ("Name", "docker-mcp-catalog"), ("Description", "official-registry"), ("Repository", "official-registry")]
    assert [(row["source"], row["first_seen"][:10]) for row in server["listings"]] == [
        ("awesome-mcp-servers", "2026-11-29"), ("docker-mcp-catalog", "2026-11-29"), ("official-registry", "2026-11-29")]
    assert server["popularity"] == [{"label": "Docker Hub pulls", "key": "docker_pulls", "value": 12345}]
    assert server["source_categories"] == {"awesome-mcp-servers": ["Finance & Fintech"], "docker-mcp-catalog": ["finance"]}
    html = (tmp_path / "site" / "servers" / "stripe--agent-toolkit.html").read_text()
    assert "Verified publisher: Stripe" in html and "Docker Hub pulls: 12,345" in html and "expects Authorization" in html
    assert "Stripe &lt;b&gt;payments&lt;/b&gt;" in html  # source text stays inert


def test_classification_matches_whole_words_and_uses_the_registry_namespace(db):
    from pipeline.classify import classify
    from pipeline.classify_vocabulary import PLATFORMS

    assert len(PLATFORMS) >= 135  # seed 000: 135+ platform keywords
    assert classify("example-server", "An example of weather lookups", None, None, None).platforms == ()  # no "exa" inside "example"
    assert classify("exa-search", "web search via Exa", None, None, None).platforms == ("Exa",)
    discover(db, ("official-registry", [listing("official-registry", "com.stripe/agent", "Agent", registry_name="com.stripe/agent",
                                                description="Tools for agents")]))
    row = next(iter(server_rows(db).values()))
    assert row["category"] == "Finance" and json.loads(row["platforms"]) == ["Stripe"]  # from the namespace alone


@needs_fixtures
def test_awesome_quirks_from_the_real_readme(db):
    from pipeline.discover import awesome

    batch = awesome.read_snapshot(SOURCE_FIXTURES / "awesome-mcp-servers")
    entries = merge_listings(batch.listings)
    playwright = next(e for e in entries if e.repo_key == "github:automata-labs-team/mcp-server-playwright")
    assert playwright.name == "automatalabs/mcp-server-playwright"  # the link text is a name, not the repository
    by_repo: dict[str, int] = {}
    for listing_ in batch.listings:
        key = listing_.repository and merge_listings([listing_])[0].keys[0]
        if key:
            by_repo[key] = by_repo.get(key, 0) + 1
    twice = [key for key, count in by_repo.items() if count > 1]
    assert twice  # the README lists some repositories twice (differently spelled) ...
    for key in twice:  # ... and each becomes one server carrying every record
        merged = next(e for e in entries if e.keys[0] == key)
        assert len(merged.records) == by_repo[key]


@needs_fixtures
def test_a_broken_snapshot_loses_nothing_already_stored(db, tmp_path):
    import shutil

    full = run_discover(db, sources=snapshot_sources(SOURCE_FIXTURES, ["official-registry", "docker-mcp-catalog"]), now=NOW,
                        progress=Progress("discover", 3, stream=io.StringIO()))
    active = db.execute("select count(*) from servers where is_active = 1").fetchone()[0]
    broken = tmp_path / "snapshot"
    shutil.copytree(SOURCE_FIXTURES / "docker-mcp-catalog", broken / "docker-mcp-catalog", copy_function=shutil.copyfile)
    for path in broken.rglob("*"):  # the shared fixtures are read-only; the copy must not be
        path.chmod(0o755 if path.is_dir() else 0o644)
    (broken / "official-registry").mkdir()
    (broken / "official-registry" / "servers.json").write_text('{"servers": [{"server": {"name": "io.x/cut"')  # truncated
    (broken / "docker-mcp-catalog" / "servers" / "airtable-mcp-server" / "server.yaml").unlink()
    (broken / "docker-mcp-catalog" / "servers" / "airtable-mcp-server" / "server.yaml").write_text("name: [broken")
    report = run_discover(db, sources=snapshot_sources(broken), now=NOW + timedelta(days=1), progress=Progress("discover", 3, stream=io.StringIO()))
    assert report.counts["deactivated"] == 0 and report.failures == 2
    assert db.execute("select count(*) from servers where is_active = 1").fetchone()[0] == active == full.counts["new"]
    problems = [r["problem"] for r in db.query("select problem from discovery_problems where seen_at > ?", [NOW.isoformat()])]
    assert any(p.startswith("servers.json: unreadable") for p in problems)
    assert any(p.startswith("servers/airtable-mcp-server/server.yaml: not valid YAML") for p in problems)
