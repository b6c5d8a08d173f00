"""The source registry (pipeline/discover/sources.py): seed order, a merge precedence for every source, and a new
source that plugs in with one module plus one registry line (and its place in identity.SOURCE_PRIORITY)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from pipeline import identity
from pipeline.config import Settings
from pipeline.discover import CallableSource, SourceBatch, online_sources, run_discover, snapshot_sources, sources
from pipeline.discover.base import parse_items, read_json_snapshot, text
from pipeline.models import Listing
from pipeline.progress import Progress
from pipeline.score import methodology
from tests.support import NOW


def unranked() -> list[str]:
    """Registered sources with no place in the merge precedence."""
    return [name for name in sources.names() if name not in identity.SOURCE_PRIORITY]


def test_the_registry_keeps_the_seed_order():
    assert sources.names() == [
        "official-registry", "awesome-mcp-servers", "glama", "pulsemcp", "github-topics", "smithery", "best-of-mcp-servers", "docker-mcp-catalog",
    ]


def test_every_registered_source_has_a_merge_precedence():
    assert unranked() == []  # a new source needs its place in pipeline.identity.SOURCE_PRIORITY too


# ---------------------------------------------------------------- a ninth source: one module and one registry line
# What would be pipeline/discover/shelf.py: a pure parser of the real payload, a snapshot reader and a fetch.

SHELF = "mcp-shelf"
SHELF_URL = "https://shelf.example/api/servers"


def parse_shelf(payload: Any, where: str = SHELF) -> SourceBatch:
    return parse_items(payload, "items", where, _listing)


def _listing(item: Any) -> Listing:
    return Listing(source=SHELF, key=item["slug"], name=item["title"], repository=text(item.get("repo")), description=text(item.get("about")),
                   raw=item)


def read_snapshot(directory) -> SourceBatch:
    return read_json_snapshot(directory, parse_shelf)


def fetch(http, token: str | None) -> SourceBatch:
    payload, _ = http.get_json(SHELF_URL, headers={"Authorization": f"Bearer {token}"} if token else None)
    return parse_shelf(payload, "page 1")


PAYLOAD = {"items": [
    {"slug": "octo-tool", "title": "Octo Tool", "repo": "https://github.com/Octo/Tool.git", "about": "From the shelf"},
    {"slug": "weather", "title": "Weather", "repo": "https://github.com/acme/weather", "about": "Forecasts"},
    {"slug": "broken"},
]}
# The registry line (appended to sources.SOURCES) and the precedence (its place in identity.SOURCE_PRIORITY).
SHELF_SOURCE = sources.SourceSpec(SHELF, read_snapshot, lambda http, settings: fetch(http, settings.github_token))


@pytest.fixture
def shelf(monkeypatch) -> sources.SourceSpec:
    monkeypatch.setattr(sources, "SOURCES", [*sources.SOURCES, SHELF_SOURCE])  # undone after the test
    monkeypatch.setattr(identity, "SOURCE_PRIORITY", (*identity.SOURCE_PRIORITY, SHELF))
    return SHELF_SOURCE


def test_a_source_registered_without_a_precedence_is_caught(monkeypatch):
    monkeypatch.setattr(sources, "SOURCES", [*sources.SOURCES, SHELF_SOURCE])
    assert unranked() == [SHELF]


def test_a_new_source_is_read_from_a_snapshot_and_merged_with_provenance(shelf, db, tmp_path):
    snapshot = tmp_path / "snapshot"
    (snapshot / SHELF).mkdir(parents=True)
    (snapshot / SHELF / "servers.json").write_text(json.dumps(PAYLOAD))
    found = snapshot_sources(snapshot)
    assert [s.name for s in found] == [SHELF]
    with pytest.raises(ValueError, match=f"unknown source\\(s\\): nope; known: .*docker-mcp-catalog, {SHELF}$"):
        snapshot_sources(snapshot, ["nope"])
    registry_listing = Listing(source="official-registry", key="io.github.octo/tool", name="", registry_name="io.github.octo/tool",
                               repository="https://github.com/octo/tool", description="From the registry", raw={})
    official = CallableSource("official-registry", lambda: SourceBatch(listings=[registry_listing]))
    report = run_discover(db, sources=[*found, official], now=NOW, progress=Progress("discover", 3, stream=io.StringIO()))
    assert report.counts["listed:mcp-shelf"] == 2 and report.counts["new"] == 2 and report.failures == 1
    rows = {row["id"]: row for row in db.query("select * from servers where is_active = 1")}
    assert set(rows) == {"octo--tool", "acme--weather"}
    octo, weather = rows["octo--tool"], rows["acme--weather"]
    assert json.loads(octo["sources"]) == [SHELF, "official-registry"] and json.loads(weather["sources"]) == [SHELF]
    provenance = json.loads(octo["provenance"])
    assert octo["description"] == "From the registry" and provenance["description"] == "official-registry"  # the registry ranks first
    assert octo["name"] == "Octo Tool" and provenance["name"] == SHELF  # the registry has no title: the shelf's
    assert weather["description"] == "Forecasts" and json.loads(weather["provenance"])["description"] == SHELF
    records = {(r["source"], r["source_key"]) for r in db.query("select source, source_key from source_records")}
    assert {(SHELF, "octo-tool"), (SHELF, "weather"), ("official-registry", "io.github.octo/tool")} <= records
    problems = [r["problem"] for r in db.query("select problem from discovery_problems where source = ?", [SHELF])]
    assert problems == ["servers.json: server 2: missing field 'title'"]
    assert f"| {len(identity.SOURCE_PRIORITY)} | `{SHELF}` |" in methodology.source_priority_table()


class FakeHTTP:
    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, str] | None]] = []

    def get_json(self, url: str, *, params=None, headers=None):
        self.asked.append((url, headers))
        return PAYLOAD, {}


def test_a_new_source_is_fetched_live_with_its_credential(shelf):
    http = FakeHTTP()
    [live] = online_sources(http, Settings(github_token="test-token"), [SHELF])
    batch = live.read()
    assert [listing.key for listing in batch.listings] == ["octo-tool", "weather"] and len(batch.problems) == 1
    assert http.asked == [(SHELF_URL, {"Authorization": "Bearer test-token"})]
    assert [s.name for s in online_sources(http, Settings())][-1] == SHELF


def test_the_new_source_leaves_no_trace():
    assert SHELF not in sources.names() and SHELF not in identity.SOURCE_PRIORITY
