"""The built site in real headless Chromium: pages load, show their content, and log no console errors."""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import queue
import re
import select
import shutil
import sqlite3
import struct
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
from tests.support import FLEET, LONG_ID, LONG_NAME, datasette_problems, page_problems

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
def test_the_script_draws_no_empty_grade_pill_on_a_rubric_board(served_board):
    base, profile, _ = served_board
    for board in ("review", "outside-in", "remote"):
        dom = scripted(base + f"{board}/index.html", profile)
        assert re.match(r"\d+ of \d+ servers", status(dom)) and shown(dom), board  # the script drew the table
        assert "grade-none" not in dom, board
    assert re.search(r'<span class="grade grade-[A-F]">[A-F]</span>', scripted(base + "review/index.html", profile))
    assert 'class="grade grade-none"' in scripted(base + "index.html?page=2", profile)  # the headline board keeps its grey pill


# ---------------------------------------------------------------- phones: every page fits its screen's width

class DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on its fd 3, replies on
    fd 4). Headless Chromium opens no window narrower than 500 px: with --window-size=390 it lays a page out 500 px wide and
    crops the screenshot to 390, hiding exactly the overflow a phone would show. So the width is set as DevTools' device mode
    sets it, by emulation, and the page is measured and photographed at that width."""

    def __init__(self, profile):
        commands, self._send = os.pipe()
        self._receive, replies = os.pipe()

        def on_fds_3_and_4():  # in the child, before Chromium starts
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self.process = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        preexec_fn=on_fds_3_and_4, close_fds=False)
        os.close(commands)
        os.close(replies)
        self._buffer, self._next, self.events = b"", 0, []
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        except BaseException:
            self.process.kill()  # no browser left behind by a start that failed
            self.process.wait(30)
            raise

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params, **({"sessionId": session} if session else {})}
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return reply["result"]
            self.events.append(reply)

    def _read(self, timeout: float = 30) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._receive], [], [], timeout)
            assert ready, "Chromium did not answer in time"
            chunk = os.read(self._receive, 1 << 20)
            assert chunk, "Chromium closed the pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def page(self, method: str, **params) -> dict:
        return self.call(method, self.session, **params)

    def evaluate(self, expression: str):
        return self.page("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)["result"].get("value")

    def open(self, url: str, width: int, height: int = 900) -> None:
        """Load `url` in a viewport `width` CSS pixels wide (a phone's below 600: touch, overlay scrollbars, the meta viewport)
        and wait until it has loaded and a board's script, if any, has drawn its table."""
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width < 600)
        self.page("Page.enable")
        self.events.clear()
        self.page("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read())
        self.evaluate("new Promise(done => { const form = document.querySelector('form.board-controls'); let waited = 0;"
                      " (function wait() { if (!form || !form.hidden || waited > 5000) done(); else { waited += 50; setTimeout(wait, 50); } })(); })")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.page("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except AssertionError:
            pass
        os.close(self._send)
        os.close(self._receive)
        self.process.wait(30)


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


WIDTH = "JSON.stringify([document.documentElement.scrollWidth, window.innerWidth])"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    tools = DevTools(tmp_path_factory.mktemp("chromium-devtools"))
    yield tools
    tools.close()


@pytest.fixture(scope="module")
def served_long(long_site):  # noqa: F811
    root, _ = long_site
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_the_width_check_catches_a_page_wider_than_its_screen(browser):
    browser.open("data:text/html,<meta name=viewport content='width=device-width'><div style='width:800px'>x</div>", 390)
    scroll, inner = json.loads(browser.evaluate(WIDTH))
    assert scroll > 390 and inner > 390  # wider than the screen: a phone zooms out to show it all, its text too small to read
    assert png_size(browser.screenshot())[0] == 390


# What each page must show once drawn: the long server's site, or the fleet's 100-row board (`fleet/`).
PAGES = {
    "board": ("index.html", LONG_NAME[:40]), "full board": ("fleet/index.html", "postgres-query 000"),
    "category board": ("category/productivity/index.html", LONG_NAME[:40]), "listed board": ("listed/index.html", "listed-only-"),
    "review board": ("review/index.html", LONG_NAME[:40]), "remote board": ("remote/index.html", LONG_NAME[:40]),
    "outside-in board": ("outside-in/index.html", "legacy only, modern fails"),
    "server": (f"servers/{LONG_ID}.html", "retrieve_enterprise_knowledge_graph_entities"), "methodology": ("methodology/index.html", "Protocol eras"),
}


@pytest.mark.parametrize("page,width", [*((page, 390) for page in PAGES), *((page, 1400) for page in ("board", "outside-in board", "server"))])
def test_pages_fit_the_screen_without_sideways_scrolling(browser, served_board, served_long, tmp_path, page, width):
    """The boards (with search and filters drawn by their script) and the longest server page fit a phone 390 px wide and a
    desktop 1400 px wide: the document is no wider than the screen, and the screenshot is the screen's width."""
    path, shows = PAGES[page]
    url = served_board[0] + path.removeprefix("fleet/") if path.startswith("fleet/") else served_long + path
    browser.open(url, width)
    assert shows in browser.evaluate("document.body.innerText")
    scroll, inner = json.loads(browser.evaluate(WIDTH))
    assert inner == width and scroll <= width, f"{page} at {width} px scrolls sideways: {scroll} px wide"
    png = browser.screenshot()
    (tmp_path / f"{page.replace(' ', '-')}-{width}.png").write_bytes(png)
    assert png_size(png)[0] == width
