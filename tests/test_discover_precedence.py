"""Precedence in a merge: the newest facts win, a vendor's own listing beats a republication, and nothing is dropped.

Real cases come from the source snapshots (the catalog built once per module, checked against the raw records read
here without the adapters); crafted listings pin each rule down.
"""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest

from pipeline import store
from pipeline.discover import CallableSource, SourceBatch, run_discover
from pipeline.discover.bestof import combine as bestof_combine
from pipeline.discover.bestof import parse_projects
from pipeline.discover.merge import merge_listings
from pipeline.discover.pulsemcp import parse_pulsemcp
from pipeline.discover.registry import parse_registry
from pipeline.discover.smithery import parse_smithery
from pipeline.models import EnvVar, Listing, Package, Remote
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.score import run_score
from pipeline.score.registry import infos
from tests.support import NOW, SOURCE_FIXTURES, snapshot_catalog

needs_fixtures = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")
REGISTRY = SOURCE_FIXTURES / "official-registry"
# Written here independently of the code under test: aggregators that host proxies of other vendors' servers.
AGGREGATOR_DOMAINS = ("smithery.ai", "waystation.ai")
REPUBLISHERS = ("ai.smithery/", "ai.waystation/")


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


def listing(source: str, key: str, name: str | None = None, **fields) -> Listing:
    return Listing(source=source, key=key, name=key if name is None else name, raw={"key": key}, **fields)


def discover(db, *batches: tuple[str, list[Listing]], now=NOW):
    sources = [CallableSource(name, lambda items=items: SourceBatch(listings=list(items))) for name, items in batches]
    return run_discover(db, sources=sources, now=now, progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))


def only(entries):
    assert len(entries) == 1, [e.id for e in entries]
    return entries[0]


def on_aggregator(url: str | None) -> bool:
    host = (urlsplit(url or "").hostname or "").lower()
    return any(host == d or host.endswith("." + d) for d in AGGREGATOR_DOMAINS)


def package_id(registry: str, name: str) -> tuple[str, str]:
    """A package once: PyPI by PEP 503, an OCI image without its tag or digest, others case-insensitive."""
    if registry == "pypi":
        return registry, re.sub(r"[-_.]+", "-", name).lower()
    if registry == "oci":
        name = name.split("@", 1)[0]
        head, _, last = name.rpartition("/")
        name = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    return registry, name.lower()


def normal_url(url: str) -> str:
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = "" if parts.port in (None, 443 if scheme == "https" else 80) else f":{parts.port}"
    query = f"?{parts.query}" if parts.query else ""  # part of the endpoint: huggingface.co/mcp?login is not huggingface.co/mcp
    return f"{scheme}://{host}{port}{parts.path.rstrip('/')}{query}"


# ------------------------------------------------------------------ the catalog built from the real snapshots


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    db = snapshot_catalog(tmp_path_factory.mktemp("precedence") / "scoreboard.db")
    yield db
    db.close()


def row(db, server_id: str) -> dict:
    found = db["servers"].get(server_id)
    return {**found, **{k: json.loads(found[k]) for k in ("packages", "remotes", "env_vars", "attributes", "provenance")},
            "launch": json.loads(found["launch"]) if found["launch"] else None}


def records(db) -> dict[str, list[tuple[str, str, dict]]]:
    """Every server's raw records (source, key, payload), in the order they were stored."""
    found = defaultdict(list)
    for r in db.query("select server_id, source, source_key, payload from source_records order by id"):
        found[r["server_id"]].append((r["source"], r["source_key"], json.loads(r["payload"])))
    return found


@needs_fixtures
def test_the_2025_05_seed_never_beats_a_newer_registry_record(catalog):
    """29 servers have a record in the 2025-05 seed and a newer one (the 2025-12 dump); on main the seed's description
    won for 24 of them and its version for all 29. A 30th pair meets since a root link joins the repository's one listed
    folder (deviation 72: snyk's seed entry names the root of snyk/studio-mcp). Each stored value must be a newer record's."""
    shared = 0
    for server_id, recs in records(catalog).items():
        registry = [p for source, _, p in recs if source == "official-registry"]
        seed = [p for p in registry if "version_detail" in p]
        newer = [p for p in registry if "version_detail" not in p]
        if not seed or not newer:
            continue
        shared += 1
        stored = row(catalog, server_id)
        seed_only = {(p.get("description") or "").strip() for p in seed} - {(p.get("description") or "").strip() for p in newer}
        assert stored["description"] not in seed_only, server_id
        assert stored["attributes"]["version"] in {p.get("version") for p in newer}, server_id
        newer_packages = {(p.get("registryType"), p.get("identifier")) for r in newer for p in r.get("packages") or []}
        seed_packages = {(p.get("registry_name"), p.get("name")) for r in seed for p in r.get("packages") or []} - newer_packages
        if newer_packages:
            assert not seed_packages & {(p["registry"], p["identifier"]) for p in stored["packages"]}, server_id
    assert shared == 30
    # the seed: io.github.stripe/agent-toolkit, package 'unknown' stripe/agent-toolkit
    stripe = row(catalog, "stripe--agent-toolkit--tools--modelcontextprotocol")
    assert stripe["description"] == "MCP server integrating with Stripe - tools for customers, products, payments, and more."
    assert stripe["attributes"]["version"] == "0.2.4"
    assert [p["identifier"] for p in stripe["packages"]] == ["mcp/stripe"]  # the Docker image of its folder; the seed's 'unknown' is gone
    browserbase = row(catalog, "browserbase--mcp-server-browserbase")  # seed 0.0.1-seed with 'unknown' browserbase/mcp-server-browserbase
    assert browserbase["attributes"]["version"] == "2.1.1"
    assert [p["identifier"] for p in browserbase["packages"]] == ["@browserbasehq/mcp-server-browserbase", "mcp/browserbase"]


@needs_fixtures
def test_unknown_is_no_package_registry(catalog):
    """The 2025-05 seed lists 302 packages of registry 'unknown' (a GitHub path or an unchecked guess) on 301 servers: none
    becomes a package, and the variables beside them still count (io.github.tinyfish-io/agentql-mcp: AGENTQL_API_KEY)."""
    seed = json.loads((REGISTRY / "seed_2025_05_16_legacy.json").read_text(encoding="utf-8"))
    unknown = {s["name"] for s in seed for p in s.get("packages") or [] if p.get("registry_name") == "unknown"}
    servers = {server_id for server_id, recs in records(catalog).items()
               if any(source == "official-registry" and key in unknown and "version_detail" in p for source, key, p in recs)}
    assert (len(unknown), len(servers)) == (302, 301)  # two of the names are one server
    assert catalog.execute("select count(*) from servers where packages like '%\"unknown\"%'").fetchone()[0] == 0
    agentql = row(catalog, "tinyfish-io--agentql-mcp")
    assert agentql["packages"] == [] and agentql["launch"] is None and [v["name"] for v in agentql["env_vars"]] == ["AGENTQL_API_KEY"]
    assert row(catalog, "apache--iotdb")["packages"] == []  # 'unknown' apache/iotdb: a repository path, not a package


@needs_fixtures
def test_an_aggregators_proxy_is_never_probed_instead_of_the_vendors_endpoint(catalog):
    """On main, 29 servers with an ai.smithery/* or ai.waystation/* record and another listing were all probed at the
    proxy. A proxy may be the endpoint only where the server has no other public remote and no launch."""
    for server_id in records(catalog):
        stored = row(catalog, server_id)
        if on_aggregator(stored["remote_url"]):
            assert stored["launch"] is None, server_id
            assert all(on_aggregator(r["url"]) for r in stored["remotes"] if r["url"].startswith("https://")), server_id
    brave = row(catalog, "brave--brave-search-mcp-server")  # npm @brave/brave-search-mcp-server vs server.smithery.ai/brave/mcp
    assert brave["launch"]["package"] == "@brave/brave-search-mcp-server" and brave["remote_url"] is None and brave["transport"] == "stdio"
    assert [r["url"] for r in brave["remotes"]] == ["https://server.smithery.ai/brave/mcp"]  # kept, not probed
    docfork = row(catalog, "docfork--docfork-mcp")  # com.docfork/docfork-mcp's own remote vs ai.smithery's proxy
    assert docfork["remote_url"] == "https://mcp.docfork.com/mcp" == docfork["remotes"][0]["url"]
    assert row(catalog, "ref-tools--ref-tools-mcp")["remote_url"] == "https://api.ref.tools/mcp"
    attio = row(catalog, "kesslerio--attio-mcp-server")  # io.github.kesslerio/attio-mcp-server and ai.smithery/kesslerio-attio-mcp-server
    assert attio["launch"]["package"] == "attio-mcp" and attio["remote_url"] is None
    assert attio["registry_name"] == "io.github.kesslerio/attio-mcp-server"  # the vendor's listing, not the republication's
    assert "Authorization" not in {v["name"] for v in attio["env_vars"]}  # Smithery's key is the proxy's, not the server's


@needs_fixtures
def test_nothing_a_current_record_lists_is_dropped(catalog):
    """Every remote URL, package and environment variable of a server's records is in its row, once; on main 80 remote
    URLs on 22 servers (cloudflare--mcp-server-cloudflare 28, waystation-ai--mcp 22, ...) were lost. Exceptions, by rule:
    an older version of a record (same source and key) counts only for a list its newer versions lack; registry
    'unknown' is no package; a republication's variables count only when its proxy is the endpoint."""
    dump = json.loads((REGISTRY / "servers_dump_2025-12-18.json").read_text(encoding="utf-8-sig"))
    dated = {}
    for item in dump:
        meta = item["_meta"]["io.modelcontextprotocol.registry/official"]
        dated[json.dumps(item["server"], sort_keys=True)] = meta.get("updatedAt") or meta.get("publishedAt")

    def date(source: str, payload: dict) -> str | None:
        if source == "official-registry":
            return payload["version_detail"].get("release_date") if "version_detail" in payload else dated.get(json.dumps(payload, sort_keys=True))
        return payload.get("createdAt") if source == "smithery" else None

    def lists(source: str, payload: dict) -> dict[str, set]:
        remotes, packages, variables = set(), set(), set()
        if source == "official-registry":
            remotes = {normal_url(r["url"]) for r in payload.get("remotes") or [] if r.get("url")}
            for p in payload.get("packages") or []:
                registry = (p.get("registryType") or p.get("registry_name") or "").lower()
                if registry and registry != "unknown":
                    packages.add((registry, (p.get("identifier") or p.get("name")).lower()))
                variables |= {v["name"].strip() for v in p.get("environmentVariables") or p.get("environment_variables") or []}
            variables |= {h["name"].strip() for r in payload.get("remotes") or [] for h in r.get("headers") or []}
        elif source == "docker-mcp-catalog":
            remotes = {normal_url(payload["remote"]["url"])} if (payload.get("remote") or {}).get("url") else set()
            packages = {("oci", payload["image"].lower())} if payload.get("image") else set()
            config = payload.get("config") or {}
            variables = {s["env"] for s in config.get("secrets") or [] if s.get("env")} | {e["name"] for e in config.get("env") or []}
        return {"remotes": remotes, "packages": packages, "env_vars": variables - {""}}

    lost: dict[str, int] = defaultdict(int)
    lost_on: dict[str, set[str]] = defaultdict(set)
    twice: list[tuple[str, str]] = []  # a remote or package listed twice on one server
    not_first: list[str] = []
    for server_id, recs in records(catalog).items():
        stored = row(catalog, server_id)
        have = {"remotes": [normal_url(r["url"]) for r in stored["remotes"]],
                "packages": [(p["registry"], p["identifier"].lower()) for p in stored["packages"]],
                "env_vars": [v["name"] for v in stored["env_vars"]]}
        twice += [(server_id, field) for field, items in have.items() if len(items) != len(set(items))]
        versions = defaultdict(list)
        for source, key, payload in recs:
            versions[(source, key.lower())].append((date(source, payload), lists(source, payload), key))
        for found in versions.values():
            found.sort(key=lambda v: v[0] or "", reverse=True)  # newest first, undated last in their stored order
            for field in ("remotes", "packages", "env_vars"):
                if field == "env_vars" and found[0][2].lower().startswith(REPUBLISHERS) and not on_aggregator(stored["remote_url"]):
                    continue
                if found[0][0] is not None:  # dated: the newest version listing any
                    wanted = next((v[1][field] for v in found if v[1][field]), set())
                else:
                    wanted = set().union(*(v[1][field] for v in found))
                if field == "packages":
                    missing = {package_id(*p) for p in wanted} - {package_id(*p) for p in have[field]}
                else:
                    missing = wanted - set(have[field])
                lost[field] += len(missing)
                lost_on[field] |= {server_id} if missing else set()
        if stored["remote_url"] and stored["remotes"][0]["url"] != stored["remote_url"]:
            not_first.append(server_id)  # the endpoint we probe is listed first
    assert not any(lost.values()), {field: f"{lost[field]} on {len(lost_on[field])} servers: {sorted(lost_on[field])[:5]}" for field in lost}
    assert not twice, twice[:10]
    assert not not_first, not_first[:10]


@needs_fixtures
def test_a_list_naming_a_server_under_two_headings_keeps_both(catalog):
    """awesome-mcp-servers lists askbudi/roundtable at lines 141 and 449, genomoncology/biomcp at 269 and 1958: on main only
    the first heading was kept."""
    assert json.loads(catalog["servers"].get("askbudi--roundtable")["source_categories"])["awesome-mcp-servers"] == [
        "Aggregators", "Coding Agents"]
    assert json.loads(catalog["servers"].get("genomoncology--biomcp")["source_categories"])["awesome-mcp-servers"] == [
        "Biology, Medicine and Bioinformatics", "Search & Data Extraction"]


@needs_fixtures
def test_listings_carry_the_date_their_source_gives():
    dump = parse_registry(json.loads((REGISTRY / "servers_dump_2025-12-18.json").read_text(encoding="utf-8-sig")))
    airtable = next(item for item in dump.listings if item.key == "io.github.domdomegg/airtable-mcp-server")
    assert airtable.updated_at == datetime(2025, 12, 8, 13, 22, 16, 268159, tzinfo=timezone.utc)  # 1.9.6, isLatest
    seed = parse_registry(json.loads((REGISTRY / "seed_2025_05_16_legacy.json").read_text(encoding="utf-8")))
    assert next(item for item in seed.listings if item.key == "io.github.stripe/agent-toolkit").updated_at == datetime(
        2025, 5, 16, 19, 2, 0, tzinfo=timezone.utc)  # version_detail.release_date
    bare = parse_registry(json.loads((REGISTRY / "seed_2026-01.json").read_text(encoding="utf-8")))
    assert bare.listings and all(item.updated_at is None for item in bare.listings)  # server.json documents: undated
    merged = only(merge_listings([item for batch in (seed, dump, bare) for item in batch.listings
                                  if item.key == "io.github.domdomegg/airtable-mcp-server"]))
    assert merged.attributes["version"] == "1.9.6"  # the dump's, not the undated 2026 seed's 1.7.3 nor the 2025-05 seed's
    assert [p.identifier for p in merged.packages if p.registry == "mcpb"] == [
        "https://github.com/domdomegg/airtable-mcp-server/releases/download/v1.9.6/airtable-mcp-server.mcpb"]


# ------------------------------------------------------------------ crafted listings


def test_within_a_source_the_newest_listing_wins_whatever_the_order_read():
    old = listing("official-registry", "io.github.octo/tool", "", registry_name="io.github.octo/tool", repository="https://github.com/octo/tool",
                  description="old words", updated_at=at("2025-05-16"), attributes={"version": "0.1"})
    new = listing("official-registry", "io.octo/tool", "", registry_name="io.octo/tool", repository="https://github.com/octo/tool",
                  description="new words", updated_at=at("2025-12-01"), attributes={"version": "2.0"})
    undated = listing("official-registry", "io.octo/tool-beta", "", registry_name="io.octo/tool-beta", repository="https://github.com/octo/tool",
                      description="undated words", attributes={"version": "9.9"})
    for order in ([old, new, undated], [undated, old, new], [undated, new, old]):
        entry = only(merge_listings(order))
        assert (entry.description, entry.attributes["version"], entry.registry_name) == ("new words", "2.0", "io.octo/tool")
    # A source's order still ranks after the source: the registry's oldest listing beats Docker's.
    docker = listing("docker-mcp-catalog", "tool", "Tool", repository="https://github.com/octo/tool", description="docker words")
    assert only(merge_listings([docker, old])).description == "old words"


def test_an_older_version_of_a_record_fills_only_what_the_newer_leaves_empty():
    old = listing("official-registry", "io.github.octo/tool", "", registry_name="io.github.octo/tool", updated_at=at("2025-05-16"),
                  repository="https://github.com/octo/tool", homepage="https://octo.dev",
                  packages=[Package(registry="npm", identifier="octo-tool-old")], env_vars=[EnvVar(name="OLD_TOKEN", secret=True)])
    new = listing("official-registry", "io.github.octo/tool", "", registry_name="io.github.octo/tool", updated_at=at("2025-12-01"),
                  packages=[Package(registry="npm", identifier="octo-tool", version="2.0.0")])
    entry = only(merge_listings([old, new]))
    assert [p.identifier for p in entry.packages] == ["octo-tool"] and entry.launch.package == "octo-tool"
    assert entry.repository == "https://github.com/octo/tool" and entry.homepage == "https://octo.dev"  # the newer says none
    assert [v.name for v in entry.env_vars] == ["OLD_TOKEN"]  # the newer lists no variables at all
    assert {r.payload["key"] for r in entry.records} == {"io.github.octo/tool"} and len(entry.records) == 2  # both records kept


def test_a_republication_ranks_after_every_vendor_listing():
    repo = "https://github.com/octo/tool"
    republished = listing("official-registry", "ai.smithery/octo-tool", "Octo Tool (Smithery)", registry_name="ai.smithery/octo-tool",
                          repository=repo, description="republished words", updated_at=at("2025-12-01"),
                          remotes=[Remote(transport="streamable-http", url="https://server.smithery.ai/@octo/tool/mcp",
                                          auth_headers=["Authorization"])],
                          env_vars=[EnvVar(name="Authorization", secret=True)])
    vendor = listing("awesome-mcp-servers", repo, "octo/tool", repository=repo, description="vendor words")
    entry = only(merge_listings([republished, vendor]))
    assert (entry.name, entry.description, entry.registry_name) == ("octo/tool", "vendor words", "ai.smithery/octo-tool")
    assert entry.remote_url == "https://server.smithery.ai/@octo/tool/mcp"  # nothing else to reach it by: the proxy is measured
    assert [v.name for v in entry.env_vars] == ["Authorization"]  # ... and then its credential counts
    packaged = vendor.model_copy(update={"packages": [Package(registry="npm", identifier="octo-tool")]})
    entry = only(merge_listings([republished, packaged]))
    assert entry.launch.package == "octo-tool" and entry.remote_url is None and entry.transport == "stdio"
    assert entry.env_vars == [] and [r.url for r in entry.remotes] == ["https://server.smithery.ai/@octo/tool/mcp"]


def test_the_endpoint_is_the_vendors_remote_then_the_launch_then_a_proxy():
    from pipeline.discover.combine import choose_endpoint

    proxy = Remote(transport="streamable-http", url="https://server.smithery.ai/@octo/tool/mcp")
    waystation = Remote(transport="streamable-http", url="https://waystation.ai/octo/mcp")
    sse = Remote(transport="sse", url="https://mcp.octo.dev/sse")
    http = Remote(transport="streamable-http", url="https://mcp.octo.dev/mcp")
    private = Remote(transport="streamable-http", url="http://localhost:8000/mcp")
    launch = merge_listings([listing("docker-mcp-catalog", "x", packages=[Package(registry="npm", identifier="octo")])])[0].launch
    assert choose_endpoint([proxy, sse, http], launch) == (http, None)  # Streamable HTTP before SSE
    assert choose_endpoint([proxy, sse], launch) == (sse, None)
    assert choose_endpoint([proxy, waystation, private], launch) == (None, launch)
    assert choose_endpoint([private, waystation, proxy], None) == (waystation, None)
    assert choose_endpoint([private], None) == (private, None)
    assert choose_endpoint([], None) == (None, None)


def test_remotes_packages_and_variables_accumulate_once_each_with_the_endpoint_first():
    repo = "https://github.com/octo/tool"
    registry = listing("official-registry", "io.github.octo/tool", "", registry_name="io.github.octo/tool", repository=repo,
                       remotes=[Remote(transport="sse", url="https://mcp.octo.dev/sse")],
                       packages=[Package(registry="pypi", identifier="Octo_Tool", version="2.0"),
                                 Package(registry="oci", identifier="docker.io/octo/tool:2.0")],
                       env_vars=[EnvVar(name="OCTO_TOKEN", secret=True, description="registry's")])
    docker = listing("docker-mcp-catalog", "octo", "Octo", repository=repo,
                     remotes=[Remote(transport="streamable-http", url="https://MCP.octo.dev/mcp/"), Remote(transport="sse", url="https://mcp.octo.dev/sse/")],
                     packages=[Package(registry="oci", identifier="docker.io/octo/tool:1.0"), Package(registry="oci", identifier="mcp/octo")],
                     env_vars=[EnvVar(name="OCTO_TOKEN", secret=True, description="docker's"), EnvVar(name="OCTO_REGION")])
    bestof = listing("best-of-mcp-servers", "octo/tool", repository=repo, packages=[Package(registry="pypi", identifier="octo-tool")])
    entry = only(merge_listings([bestof, docker, registry]))
    assert [r.url for r in entry.remotes] == ["https://MCP.octo.dev/mcp/", "https://mcp.octo.dev/sse"]  # the chosen one first
    assert entry.remote_url == "https://MCP.octo.dev/mcp/" and entry.transport == "streamable-http"
    assert entry.provenance["remote_url"] == "docker-mcp-catalog" and entry.provenance["remotes"] == "docker-mcp-catalog"
    assert [(p.registry, p.identifier) for p in entry.packages] == [("pypi", "Octo_Tool"), ("oci", "docker.io/octo/tool:2.0"), ("oci", "mcp/octo")]
    assert [(v.name, v.description) for v in entry.env_vars] == [("OCTO_TOKEN", "registry's"), ("OCTO_REGION", None)]


def test_the_store_changes_the_endpoint_whole_and_the_probe_takes_the_chosen_one(db):
    repo = "https://github.com/octo/tool"
    proxy = listing("official-registry", "ai.smithery/octo-tool", "", registry_name="ai.smithery/octo-tool", repository=repo,
                    remotes=[Remote(transport="streamable-http", url="https://server.smithery.ai/@octo/tool/mcp")])
    discover(db, ("official-registry", [proxy]))
    assert db["servers"].get("octo--tool")["remote_url"] == "https://server.smithery.ai/@octo/tool/mcp"
    vendor = listing("official-registry", "io.github.octo/tool", "", registry_name="io.github.octo/tool", repository=repo,
                     packages=[Package(registry="npm", identifier="octo-tool")])
    discover(db, ("official-registry", [proxy, vendor]), now=NOW + timedelta(hours=1))
    server = next(s for s in store.active_servers(db) if s.id == "octo--tool")
    assert server.launch is not None and server.launch.package == "octo-tool"
    assert server.remote_url is None and server.transport == "stdio"  # the stored proxy URL went with the old choice
    assert [r.url for r in server.remotes] == ["https://server.smithery.ai/@octo/tool/mcp"] and server.provenance["launch"] == "official-registry"
    own = listing("docker-mcp-catalog", "octo", "Octo", repository=repo, remotes=[Remote(transport="sse", url="https://mcp.octo.dev/sse")])
    discover(db, ("official-registry", [proxy, vendor]), ("docker-mcp-catalog", [own]), now=NOW + timedelta(hours=2))
    server = next(s for s in store.active_servers(db) if s.id == "octo--tool")
    assert (server.remote_url, server.transport, server.launch) == ("https://mcp.octo.dev/sse", "sse", None)
    assert server.provenance["remote_url"] == server.provenance["transport"] == "docker-mcp-catalog" and "launch" not in server.provenance


def test_sources_give_their_listings_dates():
    registry = parse_registry({"servers": [{"server": {"name": "io.github.octo/tool", "version": "1.0"},
                                            "_meta": {"io.modelcontextprotocol.registry/official": {
                                                "isLatest": True, "publishedAt": "2025-09-01T00:00:00Z",
                                                "updatedAt": "2025-10-02T03:04:05.123456789Z"}}}]})
    assert registry.listings[0].updated_at == datetime(2025, 10, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    legacy = parse_registry([{"name": "io.github.octo/old", "version_detail": {"version": "0.1", "release_date": "2025-05-16T18:56:49Z"},
                              "packages": [{"registry_name": "unknown", "name": "octo/old", "environment_variables": [{"name": "OCTO_KEY"}]}]}])
    assert legacy.listings[0].updated_at == at("2025-05-16T18:56:49") and legacy.listings[0].packages == []
    assert [v.name for v in legacy.listings[0].env_vars] == ["OCTO_KEY"]
    smithery = parse_smithery({"servers": [{"qualifiedName": "@octo/tool", "createdAt": "2025-04-10T17:21:31.916Z"},
                                           {"qualifiedName": "octo/other", "createdAt": "not a date"}]})
    assert [item.updated_at for item in smithery.listings] == [datetime(2025, 4, 10, 17, 21, 31, 916000, tzinfo=timezone.utc), None]
    pulse = parse_pulsemcp({"servers": [{"server": {"name": "com.octo/tool", "version": "1.0"}, "_meta": {
        "io.modelcontextprotocol.registry/official": {"isLatest": True, "updatedAt": "2025-10-01T00:00:00Z"},
        "com.pulsemcp/server-version": {"isLatest": True, "publishedAt": "2025-11-01T00:00:00Z", "updatedAt": "2025-11-02T00:00:00Z"}}}]})
    assert pulse.listings[0].updated_at == at("2025-11-02")  # PulseMCP's own date for its listing
    projects, _ = parse_projects("projects:\n  - {name: Tool, github_id: octo/tool}\n  - {name: Other, github_id: octo/other}\n")
    history = ",name,github_id,star_count\n0,Tool,octo/tool,5\n"
    batch = bestof_combine(projects, [("2025-08-04_projects.csv", history), ("2026-07-01_projects.csv", history)])
    assert [item.updated_at for item in batch.listings] == [at("2026-07-01"), None]  # the newest file with its row; no row: undated


def test_the_page_and_its_json_show_every_remote_package_and_variable(db, tmp_path):
    repo = "https://github.com/octo/tool"
    discover(db, ("official-registry", [
        listing("official-registry", "io.github.octo/tool", "Octo", registry_name="io.github.octo/tool", repository=repo,
                remotes=[Remote(transport="sse", url="https://mcp.octo.dev/sse")], packages=[Package(registry="npm", identifier="octo-tool")],
                env_vars=[EnvVar(name="OCTO_TOKEN", secret=True, required=True)]),
        listing("official-registry", "ai.smithery/octo-tool", "", registry_name="ai.smithery/octo-tool", repository=repo,
                remotes=[Remote(transport="streamable-http", url="https://server.smithery.ai/@octo/tool/mcp")]),
    ]), ("docker-mcp-catalog", [listing("docker-mcp-catalog", "octo", "Octo", repository=repo,
                                        packages=[Package(registry="oci", identifier="mcp/octo")], env_vars=[EnvVar(name="OCTO_REGION")])]))
    run_score(db, servers=store.active_servers(db), now=NOW)
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    facts = json.loads((tmp_path / "site" / "api" / "servers" / "octo--tool.json").read_text())["server"]
    assert facts["remote_url"] == "https://mcp.octo.dev/sse"  # the vendor's own SSE endpoint, not the proxy's Streamable HTTP
    assert [r["url"] for r in facts["remotes"]] == ["https://mcp.octo.dev/sse", "https://server.smithery.ai/@octo/tool/mcp"]
    assert facts["packages"] == ["npm: octo-tool", "oci: mcp/octo"]
    # a null is left out of a server's JSON (deviation 106)
    assert facts["env_vars"] == [{"name": "OCTO_TOKEN", "secret": True, "required": True}, {"name": "OCTO_REGION", "secret": False}]
    page = (tmp_path / "site" / "servers" / "octo--tool.html").read_text()
    assert "Remote endpoint (sse): https://mcp.octo.dev/sse · the endpoint we probe" in page
    assert "server.smithery.ai/@octo/tool/mcp</li>" in page and "Published package: oci: mcp/octo" in page
    assert "Environment variable: <code>OCTO_TOKEN</code> (secret) · required" in page and "<code>OCTO_REGION</code>" in page
