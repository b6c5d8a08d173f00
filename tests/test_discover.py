"""Discovery merges into one row per server, keeps provenance, and deactivates rather than deletes."""

from __future__ import annotations

import json
from datetime import timedelta

from pipeline import store
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from tests.support import CATALOG_SIZE, NOW, ListSource, entry, quiet


def test_discovering_twice_keeps_one_row_per_server(db):
    for day in range(2):
        report = run_discover(db, sources=[LocalCatalogSource()], now=NOW + timedelta(days=day), progress=quiet(1))
    assert db["servers"].count == CATALOG_SIZE
    assert report.counts == {"new": 0, "updated": 0, "unchanged": CATALOG_SIZE, "deactivated": 0, "merged": 0, "skipped": 0,
                             "listed:local": CATALOG_SIZE}
    assert db["source_records"].count == CATALOG_SIZE  # identical content is stored once
    row = db["servers"].get("mcp-server-time")
    assert row["first_seen_at"].startswith("2026-11-29") and row["last_seen_at"].startswith("2026-11-30")


def test_server_missing_from_every_source_is_deactivated_not_deleted(db):
    run_discover(db, sources=[ListSource("a", [entry("x"), entry("y")]), ListSource("b", [entry("y")])], now=NOW, progress=quiet(2))
    report = run_discover(db, sources=[ListSource("a", []), ListSource("b", [entry("y")])], now=NOW + timedelta(hours=1), progress=quiet(2))
    assert report.counts["deactivated"] == 1
    x, y = db["servers"].get("x"), db["servers"].get("y")
    assert x["is_active"] == 0 and x["deactivated_at"]
    assert y["is_active"] == 1 and json.loads(y["sources"]) == ["b"]
    assert [s.id for s in store.active_servers(db)] == ["y"]
    run_discover(db, sources=[ListSource("a", [entry("x")])], now=NOW + timedelta(hours=2), progress=quiet(1))
    assert db["servers"].get("x")["is_active"] == 1


def test_empty_fields_never_blank_stored_ones_and_links_accumulate(db):
    first = entry("s", description="A server that reads things.", external_links={"glama": "https://glama.example/s"})
    run_discover(db, sources=[ListSource("a", [first])], now=NOW, progress=quiet(1))
    second = entry("s", external_links={"smithery": "https://smithery.example/s"})
    run_discover(db, sources=[ListSource("b", [second])], now=NOW, progress=quiet(1))
    row = db["servers"].get("s")
    assert row["description"] == "A server that reads things."
    assert json.loads(row["external_links"]) == {"glama": "https://glama.example/s", "smithery": "https://smithery.example/s"}
    assert json.loads(row["sources"]) == ["a", "b"]
    assert {r["source"] for r in db["source_records"].rows} == {"a", "b"}


def test_malformed_entries_are_counted_and_the_rest_stored(db):
    report = run_discover(db, sources=[ListSource("a", [entry("ok")], problems=["a.json: item 3: no id"])], now=NOW, progress=quiet(1))
    assert report.counts["skipped"] == 1 and report.failures == 1
    assert db["servers"].count == 1
