"""Leaderboards: classification, pre-rendered pages (paging, tier groups, category boards) that work without JavaScript."""

from __future__ import annotations

import json
import re

from pipeline import store
from pipeline.classify import classify
from pipeline.discover import run_discover
from pipeline.render.boards import PAGE_SIZE, board_pages
from pipeline.score.registry import infos
from tests.support import FLEET, HOSTILE, NOW, ListSource, entry, internal_links, quiet


def test_classification_weights_places_and_falls_back_to_other():
    assert classify("postgres-mcp", "Query your database", None, None, None).category == "Database"
    assert classify("x", "Send Slack messages", None, None, None).category == "Communication"
    # the name counts three times the description: a Stripe server described with Slack words is Finance
    assert classify("stripe-tools", "post to slack", None, None, None).category == "Finance"
    assert classify("widget", "A Model Context Protocol server", None, None, None).category == "Other"
    found = classify("notion-sync", "Copy Notion pages to Postgres", "https://github.com/acme/notion-sync", None, "@acme/notion-sync")
    assert found.platforms == ("Notion", "PostgreSQL")  # Notion in name, repo path and description outweighs Postgres
    assert classify("a", None, "https://github.com/supabase/mcp", None, None).platforms == ("Supabase",)


def test_catalog_keeps_category_current(tmp_path):
    db = store.open_db(tmp_path / "s.db")
    run_discover(db, sources=[ListSource("test", [entry("one", description="Query a Postgres database")])], now=NOW, progress=quiet(1))
    assert store.active_servers(db)[0].category == "Database" and store.active_servers(db)[0].platforms == ["PostgreSQL"]
    run_discover(db, sources=[ListSource("test", [entry("one", description="Send Slack messages")])], now=NOW, progress=quiet(1))
    assert (store.active_servers(db)[0].category, store.active_servers(db)[0].platforms) == ("Communication", ["Slack"])


def test_pager_arithmetic():
    rows = [{"id": str(i), "visibility": "limited" if i > 150 else "assessed"} for i in range(1, 251)]
    pages = board_pages("review/", rows)
    assert [p["path"] for p in pages] == ["review/index.html", "review/page/2/index.html", "review/page/3/index.html"]
    assert [p["root"] for p in pages] == ["../", "../../../", "../../../"]
    assert pages[1]["previous"] == "../../../review/index.html" and pages[1]["next"] == "../../../review/page/3/index.html"
    assert (pages[2]["first"], pages[2]["last"], pages[2]["total"]) == (201, 250, 250)
    assert [g["tier"] for g in pages[1]["groups"]] == ["assessed", "limited"]
    assert board_pages("", [])[0]["groups"] == [] and len(board_pages("", [])) == 1


def rows_of(html: str) -> list[str]:
    return re.findall(r'<td class="s"><a href="[./]*servers/([^/"]+)\.html"', html)


def test_headline_board_is_paged_grouped_by_tier_and_complete_without_javascript(board_site):
    site, db = board_site
    listed = json.loads((site / "api" / "servers.json").read_text())["servers"]
    assert len(listed) == FLEET + 1
    pages = [site / "index.html"] + [site / "page" / str(n) / "index.html" for n in range(2, 4)]
    assert all(p.exists() for p in pages) and not (site / "page" / "4").exists()
    seen = [server for page in pages for server in rows_of(page.read_text())]
    assert seen == [row["id"] for row in listed]  # every server once, in rank order, across the pages
    first = pages[0].read_text()
    assert len(rows_of(first)) == PAGE_SIZE and 'href="page/2/index.html" rel="next"' in first
    tiers = re.findall(r'<tr class="tier"><th colspan="10">\S+ (\w+)</th>', first + pages[1].read_text() + pages[2].read_text())
    assert tiers[0] == listed[0]["visibility"] and len(set(tiers)) >= 2
    # every row of a tier group sits under its heading: tier order on the pages follows the ranking
    assert [row["visibility"] for row in listed] == sorted((row["visibility"] for row in listed), key=[*dict.fromkeys(tiers)].index)
    assert 'href="../../index.html" rel="prev"' in pages[1].read_text()


def test_category_boards_and_filter_fields(board_site):
    site, db = board_site
    listed = json.loads((site / "api" / "servers.json").read_text())["servers"]
    by_category: dict[str, list[str]] = {}
    for row in listed:
        by_category.setdefault(row["category"], []).append(row["id"])
    assert {"Database", "Communication", "Finance", "Other"} <= set(by_category)
    database = (site / "category" / "database" / "index.html").read_text()
    assert rows_of(database) == by_category["Database"][:PAGE_SIZE]
    assert 'aria-current="page">Database</a>' in database and 'data-category="Database"' in database
    stripe = next(r for r in listed if r["id"].startswith("stripe"))
    assert stripe["platforms"] == ["Stripe"] and stripe["category"] == "Finance"
    evil = next(r for r in listed if r["id"] == "evil")
    assert evil["flags"] == [] or all(set(f) == {"label", "severity"} for f in evil["flags"])


def test_rubric_boards_rank_only_their_servers_and_carry_scalar_figures(board_site):
    site, db = board_site
    review = json.loads((site / "api" / "review.json").read_text())["servers"]
    assert all(not isinstance(v, (dict, list)) for row in review for v in row["extra"].values())
    html = (site / "review" / "index.html").read_text()
    assert rows_of(html) == [row["id"] for row in review][:PAGE_SIZE]
    assert '<tr class="tier">' not in html  # tiers belong to the headline board


def test_hostile_text_is_inert_on_boards(board_site):
    site, db = board_site
    for page in [site / "index.html", *site.glob("page/*/index.html"), *site.glob("category/*/index.html")]:
        html = page.read_text()
        assert "<script>alert" not in html and "<img src=x" not in html


def test_no_broken_internal_links_across_paged_boards(board_site):
    site, db = board_site
    pages, checked, broken = internal_links(site)
    assert broken == [] and pages > FLEET and checked > 15 * FLEET
    (site / "page" / "3" / "index.html").rename(site / "gone.html")  # the check itself notices a missing page
    try:
        assert any("page/3/index.html" in b for b in internal_links(site)[2])
    finally:
        (site / "gone.html").rename(site / "page" / "3" / "index.html")


def test_boards_rendered_by_workers_match_serial_and_are_kept_when_unchanged(board_site, tmp_path, monkeypatch):
    import pipeline.render as render
    from pipeline.render import rendering
    from pipeline.render.executors import ForkPool

    site, db = board_site
    serial = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "serial", now=NOW, workers=1)
    monkeypatch.setattr(rendering, "BOARD_TASK", 1)  # every board page its own task
    parallel = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "parallel", now=NOW, executor=ForkPool(2))
    assert serial.counts == parallel.counts
    for path in sorted(p for p in (tmp_path / "serial").rglob("*") if p.is_file() and p.suffix != ".db"):
        assert path.read_bytes() == (tmp_path / "parallel" / path.relative_to(tmp_path / "serial")).read_bytes(), path
    again = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "parallel", now=NOW, executor=ForkPool(2))
    assert again.counts["written"] == 1  # the snapshot; every page kept unrendered
    db["servers"].update("evil", {"description": "now harmless"})
    try:
        changed = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "parallel", now=NOW, executor=ForkPool(2))
        # the server's own four outputs, the board pages it appears on, the index JSON, snapshot, manifest
        assert 4 < changed.counts["written"] < 20
        assert "now harmless" in (tmp_path / "parallel" / "servers" / "evil.html").read_text()
    finally:
        db["servers"].update("evil", {"description": HOSTILE + " needle-zz"})
