"""`scoreboard serve` serves the static site and Datasette on localhost and prints both URLs; a port in use is said, never
served over; a stop signal ends Datasette and leaves no file behind; a missing page is the site's 404 page."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pipeline import serve, store
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.lifetime import descendants, end, guarded
from pipeline.render import run_build
from pipeline.score.registry import infos
from pipeline.serve import free_port
from tests.support import NOW, REPO, alive, quiet


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A built site and its database: (database, site)."""
    folder = tmp_path_factory.mktemp("serve")
    db_path, site = folder / "scoreboard.db", folder / "_site"
    db = store.open_db(db_path)
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    db.close()
    return db_path, site


def scoreboard_serve(db_path, site, *ports: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline.cli", "--db", str(db_path), "serve", "--site", str(site), *ports],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def announced(process: subprocess.Popen) -> dict[str, str]:
    """The URLs `serve` prints once both answer."""
    urls = {}
    deadline = time.monotonic() + 60
    while len(urls) < 2 and time.monotonic() < deadline:
        line = process.stdout.readline()
        assert line, process.stderr.read()
        match = re.match(r"(site|datasette):\s+(http://127\.0\.0\.1:\d+/)", line)
        if match:
            urls[match.group(1)] = match.group(2)
    assert set(urls) == {"site", "datasette"}
    return urls


def test_serve_prints_both_urls_and_both_answer(built):
    db_path, site = built
    process = scoreboard_serve(db_path, site, "--port", str(free_port()), "--datasette-port", str(free_port()))
    try:
        urls = announced(process)
        page = httpx.get(urls["site"] + "index.html", timeout=10)
        assert page.status_code == 200 and "server-everything" in page.text
        rows = httpx.get(urls["datasette"] + "scoreboard/servers.json?_shape=array", timeout=10)
        assert rows.status_code == 200 and {r["id"] for r in rows.json()} >= {"mcp-server-time", "server-memory"}
        described = httpx.get(urls["datasette"] + "-/metadata.json", timeout=10).json()
        tables = described["databases"]["scoreboard"]["tables"]
        assert tables["probe_runs"]["columns"]["era"].startswith("modern (2026-07-28)")
        for query in ("top_servers", "recent_score_drops", "critical_flags", "tools_by_server", "failing_rule", "top_servers_by_transport"):
            answer = httpx.get(urls["datasette"] + f"scoreboard/{query}.json?_shape=array&limit=5&server_id=&rule=error_handling", timeout=10)
            assert answer.status_code == 200, (query, answer.text[:300])
        started = descendants(process.pid)  # Datasette and its guardian
        assert started
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    assert process.returncode == 0
    assert alive(started) == []  # Datasette ended with it


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_datasette_and_leaves_no_file(built, tmp_path, stop):
    db_path, site = built
    scratch = tmp_path / "tmp"  # where serve's temporary files would go (it makes none with a name: its log is unnamed)
    scratch.mkdir()
    process = scoreboard_serve(db_path, site, "--port", str(free_port()), "--datasette-port", str(free_port()),
                               env={**os.environ, "TMPDIR": str(scratch)})
    try:
        urls = announced(process)
        started = descendants(process.pid)
        assert "scoreboard" in httpx.get(urls["datasette"] + "-/metadata.json", timeout=10).json()["databases"]
        process.send_signal(stop)
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, process.stderr.read()
    assert started and alive(started) == []
    assert list(scratch.iterdir()) == []


class _Answers(BaseHTTPRequestHandler):
    """Another process on the port, answering 200 to anything (as another Datasette would)."""

    def do_GET(self):  # noqa: N802 - stdlib name
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def taken_port():
    """A port another server listens on and answers."""
    other = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    yield other.server_address[1]
    other.shutdown()
    other.server_close()


@pytest.mark.parametrize("option,what", [("--port", "the site"), ("--datasette-port", "Datasette")])
def test_a_port_in_use_is_said_and_nothing_is_announced(built, taken_port, option, what):
    db_path, site = built
    other = "--datasette-port" if option == "--port" else "--port"
    process = scoreboard_serve(db_path, site, option, str(taken_port), other, str(free_port()))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2  # the CLI's exit code for a user error
    assert f"Error: port {taken_port} ({what}) is in use" in err and option in err and "Traceback" not in err
    assert "datasette:" not in out and "site:" not in out


def test_an_answer_from_another_process_on_the_port_is_not_datasette_ready(taken_port):
    """The readiness check asks who listens: a Datasette that has not bound its port (it will fail to) is not announced
    because another process answers there."""
    assert serve.listens(os.getpid(), taken_port)  # this process holds the other server's socket
    waiting = subprocess.Popen(guarded([sys.executable, "-c", "import time; time.sleep(60)"]))
    try:
        with tempfile.TemporaryFile() as log, pytest.raises(RuntimeError, match="did not answer"):
            serve.wait_until_ready(waiting, taken_port, f"http://127.0.0.1:{taken_port}/", log, timeout=1.5)
    finally:
        end(waiting.pid)
        waiting.wait(10)


def test_the_site_answers_a_missing_page_with_its_404_page_and_lists_no_folder(built):
    _, site = built
    assert (site / "404.html").is_file() and (site / "servers").is_dir() and not (site / "servers" / "index.html").exists()
    http = serve.site_server(site, 0)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{http.server_address[1]}/"
    try:
        not_found = (site / "404.html").read_text()
        for path in ("no-such-page.html", "servers/no-such-server.html", "servers/", "servers", "api/", "static/"):
            answer = httpx.get(base + path, timeout=10, follow_redirects=True)
            assert answer.status_code == 404 and answer.text == not_found, path
            assert "Directory listing" not in answer.text
        assert httpx.head(base + "nowhere", timeout=10).status_code == 404
        assert httpx.get(base + "methodology/", timeout=10).status_code == 200  # a folder with index.html is its page
    finally:
        http.shutdown()
        http.server_close()


def test_serve_without_a_built_site_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(tmp_path / "x.db"), "serve", "--site", str(tmp_path / "nothing")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "run `scoreboard build` first" in done.stderr

