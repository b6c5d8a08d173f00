"""The built site in real headless Chromium: pages load, show their content, and log no console errors."""

from __future__ import annotations

import functools
import html
import json
import queue
import re
import shutil
import sqlite3
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pipeline import serve
from pipeline.assets import SCHEMA_DOC
from pipeline.datasette_metadata import CANNED_QUERIES, schema_documentation
from tests.support import FLEET, datasette_problems, page_problems

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0"]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(site, tmp_path_factory):  # noqa: F811
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", tmp_path_factory.mktemp("chromium")
    server.shutdown()


def render(url: str, profile) -> tuple[str, str]:
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


@pytest.mark.parametrize("page,expected", [
    ("index.html", "MCP server leaderboard"),
    ("servers/mcp-server-time.html", "How to gain points"),
    ("outside-in/index.html", "Rank"),
    ("methodology/index.html", "schema_completeness"),
    ("downloads/index.html", "Datasette Lite"),
    ("status/index.html", "Fast-probe success"),
])
def test_page_renders_without_console_errors(served, page, expected):
    base, profile = served
    dom, log = render(base + page, profile)
    assert expected in dom and "</html>" in dom
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert console == [], console


def test_the_console_check_catches_a_script_error(served):
    _, profile = served
    _, log = render("data:text/html,<p>x</p><script>nonexistent()</script>", profile)
    assert any("CONSOLE" in line and "nonexistent" in line for line in log.splitlines())


@pytest.fixture(scope="module")
def served_board(board_site, tmp_path_factory):  # noqa: F811
    root, _ = board_site
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", tmp_path_factory.mktemp("chromium-board"), root
    server.shutdown()


def scripted(url: str, profile) -> str:
    """The DOM once the board script has fetched its JSON and drawn (virtual time lets the fetch finish)."""
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    return done.stdout


def shown(dom: str) -> list[str]:
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'href="[./]*servers/([^/"]+)\.html"', body)


def status(dom: str) -> str:
    return re.search(r'<p class="board-status"[^>]*>([^<]*)</p>', dom).group(1)


def test_search_finds_by_description_and_keeps_hostile_text_inert(served_board):
    base, profile, root = served_board
    dom = scripted(base + "index.html?q=NEEDLE-zz", profile)
    assert shown(dom) == ["evil"] and status(dom) == f"1 of {FLEET + 1} servers"
    assert "&lt;script&gt;alert" in dom and "<script>alert" not in dom and "<img src=x" not in dom
    assert page_problems(dom) == []  # the script isolates the U+202E in the name and description as the templates do
    assert 'name="q"' in dom and "<form" in dom and "hidden" not in re.search(r"<form[^>]*>", dom).group(0)
    # several words must all match; accents and case fold
    assert shown(scripted(base + "index.html?q=SLACK+chánnel+007", profile)) == []
    assert shown(scripted(base + "index.html?q=slack+channel+slack-notify-009", profile)) == ["slack-notify-009"]


def test_filters_combine_and_list_their_choices_with_counts(served_board):
    base, profile, root = served_board
    listed = json.loads((root / "api" / "servers.json").read_text())["servers"]
    finance = [r["id"] for r in listed if r["category"] == "Finance"]
    dom = scripted(base + "index.html?category=Finance", profile)
    assert shown(dom) == finance[:100] and status(dom) == f"{len(finance)} of {FLEET + 1} servers"
    assert f'<option value="Finance">Finance ({len(finance)})</option>' in dom
    top_grade = listed[0]["grade"]
    both = [r["id"] for r in listed if r["category"] == "Finance" and r["grade"] == top_grade]
    assert shown(scripted(base + f"index.html?category=Finance&grade={top_grade}", profile)) == both[:100] and both
    slack = [r["id"] for r in listed if "Slack" in r["platforms"]]
    assert shown(scripted(base + "index.html?platform=Slack", profile)) == slack[:100] and slack
    unflagged = [r["id"] for r in listed if not r["flags"]]
    assert shown(scripted(base + "index.html?flag=no+flags", profile)) == unflagged[:100]


def test_paging_and_category_and_rubric_boards_in_the_browser(served_board):
    base, profile, root = served_board
    listed = [r["id"] for r in json.loads((root / "api" / "servers.json").read_text())["servers"]]
    dom = scripted(base + "index.html?page=3", profile)
    assert shown(dom) == listed[200:] and "page 3 of 3" in status(dom) and "<button" in dom
    assert shown(scripted(base + "page/2/index.html", profile)) == listed[100:200]  # a pre-rendered page keeps its place
    database = [r["id"] for r in json.loads((root / "api" / "servers.json").read_text())["servers"] if r["category"] == "Database"]
    assert shown(scripted(base + "category/database/index.html", profile)) == database[:100]
    review = [r["id"] for r in json.loads((root / "api" / "review.json").read_text())["servers"]]
    dom = scripted(base + "review/index.html?q=postgres", profile)
    assert shown(dom) == [i for i in review if i.startswith("postgres")][:100] and shown(dom)


# Datasette over the database the build put in the site for download, as `scoreboard serve` starts it.

@pytest.fixture(scope="module")
def datasette(site, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("datasette")
    (copy,) = (site / "downloads").glob("scoreboard-*.db")
    database = folder / "scoreboard.db"
    database.write_bytes(copy.read_bytes())
    handle = serve.start(site, database)
    yield handle.datasette_url + "scoreboard/", database, folder
    handle.stop()


def documented_tables(database) -> list[str]:
    """Every table and view docs/schema.md documents that the database has."""
    with closing(sqlite3.connect(database)) as conn:
        held = {name for (name,) in conn.execute("select name from sqlite_master where type in ('table', 'view')")}
    return sorted(set(schema_documentation(SCHEMA_DOC.read_text(encoding="utf-8"))) & held)


def test_every_documented_table_and_canned_query_opens_in_datasette(datasette):
    base, database, _ = datasette
    tables = documented_tables(database)
    assert {"servers", "runs", "scores", "rule_outcomes"} <= set(tables) and len(tables) > 20
    for path in [*tables, *CANNED_QUERIES]:
        page = httpx.get(base + path, timeout=30)
        assert datasette_problems(page.status_code, page.text) == [], path


def rendered_all(urls: list[str], folder) -> dict[str, tuple[str, str]]:
    """`render` of each URL, three Chromiums at a time (each with a profile of its own): a page's wait is mostly idle."""
    profiles = queue.SimpleQueue()
    for index in range(3):
        profiles.put(folder / f"profile-{index}")

    def one(url: str) -> tuple[str, str]:
        profile = profiles.get()
        try:
            return render(url, profile)
        finally:
            profiles.put(profile)

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(urls, pool.map(one, urls)))


def test_every_canned_query_opens_with_its_defaults_in_chromium(datasette):
    """As a user first opens each: no parameter in the URL, so Datasette passes each as an empty string."""
    base, database, folder = datasette
    with closing(sqlite3.connect(database)) as conn:
        scored = conn.execute("select count(*) from scores s join servers v on v.id = s.server_id "
                              "where s.rubric = 'scoreboard' and v.is_active = 1").fetchone()[0]
    assert 0 < scored < 100
    tables = {"servers": "The catalog: one row per server", "rule_outcomes": "One row per rule of every current card"}
    pages = rendered_all([base + path for path in [*CANNED_QUERIES, *tables]], folder)
    for name, query in CANNED_QUERIES.items():
        dom, log = pages[base + name]
        assert datasette_problems(200, dom) == [] and html.escape(query["title"]) in dom, name
        assert [line for line in log.splitlines() if "CONSOLE" in line] == [], name
    assert f"returning {scored} rows" in pages[base + "top_servers"][0]  # the default limit, 100, shows them all
    # an empty filter filters nothing: every probed server's tools, every rule's failures
    assert "mcp-server-time" in pages[base + "tools_by_server"][0] and "get_time" in pages[base + "tools_by_server"][0]
    assert "rows-and-columns" in pages[base + "failing_rule"][0]
    for table, expected in tables.items():
        dom, _ = pages[base + table]
        assert datasette_problems(200, dom) == [] and expected in dom, table
