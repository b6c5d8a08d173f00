"""Each adapter's online fetch against a local HTTP server replaying the real response shapes:
pagination to the end, 429 with Retry-After, 5xx with backoff, credentials, and sources that fail."""

from __future__ import annotations

import io
import json
import re
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pipeline.discover import awesome, bestof, docker_catalog, downloads, github_topics, glama, pulsemcp, registry, smithery
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.progress import Progress
from tests.support import SOURCE_FIXTURES, glama_item

needs_fixtures = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")
Reply = tuple[int, dict[str, str], bytes]


@dataclass
class Replay:
    """A local HTTP server: `routes` maps a path to a handler of (query, headers) -> (status, headers, body).
    `faults` queues replies served before the handler for a path (a 429, a 503, …), once each."""

    routes: dict[str, Callable[[dict[str, str], dict[str, str]], Reply]] = field(default_factory=dict)
    faults: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)
    url: str = ""

    def serve(self, path: str, handler) -> None:
        self.routes[path] = handler

    def fail_once(self, path: str, *replies: Reply) -> None:
        self.faults.setdefault(path, []).extend(replies)


@pytest.fixture
def replay():
    state = Replay()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append((parts.path, query, headers))
            if state.faults.get(parts.path):
                status, extra, body = state.faults[parts.path].pop(0)
            elif parts.path in state.routes:
                status, extra, body = state.routes[parts.path](query, headers)
            else:
                status, extra, body = 404, {}, b"not found"
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def http():
    """A SourceHTTP whose waits are recorded instead of slept: the tests never sleep."""
    with httpx.Client(timeout=10) as client:
        waits: list[float] = []
        source_http = SourceHTTP(client, retries=3, backoff=0.5, sleep=waits.append)
        source_http.waits = waits  # type: ignore[attr-defined]
        yield source_http


def as_json(value, status=200, headers=None) -> Reply:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()


def paged(items: list, size: int, page: int) -> list:
    return items[(page - 1) * size: page * size]


@needs_fixtures
def test_registry_follows_cursors_and_rides_out_429_and_503(replay, http):
    items = json.loads((SOURCE_FIXTURES / "official-registry" / "servers_dump_2025-12-18.json").read_text(encoding="utf-8-sig"))
    latest = [i for i in items if i["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"]]

    def servers(query, headers):
        assert query["version"] == "latest" and query["limit"] == "100"
        start = int(query.get("cursor", "0"))
        page = latest[start:start + 100]
        metadata = {"count": len(page), **({"nextCursor": str(start + 100)} if start + 100 < len(latest) else {})}
        return as_json({"servers": page, "metadata": metadata})

    replay.serve("/v0.1/servers", servers)
    replay.fail_once("/v0.1/servers", as_json({"error": "slow down"}, 429, {"Retry-After": "7"}), (503, {}, b"busy"))
    batch = registry.fetch(http, base_url=replay.url)
    assert batch.complete and not batch.problems
    assert len(batch.listings) == len(latest) == 1108
    assert http.waits == [7.0, 1.0]  # Retry-After honoured; then exponential backoff (0.5 * 2)
    assert len(replay.requests) == 12 + 2
    incremental = registry.fetch(http, base_url=replay.url, updated_since="2025-12-01T00:00:00Z")
    assert replay.requests[-1][1]["updated_since"] == "2025-12-01T00:00:00Z"
    assert not incremental.complete  # an incremental sync lists only what changed: it must not deactivate the rest


def test_registry_cursor_loops_and_dead_sources_end_incomplete(replay, http):
    replay.serve("/v0.1/servers", lambda q, h: as_json({"servers": [{"server": {"name": "io.x/a"}}], "metadata": {"nextCursor": "same"}}))
    looping = registry.fetch(http, base_url=replay.url)
    assert not looping.complete and "repeats" in looping.problems[-1] and len(looping.listings) == 2
    replay.serve("/v0.1/servers", lambda q, h: (503, {}, b"down"))
    dead = registry.fetch(http, base_url=replay.url)
    assert not dead.complete and "gave up after 4 attempts" in dead.problems[0] and http.waits[-3:] == [0.5, 1.0, 2.0]


@needs_fixtures
def test_awesome_readme_over_http(replay, http):
    readme = (SOURCE_FIXTURES / "awesome-mcp-servers" / "README.md").read_bytes()
    replay.serve("/README.md", lambda q, h: (200, {"Content-Type": "text/plain; charset=utf-8"}, readme))
    replay.fail_once("/README.md", (500, {}, b"oops"), (502, {}, b"oops"))
    batch = awesome.fetch(http, url=f"{replay.url}/README.md")
    assert batch.complete and len(batch.listings) == 2172 and http.waits == [0.5, 1.0]
    assert replay.requests[0][2]["user-agent"].startswith("mcp-scoreboard")


def test_glama_relay_pages_with_a_token(replay, http):
    items = [glama_item(i) for i in range(250)]

    def servers(query, headers):
        assert headers.get("authorization") == "Bearer t0k"
        start = int(query.get("after", "0"))
        end = start + int(query["first"])
        return as_json({"servers": items[start:end],
                        "pageInfo": {"hasNextPage": end < len(items), "hasPreviousPage": start > 0, "startCursor": str(start),
                                     "endCursor": str(end)}})

    replay.serve("/v1/servers", servers)
    replay.fail_once("/v1/servers", as_json({}, 429, {"X-Retry-After": "3"}))
    batch = glama.fetch(http, token="t0k", base_url=replay.url)
    assert batch.complete and len(batch.listings) == 250 and http.waits == [3.0]
    assert [q.get("after") for _, q, _ in replay.requests[1:]] == [None, "100", "200"]


@needs_fixtures
def test_pulsemcp_v0beta_next_links_and_v01_with_key(replay, http):
    camel = json.loads((SOURCE_FIXTURES / "pulsemcp" / "DOCUMENTED_v0beta_servers_captured_by_camel-ai.json").read_text())
    base = camel["example_1_query_github"]["servers"]
    items = [{**item, "name": f"{item['name']} {i}", "url": f"{item['url']}-{i}"} for i in range(3) for item in base]

    def beta(query, headers):
        offset = int(query.get("offset", "0"))
        page = items[offset:offset + 5]
        following = f"{replay.url}/v0beta/servers?offset={offset + 5}" if offset + 5 < len(items) else None
        return as_json({"servers": page, "next": following, "total_count": len(items)})

    replay.serve("/v0beta/servers", beta)
    batch = pulsemcp.fetch(http, base_url=replay.url)
    assert batch.complete and len(batch.listings) == 12 and len({listing.key for listing in batch.listings}) == 12
    dump = json.loads((SOURCE_FIXTURES / "official-registry" / "servers_dump_2025-12-18.json").read_text(encoding="utf-8-sig"))[:3]
    for item in dump:
        item["_meta"]["com.pulsemcp/server"] = {"visitorsEstimateMostRecentWeek": 120, "visitorsEstimateLastFourWeeks": 400, "isOfficial": True}

    def v01(query, headers):
        if headers.get("x-api-key") != "k" or headers.get("x-tenant-id") != "t":
            return as_json({"error": "unauthorized"}, 401)
        if query.get("cursor") is None:
            return as_json({"servers": dump[:2], "metadata": {"count": 2, "nextCursor": "c2"}})
        return as_json({"servers": dump[2:], "metadata": {"count": 1}})

    replay.serve("/v0.1/servers", v01)
    keyed = pulsemcp.fetch(http, api_key="k", tenant="t", base_url=replay.url)
    assert keyed.complete and {listing.source for listing in keyed.listings} == {"pulsemcp"}
    assert all(listing.metrics == {"pulsemcp_visitors_week": 120.0, "pulsemcp_visitors_4w": 400.0} for listing in keyed.listings)
    refused = pulsemcp.fetch(http, api_key="wrong", tenant="t", base_url=replay.url)
    assert not refused.complete and "HTTP 401" in refused.problems[0]


def test_github_topics_split_windows_over_the_search_cap_and_follow_link_headers(replay, http):
    from datetime import date

    def item(n):
        return {"id": n, "full_name": f"owner{n}/repo{n}", "name": f"repo{n}", "html_url": f"https://github.com/owner{n}/repo{n}", "description": "d",
                "stargazers_count": n, "forks_count": 0, "language": "Python", "topics": ["mcp-server"], "archived": False, "fork": False,
                "license": {"spdx_id": "MIT"}, "owner": {"login": f"owner{n}"}}

    def search(query, headers):
        assert headers.get("authorization") == "Bearer gh"
        q = query["q"]
        topic, window = q.split(" ")
        start, end = window.removeprefix("created:").split("..")
        whole = (start, end) == ("2024-11-01", "2026-11-30")  # the full window holds "too many" and must be split
        total = 1500 if whole else 150
        page = int(query.get("page", "1"))
        offset = (0 if start < "2025-06" else 1000) + (0 if topic.endswith("mcp-server") else 5000)
        items = [item(offset + (page - 1) * 100 + i) for i in range(min(100, total - (page - 1) * 100))]
        link = f'<{replay.url}/search/repositories?q={q}&page={page + 1}&per_page=100>; rel="next"' if page * 100 < total and not whole else ""
        return as_json({"total_count": total, "incomplete_results": False, "items": items}, headers={"Link": link} if link else {})

    replay.serve("/search/repositories", search)
    batch = github_topics.fetch(http, token="gh", api_url=replay.url, today=date(2026, 11, 30))
    assert batch.complete and not batch.problems
    assert len(batch.listings) == 2 * 2 * 150  # two topics, each split into two windows of 150
    windows = sorted({q["q"] for _, q, _ in replay.requests})
    assert "topic:mcp-server created:2024-11-01..2026-11-30" in windows and len(windows) == 6


@needs_fixtures
def test_smithery_pages_need_a_key(replay, http):
    dump = json.loads((SOURCE_FIXTURES / "smithery" / "servers_list_dump_2025-04.json").read_text())["servers"]

    def servers(query, headers):
        if headers.get("authorization") != "Bearer sk":
            return as_json({"error": "missing key"}, 401)
        page, size = int(query["page"]), int(query["pageSize"])
        return as_json({"servers": paged(dump, size, page), "pagination": {"currentPage": page, "pageSize": size, "totalPages": -(-len(dump) // size),
                                                                            "totalCount": len(dump)}})

    replay.serve("/servers", servers)
    batch = smithery.fetch(http, "sk", base_url=replay.url)
    assert batch.complete and len(batch.listings) == 5186 and len(replay.requests) == 52
    assert not smithery.fetch(http, None, base_url=replay.url).complete  # no key: says so, fetches nothing
    refused = smithery.fetch(http, "bad", base_url=replay.url)
    assert not refused.complete and "HTTP 401" in refused.problems[0]


@needs_fixtures
def test_best_of_raw_files_and_contents_listing(replay, http):
    root = SOURCE_FIXTURES / "best-of-mcp-servers"
    replay.serve("/raw/projects.yaml", lambda q, h: (200, {}, (root / "projects.yaml").read_bytes()))
    for csv_file in (root / "history").glob("*_projects.csv"):
        replay.serve(f"/raw/history/{csv_file.name}", lambda q, h, f=csv_file: (200, {}, f.read_bytes()))
    replay.serve("/contents/history", lambda q, h: as_json([{"name": p.name, "type": "file"} for p in sorted((root / "history").iterdir())]))
    batch = bestof.fetch(http, raw_base=f"{replay.url}/raw", contents_url=f"{replay.url}/contents/history")
    assert batch.complete and len(batch.listings) == 405 and len(batch.aliases) == 14


@needs_fixtures
def test_docker_catalog_tarball_and_hub_pull_counts(replay, http):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted((SOURCE_FIXTURES / "docker-mcp-catalog" / "servers").rglob("*")):
            if path.is_file():
                archive.add(path, arcname=f"docker-mcp-registry-818bf16/servers/{path.parent.name}/{path.name}")
    tarball = buffer.getvalue()
    replay.serve("/tarball", lambda q, h: (200, {"Content-Type": "application/gzip"}, tarball))
    hub_rows = [{"name": "airtable-mcp-server", "namespace": "mcp", "pull_count": 12345, "star_count": 1},
                {"name": "github", "namespace": "mcp", "pull_count": 99}]

    def hub(query, headers):
        page = int(query.get("page", "1"))
        following = f"{replay.url}/hub?page={page + 1}" if page == 1 else None
        return as_json({"count": 2, "next": following, "previous": None, "results": hub_rows[page - 1:page]})

    replay.serve("/hub", hub)
    replay.fail_once("/hub", as_json({}, 429, {"Retry-After": "2"}))
    batch = docker_catalog.fetch(http, tarball_url=f"{replay.url}/tarball", hub_url=f"{replay.url}/hub")
    assert batch.complete and len(batch.listings) == 328 and http.waits == [2.0]
    airtable = next(listing for listing in batch.listings if listing.key == "airtable-mcp-server")
    assert airtable.metrics == {"docker_pulls": 12345.0}
    replay.serve("/hub", lambda q, h: (500, {}, b"down"))
    without_hub = docker_catalog.fetch(http, tarball_url=f"{replay.url}/tarball", hub_url=f"{replay.url}/hub")
    assert without_hub.complete and len(without_hub.listings) == 328 and without_hub.problems  # pull counts are enrichment


def test_download_counts_bulk_scoped_and_pypi(replay, http):
    replay.serve("/npm/downloads/point/last-week/alpha,beta", lambda q, h: as_json({
        "alpha": {"downloads": 10, "start": "2026-11-22", "end": "2026-11-28", "package": "alpha"}, "beta": None}))
    replay.serve("/npm/downloads/point/last-week/@scope/gamma",
                 lambda q, h: as_json({"downloads": 7, "start": "s", "end": "e", "package": "@scope/gamma"}))
    replay.serve("/pypi/api/packages/mcp-server-time/recent",
                 lambda q, h: as_json({"data": {"last_week": 321}, "package": "mcp-server-time", "type": "recent_downloads"}))
    replay.serve("/pypi/api/packages/broken/recent", lambda q, h: (404, {}, b"no such package"))
    counter = downloads.DownloadCounter(http, f"{replay.url}/npm", f"{replay.url}/pypi")
    stream = io.StringIO()
    counts, problems = counter.weekly([("npm", "alpha"), ("npm", "beta"), ("npm", "@scope/gamma"), ("pypi", "MCP_Server.Time"), ("pypi", "broken")],
                                      progress=Progress("discover", 1, stream=stream))
    assert counts == {("npm", "alpha"): 10.0, ("npm", "@scope/gamma"): 7.0, ("pypi", "mcp-server-time"): 321.0}
    assert len(problems) == 1 and problems[0].startswith("pypi broken:")
    # A line per request (the first, each failure and the last at least), each with its count of the four, rate and time left.
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[downloads] 1/4 ") and lines[-1].startswith("[downloads] 4/4 ")
    assert all(re.search(r" \d+\.\d/s ~ *\d+s left  ", line) for line in lines)
    assert "pypi broken: failed: " in lines[-1] and "npm alpha,beta: 1 counts" in lines[0]


def test_oversized_bodies_are_refused(replay, http):
    replay.serve("/big", lambda q, h: (200, {}, b"x" * 5000))
    http.max_body = 1000
    with pytest.raises(SourceError, match="body over 1000 bytes"):
        http.get_text(f"{replay.url}/big")


def test_github_a_single_day_over_the_cap_is_read_as_far_as_search_allows_and_said(replay, http):
    from datetime import date

    day = date(2026, 11, 30)

    def search(query, headers):  # 4,321 repositories created on one day; none on any other
        start, end = query["q"].split("created:")[1].split("..")
        if not start <= day.isoformat() <= end:
            return as_json({"total_count": 0, "incomplete_results": False, "items": []})
        page = int(query.get("page", "1"))
        items = [{"id": page * 1000 + i, "full_name": f"o{page}/r{i}", "name": f"r{i}", "html_url": f"https://github.com/o{page}/r{i}"}
                 for i in range(100)]
        link = f'<{replay.url}/search/repositories?q={query["q"]}&page={page + 1}&per_page=100>; rel="next"' if page < 10 else ""
        return as_json({"total_count": 4321, "incomplete_results": False, "items": items}, headers={"Link": link} if link else {})

    replay.serve("/search/repositories", search)
    batch = github_topics.fetch(http, api_url=replay.url, today=day)
    windows = {q["q"].split(" ")[1] for _, q, _ in replay.requests}
    assert f"created:{day.isoformat()}..{day.isoformat()}" in windows  # halved down to one day
    assert not batch.complete and any("only the first 1000 are reachable" in p for p in batch.problems)
    assert len({listing.key for listing in batch.listings}) == 1000  # ten pages of the last window, nothing lost silently
