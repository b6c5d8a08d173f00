"""Listing-only servers (methodology deviations 80 and 81): a listing names them, with no repository, package or remote
endpoint. Nothing of theirs can be measured, and the scoreboard says so: their pages state what the listings say and
why nothing was measured, with no score, grade, badge or verdict; the ranked boards leave them out with a count and a
board of their own; the JSON marks every server; and the stages pass them over without recording failures.

From the real source snapshots (Smithery's 2025-04 list dump is most of them) and from small crafted catalogs.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover, snapshot_sources
from pipeline.judge import Panel, run_judge
from pipeline.models import LaunchSpec, Package, Remote
from pipeline.probe import run_probe
from pipeline.render import run_build
from pipeline.score import run_score
from pipeline.score.registry import infos
from tests.support import NOW, REPO, SOURCE_FIXTURES, ListSource, StaticInstaller, analysis, entry, internal_links, probe, quiet

# Smithery-only entries of the 2025-04 list dump that no other source names in any form: a name, a description, a use
# count and Smithery's page, nothing more.
SMITHERY_ONLY = {
    "smithery--0xcathiefish--mcp": ("Smithery MCP", "https://smithery.ai/server/@0xcathiefish/mcp"),
    "smithery--philliprt--think-mcp-server": ("Think Tool Server", "https://smithery.ai/server/@PhillipRt/think-mcp-server"),
    "smithery--auchenberg--claude-code-mcp": ("Claude Code MCP Server", "https://smithery.ai/server/@auchenberg/claude-code-mcp"),
}
# Every verdict or measurement a page could show, none of which a listing-only page may hold.
VERDICTS = ('class="big grade', "badge/", "Embed the badge", "No Source Code", "capped", "caps the score", "verdict", "How to gain points",
            "<h2>Dimensions</h2>", "Not probed yet", "a local server runs only when we start it", "Not analysed yet")
VERDICT_WORDS = re.compile(r"\b(down|fail(s|ed|ing)?|unhealthy|unreachable|unscored|grade [A-F]|[0-9.]+ ?/ ?100)\b", re.I)


def assert_no_verdict(html: str) -> None:
    for verdict in VERDICTS:
        assert verdict not in html, verdict
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.split("<main>", 1)[1]))
    assert VERDICT_WORDS.search(text) is None, VERDICT_WORDS.search(text)

# The same definition as deviation 80, written against the stored columns rather than through the code under test.
LISTING_ONLY_SQL = ("coalesce(repository, '') = '' and packages = '[]' and remotes = '[]' and launch is null "
                    "and coalesce(remote_url, '') = ''")

needs_snapshots = pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason=f"source snapshots not present at {SOURCE_FIXTURES}")


@pytest.fixture(scope="module")
def snapshot_site(tmp_path_factory):
    """The whole catalog from the real snapshots, scored and built."""
    db = store.open_db(tmp_path_factory.mktemp("snapshots") / "scoreboard.db")
    sources = snapshot_sources(SOURCE_FIXTURES)
    run_discover(db, sources=sources, now=NOW, progress=quiet(len(sources) + 1))
    scored = run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(1))
    site = tmp_path_factory.mktemp("snapshot-site")
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    return site, db, scored


def listed_ids(db) -> set[str]:
    return {r["id"] for r in db.query(f"select id from servers where is_active = 1 and {LISTING_ONLY_SQL}")}


def rows_of(html: str) -> list[str]:
    return re.findall(r'<td class="s"><a href="[./]*servers/([^/"]+)\.html"', html)


# ---------------------------------------------------------------- the definition


def test_listing_only_means_no_repository_no_package_and_no_remote():
    from pipeline.listing_only import listing_only
    from tests.support import server

    bare = server(launch=None, repository=None)
    assert listing_only(bare)
    # what a listing says about a server is not the server: a homepage, the listing's own page
    assert listing_only(bare.model_copy(update={"homepage": "https://docs.example.org/mcp",
                                                "external_links": {"smithery": "https://smithery.ai/server/@o/x"}}))
    for found in ({"repository": "https://gitlab.com/o/x"}, {"packages": [Package(registry="oci", identifier="ghcr.io/o/x")]},
                  {"launch": LaunchSpec(registry="npm", package="x", transport="stdio")},
                  # a Smithery deployment URL is an endpoint a probe can reach; a private one is what Staging Endpoint judges
                  {"remotes": [Remote(transport="streamable-http", url="https://server.smithery.ai/@o/x/mcp")]},
                  {"remote_url": "http://localhost:3000/mcp", "transport": "streamable-http"}):
        assert not listing_only(bare.model_copy(update=found)), found


@needs_snapshots
def test_the_snapshots_listing_only_servers_are_marked_in_the_json_api(snapshot_site):
    site, db, _ = snapshot_site
    rows = json.loads((site / "api" / "servers.json").read_text())["servers"]
    marked = {r["id"] for r in rows if r["listing_only"]}
    expected = listed_ids(db)
    assert marked == expected and len(expected) > 4000  # more than half the catalog (4,632 of 8,271 before issue 17's merges)
    assert set(SMITHERY_ONLY) <= marked
    smithery_only = {r["id"] for r in rows if r["listing_only"] and r["sources"] == ["smithery"]}
    assert len(smithery_only) > 0.95 * len(marked)  # nearly all of them come from Smithery's list dump alone
    # the official registry's re-publications of Smithery-hosted servers have a deployment URL: an endpoint, so measured
    hosted = [r["id"] for r in db.query("select id from servers where repository is null and packages = '[]' and remotes like "
                                        "'%server.smithery.ai%'")]
    assert hosted and not marked & set(hosted)
    # a docs page is a homepage, not a source: awesome-mcp-servers' BrainGrid entry links only to its documentation
    braingrid = next(r for r in rows if r["name"] == "BrainGrid MCP")
    assert braingrid["listing_only"] and braingrid["sources"] == ["awesome-mcp-servers"]
    for server_id in SMITHERY_ONLY:
        page = json.loads((site / "api" / "servers" / f"{server_id}.json").read_text())
        assert page["server"]["listing_only"] is True and "score" not in page and "embed" not in page  # nulls are left out (deviation 106)
        assert "no source to analyse, no package to start and no endpoint to probe" in page["not_measured"]
    measured = next(r for r in rows if not r["listing_only"])
    page = json.loads((site / "api" / "servers" / f"{measured['id']}.json").read_text())
    assert page["server"]["listing_only"] is False and page["score"] and "not_measured" not in page


# ---------------------------------------------------------------- their pages


@needs_snapshots
@pytest.mark.parametrize("server_id", sorted(SMITHERY_ONLY))
def test_a_listing_only_page_says_what_is_known_and_that_nothing_could_be_measured(snapshot_site, server_id):
    site, db, _ = snapshot_site
    name, smithery_page = SMITHERY_ONLY[server_id]
    stored = db["servers"].get(server_id)
    html = (site / "servers" / f"{server_id}.html").read_text()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert f"<h1>{name}</h1>" in html and stored["description"][:60] in html.replace("&#39;", "'")
    assert "Listed only: nothing could be measured." in text and "It is listed by smithery" in text
    assert "no source to analyse, no package to start and no endpoint to probe" in text
    assert "it has no score, no grade and no badge, and it is left off the leaderboard" in text
    assert f'href="{smithery_page}"' in html and f"{stored['category']}" in text  # the listing's link, our category
    assert "Smithery uses" in text  # what the listing reports
    assert_no_verdict(html)
    assert not (site / "badge" / f"{server_id}.svg").exists() and not (site / "badge" / f"{server_id}.json").exists()


@needs_snapshots
def test_listing_only_servers_have_no_score_card_and_the_rest_are_scored(snapshot_site):
    _, db, scored = snapshot_site
    listed = listed_ids(db)
    carded = {r["server_id"] for r in db.query("select distinct server_id from scores")}
    assert not carded & listed and scored.counts["listing_only"] == len(listed)
    active = {r["id"] for r in db.query("select id from servers where is_active = 1")}
    assert carded == active - listed


def test_a_server_whose_listings_no_longer_name_a_way_in_loses_its_cards_not_its_history(db):
    with_repo = entry("gone", description="Query a Postgres database", repository="https://github.com/o/gone")
    run_discover(db, sources=[ListSource("test", [with_repo, entry("kept", launch=LaunchSpec(registry="npm", package="k", transport="stdio"))])],
                 now=NOW - timedelta(days=1), progress=quiet(1))
    run_score(db, servers=store.active_servers(db), now=NOW - timedelta(days=1))
    assert db.execute("select count(*) from scores where server_id = 'gone'").fetchone()[0] == 4
    db["servers"].update("gone", {"repository": None, "repo_key": None})  # its listings no longer name one (discovery never blanks a field)
    report = run_score(db, servers=store.active_servers(db), now=NOW)
    assert report.counts["listing_only"] == 1 and report.failures == 0
    assert db.execute("select count(*) from scores where server_id = 'gone'").fetchone()[0] == 0
    assert db.execute("select count(*) from scores where server_id = 'kept'").fetchone()[0] == 4
    assert db.execute("select count(*) from score_history where server_id = 'gone'").fetchone()[0] == 4  # what was shown then


# ---------------------------------------------------------------- the boards


@needs_snapshots
def test_the_boards_leave_them_out_with_a_count_and_list_them_apart(snapshot_site):
    site, db, _ = snapshot_site
    rows = json.loads((site / "api" / "servers.json").read_text())["servers"]
    measured = [r for r in rows if not r["listing_only"]]
    listed = [r for r in rows if r["listing_only"]]
    assert rows == measured + listed  # listing-only rows come last
    assert [r["rank"] for r in measured] == list(range(1, len(measured) + 1)) and {r["rank"] for r in listed} == {None}
    assert all(r["composite"] is None and r["grade"] is None and r["flags"] == [] and r["dimension_indicator"] == "0/0" for r in listed)
    front = (site / "index.html").read_text()
    assert rows_of(front) == [r["id"] for r in measured[:100]]
    assert f"Not shown: {len(listed):,} listing-only servers" in front and 'href="listed/index.html"' in front
    assert f"of {len(measured)}" in front and 'name="listed"' in front  # the board script's checkbox (hidden without it)
    # their own board: every one of them, in the JSON's order, without a score, grade or probe column
    pages = sorted((site / "listed").rglob("index.html"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 1)
    assert [i for p in pages for i in rows_of(p.read_text())] == [r["id"] for r in listed]
    first = (site / "listed" / "index.html").read_text()
    header = re.search(r"<thead>(.*?)</thead>", first, re.S).group(1)
    assert re.findall(r"<th>([^<]+)</th>", header) == ["Server", "Category", "Listed by"]
    assert "Smithery MCP" in "".join(p.read_text() for p in pages)
    # each category board counts its own
    category = max({r["category"] for r in listed}, key=lambda c: sum(1 for r in listed if r["category"] == c))
    slug = re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")
    board = (site / "category" / slug / "index.html").read_text()
    hidden = sum(1 for r in listed if r["category"] == category)
    assert f"Not shown: {hidden:,} listing-only servers in this category" in board
    assert not set(rows_of(board)) & {r["id"] for r in listed}
    # the rubric boards never had them: they have no card
    for rubric in ("review", "outside-in", "remote"):
        assert not {r["id"] for r in json.loads((site / "api" / f"{rubric}.json").read_text())["servers"]} & {r["id"] for r in listed}
    table = list(csv.DictReader((site / "downloads" / "leaderboard.csv").open()))
    assert [r["listing_only"] for r in table] == [str(r["listing_only"]) for r in rows] and table[-1]["rank"] == ""


def crafted_catalog(db):
    """Two measured servers, one hosted one, one on a private address, and two listing-only ones (a homepage and a
    listing's page are all they have)."""
    entries = [
        entry("postgres-a", description="Query a Postgres database", repository="https://github.com/o/postgres-a"),
        entry("slack-b", description="Send Slack messages", launch=LaunchSpec(registry="npm", package="slack-b", transport="stdio")),
        entry("hosted-c", description="Search documentation", transport="streamable-http", remote_url="https://docs.example.org/mcp",
              remotes=[Remote(transport="streamable-http", url="https://docs.example.org/mcp")]),
        entry("private-d", description="Local tool", transport="streamable-http", remote_url="http://127.0.0.1:8808/mcp"),
        entry("listed-postgres", description="Query a Postgres database too", homepage="https://docs.example.org/listed",
              external_links={"smithery": "https://smithery.ai/server/@x/listed-postgres"}),
        entry("listed-slack", description="Send Slack messages too"),
    ]
    run_discover(db, sources=[ListSource("test", entries)], now=NOW, progress=quiet(1))
    return store.active_servers(db)


@pytest.fixture(scope="module")
def crafted_site(tmp_path_factory):
    db = store.open_db(tmp_path_factory.mktemp("crafted") / "scoreboard.db")
    crafted_catalog(db)
    store.record_probe(db, probe().model_copy(update={"server_id": "slack-b"}), None)
    store.record_analysis(db, analysis().model_copy(update={"server_id": "slack-b"}))
    run_score(db, servers=store.active_servers(db), now=NOW)
    site = tmp_path_factory.mktemp("crafted-site")
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    return site


def test_a_crafted_board_hides_both_and_counts_them_per_category(crafted_site):
    site = crafted_site
    rows = json.loads((site / "api" / "servers.json").read_text())["servers"]
    assert [r["id"] for r in rows if r["listing_only"]] == ["listed-postgres", "listed-slack"]
    front = (site / "index.html").read_text()
    assert set(rows_of(front)) == {"postgres-a", "slack-b", "hosted-c", "private-d"}
    assert "Not shown: 2 listing-only servers" in front
    assert "Not shown: 1 listing-only server in this category" in (site / "category" / "database" / "index.html").read_text()
    assert 'href="../../listed/index.html?category=Database"' in (site / "category" / "database" / "index.html").read_text()
    assert rows_of((site / "listed" / "index.html").read_text()) == ["listed-postgres", "listed-slack"]
    html = (site / "servers" / "listed-postgres.html").read_text()
    assert 'href="https://docs.example.org/listed"' in html and "Database" in html and "It is listed by test" in html
    assert_no_verdict(html)
    assert (site / "badge" / "private-d.svg").exists() and not (site / "badge" / "listed-slack.svg").exists()
    pages, checked, broken = internal_links(site)
    assert broken == [] and checked > 50


# ---------------------------------------------------------------- the stages


def test_probe_and_judge_pass_them_over_without_a_failure(db, settings):
    servers = crafted_catalog(db)
    listed = [s for s in servers if s.id.startswith("listed-")]
    private = [s for s in servers if s.id == "private-d"]
    report = run_probe(db, servers=listed + private, installer=StaticInstaller({}), settings=settings.model_copy(update={"allow_private": False}),
                       now=NOW, progress=quiet(1))
    assert report.counts == {"listing_only": 2, "not_probeable": 1} and report.failures == 0
    assert db["probe_runs"].count == 0
    judged = run_judge(db, servers=listed, panel=Panel.offline(), now=NOW, progress=quiet(1))
    assert judged.counts["listing_only"] == 2 and judged.counts["below_assessed"] == 0 and judged.failures == 0


def test_analyze_fetches_nothing_for_them_and_records_no_failure(tmp_path):
    path = tmp_path / "scoreboard.db"
    db = store.open_db(path)
    crafted_catalog(db)
    db.close()
    env = {**os.environ, "SCOREBOARD_NPM_REGISTRY": "http://127.0.0.1:9/npm", "SCOREBOARD_PYPI_URL": "http://127.0.0.1:9/pypi",
           "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "analyze", "--db", str(path), "--server", "listed-postgres",
                           "--server", "listed-slack"], capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    with sqlite3.connect(path) as conn:
        counts, failures = conn.execute("select counts, failures from runs where stage = 'analyze'").fetchone()
        assert conn.execute("select count(*) from analyses").fetchone()[0] == 0
    assert json.loads(counts)["listing_only"] == 2 and failures == 0


# ---------------------------------------------------------------- the board script's control


@pytest.fixture(scope="module")
def served_crafted(crafted_site, tmp_path_factory):
    import functools
    import threading
    from http.server import ThreadingHTTPServer

    from tests.test_browser import _Quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(crafted_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", tmp_path_factory.mktemp("chromium-listed")
    server.shutdown()


def test_the_board_script_hides_them_by_default_and_a_checkbox_includes_them(served_crafted):
    from tests.test_browser import CHROMIUM, scripted, shown, status

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    base, profile = served_crafted
    dom = scripted(base + "index.html", profile)
    assert set(shown(dom)) == {"postgres-a", "slack-b", "hosted-c", "private-d"}
    assert status(dom) == "4 of 4 servers · 2 listing-only not shown"
    assert re.search(r'<input type="checkbox" name="listed" value="1">', dom)  # shown, unchecked
    dom = scripted(base + "index.html?listed=1", profile)
    assert shown(dom)[-2:] == ["listed-postgres", "listed-slack"] and status(dom) == "6 of 6 servers"
    assert "listed only</th>" in dom and "not measured</td>" in dom  # their own group; no grade, no score
    assert shown(scripted(base + "index.html?q=postgres", profile)) == ["postgres-a"]  # search finds them only when included
    assert shown(scripted(base + "index.html?q=postgres&listed=1", profile)) == ["postgres-a", "listed-postgres"]
    # their own board: only them, with its own filters
    dom = scripted(base + "listed/index.html", profile)
    assert shown(dom) == ["listed-postgres", "listed-slack"] and status(dom) == "2 of 2 servers"
    assert '<select name="source" aria-label="Listed by">' in dom and 'name="grade"' not in dom
    assert shown(scripted(base + "listed/index.html?category=Database", profile)) == ["listed-postgres"]


@needs_snapshots
def test_a_server_never_probed_is_not_called_down(snapshot_site):
    """Deviation 82: a measured server with no probe run (a repository the probe has no way to start) has no outside-in
    verdict, where the card said Down."""
    site, db, _ = snapshot_site
    never = [r["server_id"] for r in db.query("select server_id from scores where rubric = 'outside-in' and json_extract(extra, '$.runs') = 0")]
    assert len(never) > 3000
    verdicts = {r["v"] for r in db.query("select distinct json_extract(extra, '$.verdict') as v from scores where rubric = 'outside-in' "
                                         "and json_extract(extra, '$.runs') = 0")}
    assert verdicts == {None}
    html = (site / "servers" / f"{never[0]}.html").read_text()
    assert "status unrated" in html and "verdict Down" not in html and "verdict" not in html.split("Outside-in", 1)[1].split("</p>", 1)[0]
