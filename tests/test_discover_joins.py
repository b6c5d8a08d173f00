"""Joins beyond the repository: a published package is one server (deviation 74), Smithery's qualified name is
named by other sources' listings (deviation 29), a key two servers share identifies neither (deviation 75), and
every key is kept in `server_keys`, so a later run finds the stored server by any of them."""

from __future__ import annotations

import io
import json
import re

import pytest

from pipeline.discover import CallableSource, SourceBatch, run_discover
from pipeline.discover.merge import merge_listings
from pipeline.models import Listing, Package, Remote
from pipeline.progress import Progress
from tests.support import NOW, SOURCE_FIXTURES, snapshot_catalog

needs_fixtures = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")


def listing(source: str, key: str, **fields) -> Listing:
    return Listing(source=source, key=key, name=key, raw={"key": key}, **fields)


def npm(name: str, version: str | None = None) -> Package:
    return Package(registry="npm", identifier=name, version=version)


def pypi(name: str) -> Package:
    return Package(registry="pypi", identifier=name)


def groups(entries) -> list[list[str]]:
    """Each merged server as the sorted `source:key` of its records."""
    return sorted(sorted(f"{r.source}:{r.key}" for r in e.records) for e in entries)


def discover(db, *batches: tuple[str, list[Listing]]):
    sources = [CallableSource(name, lambda items=items: SourceBatch(listings=list(items))) for name, items in batches]
    return run_discover(db, sources=sources, now=NOW, progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))


# ---------------------------------------------------------------- the real snapshots

@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """The catalog from every snapshot, and where each raw record landed: (source, key) -> server id."""
    db = snapshot_catalog(tmp_path_factory.mktemp("joins") / "catalog.db")
    where = {(r["source"], r["source_key"]): r["server_id"] for r in db.query("select source, source_key, server_id from source_records")}
    keys = {r["key"]: r["server_id"] for r in db.query("select key, server_id from server_keys")}
    yield db, where, keys
    db.close()


# Smithery 2025-04 list records (qualified name without `@`, lower case) and the registry record that names them.
SMITHERY_NAMED_BY = {
    # a remote URL on server.smithery.ai/@owner/slug/mcp (the registry's ai.smithery/* re-publication)
    "smithery-ai/github": "ai.smithery/smithery-ai-github",  # repository smithery-ai/mcp-servers, subfolder github
    "browserbasehq/mcp-browserbase": "ai.smithery/browserbasehq-mcp-browserbase",
    "smithery/toolbox": "ai.smithery/smithery-toolbox",
    "jweingardt12/mlb_mcp": "ai.smithery/jweingardt12-mlb_mcp",
    # an io.github.<owner>/<slug> registry name whose repository is named otherwise
    "neo4j-contrib/mcp-neo4j-cypher": "io.github.neo4j-contrib/mcp-neo4j-cypher",  # neo4j-contrib/mcp-neo4j, servers/mcp-neo4j-cypher
    "ramp-public/ramp-mcp": "io.github.ramp-public/ramp-mcp",  # ramp-public/ramp_mcp
    "boston343/starwind-ui-mcp": "io.github.boston343/starwind-ui-mcp",  # starwind-ui/starwind-ui-mcp
    "buryhuang/mcp-hubspot": "io.github.buryhuang/mcp-hubspot",  # peakmojo/mcp-hubspot
    "matanyemini/bitbucket-mcp": "io.github.MatanYemini/bitbucket-mcp",  # no repository
    # the registry entry publishes the npm package @owner/slug
    "upstash/context7-mcp": "io.github.upstash/context7",
    "41px/mcp-xmind": "io.github.apeyroux/mcp-xmind",
    "alanse/mcp-neo4j-server": "io.github.da-okazaki/mcp-neo4j-server",
    "executeautomation/playwright-mcp-server": "io.github.executeautomation/mcp-playwright",
    "llmindset/mcp-hfspace": "io.github.evalstate/mcp-hfspace",
    # the 2025-05 registry seed's package `@owner/slug`, labelled `unknown` or `docker` there
    "simonb97/server-win-cli": "io.github.simonb97/win-cli-mcp-server",  # unknown
    "jetbrains/mcp-proxy": "io.github.jetbrains/mcp-jetbrains",  # unknown
    "gongrzhe/server-redis-mcp": "io.github.gongrzhe/redis-mcp-server",  # docker
}


@needs_fixtures
def test_smithery_listings_join_the_listings_that_name_their_qualified_name(catalog):
    db, where, keys = catalog
    for qualified, registry in SMITHERY_NAMED_BY.items():
        assert where[("smithery", qualified)] == where[("official-registry", registry)], qualified
    assert where[("smithery", "upstash/context7-mcp")] == "upstash--context7"
    assert where[("smithery", "smithery-ai/github")] == "smithery-ai--mcp-servers--github"
    assert keys["smithery:upstash/context7-mcp"] == keys["npm:@upstash/context7-mcp"] == "upstash--context7"
    row = db["servers"].get("starwind-ui--starwind-ui-mcp")
    assert json.loads(row["sources"]) == ["official-registry", "smithery"] and row["repo_key"] == "github:starwind-ui/starwind-ui-mcp"


@needs_fixtures
def test_a_smithery_name_never_joins_two_repositories(catalog):
    _, where, keys = catalog
    # io.github.ddukbg/github-enterprise-mcp points at containerelic's repository; Smithery's @ddukbg/... joined ddukbg's by its guess
    ddukbg = where[("smithery", "ddukbg/github-enterprise-mcp")]
    containerelic = where[("official-registry", "io.github.ddukbg/github-enterprise-mcp")]
    assert (ddukbg, containerelic) == ("ddukbg--github-enterprise-mcp", "containerelic--github-enterprise-mcp")
    assert keys["smithery:ddukbg/github-enterprise-mcp"] == ddukbg  # the Smithery listing's own key stays with it (deviation 75)
    # @keboola/keboola-mcp-server: the registry's io.github.keboola/keboola-mcp-server is keboola/mcp-server, another repository
    assert where[("smithery", "keboola/keboola-mcp-server")] != where[("official-registry", "io.github.keboola/keboola-mcp-server")]


def registry_packages() -> dict[str, set[str]]:
    """Package identity -> registry names, read straight from the registry files (latest versions; npm lower-cased, PyPI by
    PEP 503), for the packages published under names that no one repository already joins."""
    named: dict[str, dict[str, str]] = {}
    for path in (SOURCE_FIXTURES / "official-registry").glob("*.json"):
        if path.name.endswith(".schema.json"):
            continue
        for item in json.loads(path.read_text(encoding="utf-8-sig")):
            server = item.get("server", item)
            meta = item.get("_meta", {}).get("io.modelcontextprotocol.registry/official", {"isLatest": True})
            if not meta.get("isLatest") or meta.get("status") == "deleted":
                continue
            repository = server.get("repository") or {}
            place = f"{(repository.get('url') or server['name']).lower().removesuffix('.git')}#{repository.get('subfolder') or ''}"
            for package in server.get("packages") or []:
                kind = package.get("registryType") or package.get("registry_name")
                name = package.get("identifier") or package.get("name") or ""
                if kind == "npm" and re.fullmatch(r"(@[a-z0-9-~][a-z0-9-._~]*/)?[a-z0-9-~][a-z0-9-._~]*", name.lower()):
                    named.setdefault("npm:" + name.lower(), {})[server["name"]] = place
                elif kind == "pypi" and re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", name):
                    named.setdefault("pypi:" + re.sub(r"[-_.]+", "-", name).lower(), {})[server["name"]] = place
    return {package: set(names) for package, names in named.items() if len(set(names.values())) > 1}


JOINED_BY_PACKAGE = {
    "npm:pdfkit-mcp": {"com.hellobasestation/pdfkit", "io.github.benhuang21828/pdfkit"},
    "npm:@kekwanulabs/syncline-mcp-server": {"com.kekwanu/syncline-mcp-server", "run.syncline/mcp-server"},
    "pypi:scrimba-teaching-mcp": {"io.github.Skills03/scrimba-teaching", "io.github.srikrishna235/scrimba-teaching-mcp"},
    "npm:datagraph-city-mcp-server": {"io.github.kevinkells/datagraph", "io.github.team-earth/datagraph"},
    "npm:in-memoria": {"io.github.pi22by7/in-memoria", "me.pi22by7/in-memoria"},
}
UNDER_TWO_REPOSITORIES = {  # one package, two GitHub repositories: one server under both names (deviation 74)
    "pypi:mcp-plots": {"io.github.MR901/mcp-plots", "io.github.MR901/plots-mcp"},
    "npm:krs-poland-mcp-server": {"io.github.pkolawa/krs-poland-mcp-server", "io.github.pkolawa/mcp-krs-poland"},
    "npm:@ai-capabilities-suite/mcp-debugger-server": {"io.github.Digital-Defiance/mcp-debugger", "io.github.DigitalDefiance/ts-mcp-debugger"},
}


@needs_fixtures
def test_the_eight_registry_pairs_that_share_a_package(catalog):
    _, where, keys = catalog
    assert registry_packages() == JOINED_BY_PACKAGE | UNDER_TWO_REPOSITORIES
    for package, names in (JOINED_BY_PACKAGE | UNDER_TWO_REPOSITORIES).items():
        servers = {where[("official-registry", name)] for name in names}
        assert len(servers) == 1 and keys[package] in servers, package
    for package, names in UNDER_TWO_REPOSITORIES.items():  # both repositories stay keys of the one server
        assert len([k for k, server in keys.items() if k.startswith("github:") and server == keys[package] and "#" not in k]) >= 2, package


@needs_fixtures
def test_the_registry_seed_packages_of_no_registry_are_no_identity(catalog):
    _, _, keys = catalog
    assert not [k for k in keys if k.startswith(("unknown:", "oci:", "docker:", "mcpb:"))]
    # the 2025-05 seed lists GitHub paths as npm and PyPI packages: io.github.saseq/discord-mcp has npm "SaseQ/discord-mcp"
    assert "npm:saseq/discord-mcp" not in keys and "pypi:lamaalrajih/kicad-mcp" not in keys


# ---------------------------------------------------------------- crafted listings

def test_package_names_are_normalised_per_registry():
    from pipeline.identity import package_key

    assert package_key("npm", " @Acme/Tool ") == package_key("npm", "@acme/tool") == "npm:@acme/tool"
    assert package_key("pypi", "Acme_Tool.Server") == package_key("pypi", "acme-tool-server") == "pypi:acme-tool-server"
    assert [package_key("npm", n) for n in ("acme/tool", "@acme", "tool@1.2.0", ".hidden", "")] == [None] * 5
    assert [package_key("pypi", n) for n in ("acme/tool", "-tool", "tool ")] == [None, None, "pypi:tool"]
    assert [package_key(r, "acme-tool") for r in ("oci", "docker", "mcpb", "nuget", "unknown")] == [None] * 5


def test_one_package_is_one_server_whatever_its_names_and_versions():
    entries = merge_listings([
        listing("official-registry", "com.acme/tool", registry_name="com.acme/tool", packages=[npm("@Acme/Tool", "1.0.0")]),
        listing("official-registry", "io.github.someone/acme-tool", registry_name="io.github.someone/acme-tool",
                packages=[npm("@acme/tool", "2.0.0")]),
        listing("official-registry", "io.github.a/py", registry_name="io.github.a/py", repository="https://github.com/a/py",
                packages=[pypi("Py_Tool")]),
        listing("official-registry", "com.a/py", registry_name="com.a/py", packages=[pypi("py.tool")]),
        listing("official-registry", "x/unknown-1", registry_name="x/unknown-1", packages=[Package(registry="unknown", identifier="same")]),
        listing("official-registry", "x/unknown-2", registry_name="x/unknown-2", packages=[Package(registry="unknown", identifier="same")]),
    ])
    assert groups(entries) == [
        ["official-registry:com.a/py", "official-registry:io.github.a/py"],
        ["official-registry:com.acme/tool", "official-registry:io.github.someone/acme-tool"],
        ["official-registry:x/unknown-1"], ["official-registry:x/unknown-2"],
    ]
    python = next(e for e in entries if e.repo_key)
    assert python.repo_key == "github:a/py" and "pypi:py-tool" in python.keys


def test_two_repositories_that_publish_one_package_are_one_server_the_newest_naming_it():
    entries = merge_listings([
        listing("official-registry", "io.github.o/old-name", repository="https://github.com/o/old-name", packages=[pypi("tool")],
                updated_at="2025-06-01T00:00:00Z"),
        listing("official-registry", "io.github.o/new-name", repository="https://github.com/o/new-name", packages=[pypi("tool")],
                updated_at="2025-11-01T00:00:00Z"),
        listing("official-registry", "com.o/tool", registry_name="com.o/tool", packages=[pypi("tool")]),
        listing("awesome-mcp-servers", "o/other", repository="https://github.com/o/other", packages=[pypi("other")]),
    ])
    assert len(entries) == 2
    (tool,) = [e for e in entries if "pypi:tool" in e.keys]
    assert {"github:o/old-name", "github:o/new-name", "registry:com.o/tool"} <= set(tool.keys)
    assert tool.repo_key == "github:o/new-name"  # the newest listing's repository (deviation 76)


def test_two_repositories_sharing_a_package_stay_one_server_run_after_run(db):
    both = [listing("official-registry", f"io.github.o/{name}", registry_name=f"io.github.o/{name}", repository=f"https://github.com/o/{name}",
                    packages=[pypi("tool")]) for name in ("old-name", "new-name")]
    ids = []
    for _ in range(2):
        discover(db, ("official-registry", both))
        ids.append([row["id"] for row in db.query("select id from servers where is_active = 1")])
        stored = {row["key"]: row["server_id"] for row in db.query("select key, server_id from server_keys")}
        assert stored["pypi:tool"] == stored["github:o/old-name"] == stored["github:o/new-name"] == ids[-1][0]
    assert len(ids[0]) == 1 and ids[0] == ids[1]


def test_other_listings_name_a_smithery_server_by_endpoint_page_registry_name_or_npm_package():
    smithery = [listing("smithery", name) for name in ("acme/hosted", "acme/paged", "acme/named", "acme/packaged", "acme/seeded", "bare",
                                                         "acme/other")]
    entries = merge_listings([
        *smithery,
        listing("official-registry", "ai.smithery/acme-hosted", remotes=[Remote(transport="streamable-http", url="https://server.smithery.ai/@Acme/hosted/mcp")]),
        listing("docker-mcp-catalog", "paged", homepage="https://smithery.ai/server/@acme/paged"),
        listing("official-registry", "io.github.acme/named", registry_name="io.github.Acme/named", repository="https://github.com/acme/named-server"),
        listing("official-registry", "com.acme/packaged", registry_name="com.acme/packaged", packages=[npm("@acme/packaged")]),
        listing("official-registry", "old-seed", packages=[Package(registry="unknown", identifier="@acme/seeded")]),
        listing("official-registry", "ai.smithery/bare", remotes=[Remote(transport="streamable-http", url="https://server.smithery.ai/bare/mcp")]),
        # not a Smithery name: another namespace, an unscoped npm package, another host
        listing("official-registry", "com.acme/other", registry_name="com.acme/other", packages=[npm("other")],
                remotes=[Remote(transport="sse", url="https://acme.example.org/@acme/other/mcp")]),
    ])
    assert groups(entries) == [
        ["docker-mcp-catalog:paged", "smithery:acme/paged"],
        ["official-registry:ai.smithery/acme-hosted", "smithery:acme/hosted"],
        ["official-registry:ai.smithery/bare", "smithery:bare"],
        ["official-registry:com.acme/other"],
        ["official-registry:com.acme/packaged", "smithery:acme/packaged"],
        ["official-registry:io.github.acme/named", "smithery:acme/named"],
        ["official-registry:old-seed", "smithery:acme/seeded"],
        ["smithery:acme/other"],
    ]
    named = next(e for e in entries if e.repo_key)
    assert named.repo_key == "github:acme/named-server" and "smithery:acme/named" in named.keys


def test_a_smithery_name_two_repositories_claim_stays_with_the_smithery_listing():
    entries = merge_listings([
        listing("smithery", "acme/tool", weak_repository="https://github.com/acme/tool"),
        listing("awesome-mcp-servers", "t", repository="https://github.com/acme/tool"),
        listing("official-registry", "io.github.acme/tool", registry_name="io.github.acme/tool", repository="https://github.com/elsewhere/tool"),
    ])
    by_repo = {e.repo_key: e for e in entries}
    assert set(by_repo) == {"github:acme/tool", "github:elsewhere/tool"}
    assert "smithery:acme/tool" in by_repo["github:acme/tool"].keys and "smithery:acme/tool" not in by_repo["github:elsewhere/tool"].keys


def test_every_key_is_stored_and_a_later_run_finds_the_server_by_any_of_them(db):
    discover(db, ("official-registry", [listing("official-registry", "com.acme/tool", registry_name="com.acme/tool",
                                                packages=[npm("@acme/tool"), pypi("Acme_Tool")])]))
    (server_id,) = [row["id"] for row in db.query("select id from servers")]
    stored = {row["key"]: row["server_id"] for row in db.query("select key, server_id from server_keys")}
    assert {"registry:com.acme/tool", "npm:@acme/tool", "pypi:acme-tool", "smithery:acme/tool"} <= set(stored)
    assert set(stored.values()) == {server_id}
    # later runs, each with a source that names the server only by one of those keys
    discover(db, ("smithery", [listing("smithery", "acme/tool")]))
    discover(db, ("best-of-mcp-servers", [listing("best-of-mcp-servers", "acme/tool-py", packages=[pypi("acme.tool")])]))
    discover(db, ("official-registry", [listing("official-registry", "io.github.acme/tool", registry_name="io.github.acme/tool",
                                                packages=[npm("@ACME/tool", "9.9.9")])]))
    assert [row["id"] for row in db.query("select id from servers")] == [server_id]
    records = {(r["source"], r["source_key"]) for r in db.query("select source, source_key from source_records where server_id = ?", [server_id])}
    assert records == {("official-registry", "com.acme/tool"), ("smithery", "acme/tool"), ("best-of-mcp-servers", "acme/tool-py"),
                       ("official-registry", "io.github.acme/tool")}


def test_smithery_names_in_urls():
    from pipeline.identity import smithery_name_in_url

    assert smithery_name_in_url("https://server.smithery.ai/@Owner/slug_x/mcp?api_key=x") == "@Owner/slug_x"
    assert smithery_name_in_url("https://server.smithery.ai/brave/mcp") == "brave"
    assert smithery_name_in_url("https://smithery.ai/server/@o/s") == "@o/s"
    assert [smithery_name_in_url(u) for u in ("https://smithery.ai/docs", "https://server.smithery.ai/", "https://server.smithery.ai/@o",
                                              "https://example.org/server/@o/s", "not a url", None)] == [None] * 6
