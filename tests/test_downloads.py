"""The database a user downloads: the site's copy opens in Datasette and in Datasette Lite with its tables and columns
documented and its canned queries, and says that the build which made it finished."""

from __future__ import annotations

import functools
import html
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from datasette.utils import parse_metadata, tilde_encode

from pipeline import store
from pipeline.datasette_metadata import CANNED_QUERIES
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.lifetime import end, guarded
from pipeline.render.finish import Snapshot
from pipeline.score import run_score
from tests.support import NOW, REPO, datasette_in_process, datasette_problems, free_port, quiet


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`scoreboard build` (the CLI, so the build has its runs row) of the scored local catalog, its site published at a
    local URL: (database, site, site URL)."""
    folder = tmp_path_factory.mktemp("downloads")
    db_path, site = folder / "scoreboard.db", folder / "_site"
    db = store.open_db(db_path)
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    run_score(db, servers=store.active_servers(db), now=NOW)
    db.close()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site_url = f"http://127.0.0.1:{server.server_address[1]}/"
    env = {k: v for k, v in os.environ.items() if k != "SCOREBOARD_SNAPSHOT_STORE"} | {"SCOREBOARD_SITE_URL": site_url}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(db_path), "build", "--site", str(site)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    yield db_path, site, site_url
    server.shutdown()


def downloaded(site):
    (copy,) = (site / "downloads").glob("scoreboard-*-engine-*.db")
    return copy


def lite_link(site) -> str:
    (href,) = re.findall(r'href="(https://lite\.datasette\.io/[^"]*)"', (site / "downloads" / "index.html").read_text())
    return html.unescape(href)


def test_the_lite_link_names_the_copy_and_its_metadata(built):
    _, site, site_url = built
    link = urlsplit(lite_link(site))
    params = parse_qs(link.query, strict_parsing=True)  # as Lite's URLSearchParams reads them
    assert (link.scheme, link.netloc, link.path, link.fragment) == ("https", "lite.datasette.io", "/", "")
    assert params == {"url": [f"{site_url}downloads/{downloaded(site).name}"], "metadata": [f"{site_url}downloads/metadata.json"]}
    for url in (params["url"][0], params["metadata"][0]):  # both answer where they say (Lite fetches them)
        assert httpx.get(url, timeout=10).status_code == 200


def test_datasette_lite_opens_the_copy_with_its_documentation_and_canned_queries(built, tmp_path):
    """What Lite's worker does with ?url= and ?metadata= (webworker.js): fetch the database and save it under the URL's
    text before ".db", from the last "/"; fetch the metadata and parse it; start Datasette on that file with it."""
    _, site, _ = built
    params = parse_qs(urlsplit(lite_link(site)).query)
    url, metadata_url = params["url"][0], params["metadata"][0]
    saved = tmp_path / url.split(".db")[0].split("/")[-1]
    saved.write_bytes(httpx.get(url, timeout=10).content)
    described = parse_metadata(httpx.get(metadata_url, timeout=10).text)
    name, pages = datasette_in_process(saved, described, ["servers", "runs", *CANNED_QUERIES])
    assert name in described["databases"], f"Lite names it {name}: the metadata must be keyed so"
    assert name != downloaded(site).stem  # the engine version's last dotted part is gone: why the metadata carries both names
    assert "The catalog: one row per server" in pages["servers"].text and "One row per stage run." in pages["runs"].text
    for query, page in pages.items():
        assert datasette_problems(page.status_code, page.text) == [], query
    for query, canned in CANNED_QUERIES.items():
        assert html.escape(canned["title"]) in pages[query].text, query


def test_datasette_opens_the_downloaded_copy_with_its_metadata(built, tmp_path):
    """`datasette FILE.db --metadata metadata.json`, as the downloads page says, in a folder of the user's."""
    _, site, _ = built
    copy = tmp_path / downloaded(site).name
    copy.write_bytes(downloaded(site).read_bytes())
    (tmp_path / "metadata.json").write_bytes((site / "downloads" / "metadata.json").read_bytes())
    port = free_port()
    datasette = subprocess.Popen(guarded([sys.executable, "-m", "datasette", "serve", copy.name, "--metadata", "metadata.json", "--host",
                                          "127.0.0.1", "--port", str(port)]), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/{tilde_encode(copy.stem)}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                table = httpx.get(f"{base}/servers", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert datasette_problems(table.status_code, table.text) == [] and "The catalog: one row per server" in table.text
        database = httpx.get(base, timeout=10).text
        assert all(html.escape(canned["title"]) in database for canned in CANNED_QUERIES.values()), "the canned queries are listed"
        top = httpx.get(f"{base}/top_servers", timeout=10)
        assert datasette_problems(top.status_code, top.text) == [] and "Top servers" in top.text
    finally:
        end(datasette.pid)  # its guardian ends it
        datasette.wait(10)


def test_the_copy_says_the_build_finished_as_the_database_does(built):
    db_path, site, _ = built
    live = sqlite3.connect(db_path)
    live.row_factory = sqlite3.Row
    (row,) = live.execute("select * from runs where stage = 'build'").fetchall()
    copy = sqlite3.connect(downloaded(site))
    copy.row_factory = sqlite3.Row
    (copied,) = copy.execute("select * from runs where stage = 'build'").fetchall()
    assert dict(copied) == dict(row) and row["status"] == "ok" and row["finished_at"] and row["finished_at"] >= row["started_at"]
    assert not [p.name for p in (site / "downloads").iterdir() if p.name.startswith(".")], "no scratch copy left"


def test_a_build_that_does_not_conclude_puts_no_copy_in_place(built, tmp_path):
    db_path, _, _ = built
    target = tmp_path / "downloads" / "copy.db"
    with pytest.raises(RuntimeError, match="cut short"), Snapshot(str(db_path), target) as snapshot:
        snapshot.wait()
        assert snapshot.scratch.is_file()  # the copy is made ...
        raise RuntimeError("the build was cut short")
    assert list(target.parent.iterdir()) == []  # ... but never put in place, and gone
