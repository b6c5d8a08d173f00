"""The built site in real headless Chromium: pages load, show their content, and log no console errors."""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.test_api_schemas import site  # noqa: F401 - the built fixture site

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
    ("servers/mcp-server-time/index.html", "How to gain points"),
    ("outside-in/index.html", "Rank"),
    ("methodology/index.html", "schema_completeness"),
    ("downloads/index.html", "Datasette Lite"),
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
