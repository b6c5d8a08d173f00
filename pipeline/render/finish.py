"""Finish: the files beside the pages (public JSON, downloads, feed, static files), then sitemap, manifest and clean-up."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode
from xml.sax.saxutils import escape

from jinja2 import Environment
from markupsafe import Markup
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, store
from pipeline.assets import METHODOLOGY, STATIC
from pipeline.datasette_metadata import database_name, lite_database_name, metadata
from pipeline.eras import ERAS
from pipeline.fleet.status import FleetStatus
from pipeline.lifetime import end, guarded
from pipeline.models import ModelTransition, RubricInfo, StageReport
from pipeline.render import schemas
from pipeline.render.contexts import methodology_html
from pipeline.render.fingerprints import MANIFEST, Fingerprints
from pipeline.render.plan import SitePlan
from pipeline.render.rendering import json_file
from pipeline.render.status import STATUS_JSON, STATUS_PAGE, feed_alerts, status_context, status_json
from pipeline.render.writer import SiteWriter

LEADERBOARD_CSV_COLUMNS = ["rank", "id", "name", "composite", "grade", "visibility", "dimension_indicator", "transport", "era",
                           "protocol_version", "tool_count", "probe_outcome", "last_scored_at", "listing_only"]
# A spreadsheet takes a cell that starts with one of these for a formula (OWASP's list, and a line break).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def snapshot_name(now: datetime) -> str:
    return f"scoreboard-{now.astimezone(timezone.utc).date().isoformat()}-engine-{ENGINE_VERSION}.db"


def scratch_of(path: str) -> str:
    """The hidden name beside `path` where its database copy is made before it takes its place."""
    folder, slash, name = path.rpartition("/")
    return f"{folder}{slash}.{name}.copy"


class Snapshot:
    """The database copied for download (SQLite's online backup) in a process started at the start of the build, so the copy
    runs beside all of it; a context manager, so a failed build stops the copy.

    A process, not a thread: render workers are forked later, and a child forked while a thread holds SQLite's locks
    could deadlock; a thread started only after them would leave a small rebuild waiting for the copy. A fresh
    interpreter, not a fork: a forked child shares the build's memory copy-on-write for the seconds the copy takes, and
    every page the build then writes to is copied (measured: a 1% rebuild of 25,000 servers 1-3 s slower). Started under
    a guardian (pipeline.lifetime), which is tied to the build before the interpreter has imported anything, so the copy
    dies with the build however that ends, even killed in its first second.

    The copy is made under a scratch name beside its place (claimed, so the sweep of stale files leaves it) and put in
    place by `conclude` once the build has ended: the copy was taken while the build's own `runs` row said running, so
    `conclude` first writes that row into the copy as the build ends it (status, finished_at, counts: what the caller then
    writes into the database). A build that fails or is interrupted puts no copy in place.
    """

    def __init__(self, source: str, target: Path | None) -> None:
        self.target = target  # None: the snapshot is published elsewhere
        self.scratch = None if target is None else Path(scratch_of(str(target)))
        self.process = None if self.scratch is None else self._start(source, self.scratch)

    @staticmethod
    def _start(source: str, scratch: Path) -> subprocess.Popen:
        # The copy imports the pipeline from wherever this process did.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        return subprocess.Popen(guarded([sys.executable, "-c", _COPY, source, str(scratch)]), env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait(self) -> None:
        if self.process is None:
            return
        _, errors = self.process.communicate()
        if self.process.returncode != 0:
            reason = errors.strip().splitlines()[-1] if errors.strip() else f"exit code {self.process.returncode}"
            raise RuntimeError(f"database snapshot for download failed: {reason}")

    def conclude(self, run_id: int | None, report: StageReport) -> None:
        """Put the copy in place, the build's runs row (`run_id`; None: a build without one) first ended in it as `report` says."""
        if self.process is None:
            return
        if self.process.returncode is None:
            self.wait()
        if run_id is not None:
            copy = Database(sqlite3.connect(self.scratch))
            try:
                store.finish_run(copy, run_id, report, report.finished_at)  # run_build sets it: the two rows agree
            finally:
                copy.close()
        os.replace(self.scratch, self.target)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            end(self.process.pid)
        self.process.wait()
        self.process.stderr.close()
        for unfinished in (self.scratch, Path(f"{self.scratch}-journal")):  # a copy never concluded is no download
            unfinished.unlink(missing_ok=True)


_COPY = """
import sys
from pathlib import Path

from pipeline.store import backup

try:
    backup(sys.argv[1], Path(sys.argv[2]))
except Exception as error:
    sys.exit(str(error))  # the last line of its stderr: the reason the build gives
"""


def lite_link(site_url: str, snapshot: str) -> str:
    """The link that opens the site's copy of the database in Datasette Lite with its metadata (Lite's ?url= and ?metadata=)."""
    return "https://lite.datasette.io/?" + urlencode({"url": f"{site_url}downloads/{snapshot}", "metadata": f"{site_url}downloads/metadata.json"})


def download_metadata(site_url: str, snapshot: str) -> dict:
    """The metadata of the site's copy of the database, keyed to the names Datasette (the file's stem) and Datasette Lite
    (`lite_database_name`) give it: under any other name both would show it undocumented and without canned queries."""
    return metadata(database_name(snapshot), lite_database_name(f"{site_url}downloads/{snapshot}"))


def csv_cell(value: object) -> object:
    """A value as a spreadsheet reads it safely: numbers stay numbers (a score of -3.5 too); text that would start a
    formula gets a leading `'`, which spreadsheets read as "this is text" (methodology deviation 39)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _csv(rows: list) -> str:
    out = io.StringIO()
    table = csv.writer(out, lineterminator="\r\n")  # RFC 4180's line break: a cell holding either CR or LF is then quoted
    table.writerow(LEADERBOARD_CSV_COLUMNS)
    table.writerows([csv_cell(row.get(column)) for column in LEADERBOARD_CSV_COLUMNS] for row in rows)
    return out.getvalue()


def _feed_updated(changes: list, alerts: list[dict[str, str]], now: datetime) -> str:
    """The newest entry's time: a change's day or an alert's start; the build's day when there is neither."""
    stamps = [changes[0]["day"] + "T00:00:00Z"] if changes else []
    stamps += [alert["updated"] for alert in alerts]
    return max(stamps, default=now.astimezone(timezone.utc).date().isoformat() + "T00:00:00Z")


def write_shared(writer: SiteWriter, env: Environment, plan: SitePlan, rubrics: Sequence[RubricInfo], *, status: FleetStatus, site_url: str,
                 now: datetime, snapshots_url: str | None = None, transitions: Sequence[ModelTransition] = ()) -> None:
    """Everything but the pages: the board JSON files, methodology (with the accepted model `transitions`), changes, status, feed,
    downloads, static files, schemas. `snapshots_url`: the public page of the dated database snapshots; None when the site carries
    its own copy."""
    base = {"engine_version": ENGINE_VERSION}
    for path, document in plan.files.items():
        writer.write(path, json_file(document, compact=path != "api/changes.json"))  # the changes file is short: indented
    methodology = methodology_html(METHODOLOGY.read_text(encoding="utf-8"), transitions)
    writer.write("methodology/index.html", env.get_template("methodology.html").render(body=Markup(methodology), eras=ERAS, root="../", **base))
    writer.write(STATUS_PAGE, env.get_template("status.html").render(root="../", **status_context(status), **base))
    writer.write(STATUS_JSON, json_file(status_json(status)))
    alerts = feed_alerts(status, site_url)
    writer.write("feed.xml", env.get_template("feed.xml.j2").render(changes=plan.changes, alerts=alerts, site_url=site_url,
                                                                     updated=_feed_updated(plan.changes, alerts, now)))
    writer.write("downloads/leaderboard.csv", _csv(plan.rows))
    snapshot = snapshot_name(now)
    if snapshots_url is None:  # a published snapshot carries its own metadata, keyed to its own name, beside it in the store
        writer.write("downloads/metadata.json", json_file(download_metadata(site_url, snapshot)))
    writer.write("downloads/index.html", env.get_template("downloads.html").render(snapshot=snapshot, lite_url=lite_link(site_url, snapshot),
                                                                                   snapshots_url=snapshots_url, root="../", **base))
    writer.write("404.html", env.get_template("404.html").render(root=site_url, **base))  # served at any path: absolute links
    writer.write("robots.txt", f"User-agent: *\nAllow: /\nSitemap: {site_url}sitemap.xml\n")
    for path in sorted(STATIC.rglob("*")):
        if path.is_file():
            writer.write(f"static/{path.relative_to(STATIC).as_posix()}", path.read_bytes())
    for name, schema in schemas.published(rubrics).items():
        writer.write(f"api/schema/{name}", json.dumps(schema, indent=2, ensure_ascii=False) + "\n")


def sitemap(site_url: str, pages: list[str]) -> str:
    urls = "".join(f"<url><loc>{escape(site_url + page.removesuffix('index.html'))}</loc></url>" for page in pages)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'


def finish(writer: SiteWriter, fingerprints: Fingerprints, site_url: str) -> None:
    """The sitemap of every page written or kept, the fingerprints for the next build, and the removal of what it no longer makes."""
    pages = sorted(p for p in writer.claimed if p.endswith(".html") and p != "404.html")
    writer.write("sitemap.xml", sitemap(site_url, pages))
    writer.write(MANIFEST, fingerprints.manifest())
    writer.remove_stale()
