"""`scoreboard serve` serves the static site and Datasette on localhost and prints both URLs."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpx

from pipeline import store
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.lifetime import descendants
from pipeline.render import run_build
from pipeline.score.registry import infos
from pipeline.serve import free_port
from tests.support import NOW, REPO, alive, quiet


def test_serve_prints_both_urls_and_both_answer(tmp_path):
    db_path, site = tmp_path / "scoreboard.db", tmp_path / "_site"
    db = store.open_db(db_path)
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    run_build(db, rubrics=infos(), site_dir=site, now=NOW)
    db.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "--db", str(db_path), "serve", "--site", str(site), "--port", str(free_port()),
         "--datasette-port", str(free_port())],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        urls = {}
        deadline = time.monotonic() + 60
        while len(urls) < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            assert line, process.stderr.read()
            match = re.match(r"(site|datasette):\s+(http://127\.0\.0\.1:\d+/)", line)
            if match:
                urls[match.group(1)] = match.group(2)
        assert set(urls) == {"site", "datasette"}
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


def test_serve_without_a_built_site_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(tmp_path / "x.db"), "serve", "--site", str(tmp_path / "nothing")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "run `scoreboard build` first" in done.stderr
