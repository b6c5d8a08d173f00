"""Build: render the database into a static site (HTML, badge SVGs, JSON), incrementally."""

from __future__ import annotations

import csv
import hashlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from multiprocessing import get_context
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pydantic_core import from_json, to_json
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, store
from pipeline.assets import METHODOLOGY, SCHEMAS, STATIC, TEMPLATES
from pipeline.collector import without_cyclic_gc
from pipeline.config import REPO_ROOT
from pipeline.models import StageReport
from pipeline.render.badges import embed_snippets, score_badge, shields_endpoint
from pipeline.render.charts import reliability_svg, trend_svg
from pipeline.render.contexts import (
    BOARDS,
    FILTERS,
    HEADLINE_COLUMNS,
    PAGE_SIZE,
    VISIBILITY_ICONS,
    Observed,
    board_pages,
    board_rows,
    categories,
    cell,
    leaderboard_rows,
    methodology_html,
    score_changes,
    server_page,
)
from pipeline.render.datasette import metadata
from pipeline.render.writer import SiteWriter
from pipeline.score.scoreboard import RUBRIC
from pipeline.store import content_hash


class _DictFirstEnvironment(Environment):
    """Page contexts are plain dicts: look `row.name` up as a key first, not after a failed attribute lookup.

    Jinja's default tries getattr, catches the AttributeError, then subscripts; on a server page that
    costs a third of the render time. Methods (`.items()`, `.get()`) still resolve when no key has their name.
    """

    def getattr(self, obj, attribute):  # noqa: A003 - Jinja's hook
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def environment() -> Environment:
    env = _DictFirstEnvironment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "xml", "svg", "j2"], default_for_string=True),
        undefined=StrictUndefined,
        auto_reload=False,  # templates do not change during a build: no stat per page to check them
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = lambda v: "–" if v is None else f"{v:.1f}"
    # A rule row's points and its name as words: one call each instead of a format, a format and a replace
    # (a server page has about 85 rule rows, and filter calls are most of their cost).
    env.filters["points"] = lambda r: f"{r['points']:.1f} / {r['max_points']:.0f}" if r["measured"] else "not measured"
    env.filters["words"] = lambda name: name.replace("_", " ")
    env.globals.update(cell=cell, icons=VISIBILITY_ICONS, filters=FILTERS)
    return env


def _json(value: object, compact: bool = False) -> bytes:
    # Every API dict is built in a fixed key order (stored evidence was written with sorted keys),
    # so the output is stable without sorting; pydantic-core encodes it many times faster.
    # Board and server files are compact: the browser fetches boards whole for search and filters,
    # and 25,000 indented server files would be half a gigabyte of spaces.
    return to_json(value, indent=None if compact else 2) + b"\n"


@dataclass(frozen=True)
class _BoardJob:
    prefix: str
    rows: list[dict]
    context: dict


def _boards(servers: list, rows: list[dict], others: dict, base: dict) -> tuple[list[_BoardJob], dict[str, list[dict]]]:
    """Every board to pre-render (headline, one per category, one per rubric), and each rubric's rows for its JSON."""
    headline = ("MCP server leaderboard", "Ordered by visibility tier (how much we could measure), then by composite score.")
    present = categories(rows)
    common = {"board": RUBRIC, "intro": headline[1], "columns": HEADLINE_COLUMNS, "categories": present, "tiers": True, **base}
    jobs = [_BoardJob("", rows, {**common, "title": headline[0], "category": None})]
    for found in present:
        jobs.append(_BoardJob(f"category/{found['slug']}/", [r for r in rows if r["category"] == found["name"]],
                              {**common, "title": f"{found['name']} servers", "category": found["name"]}))
    by_id = {row["id"]: row for row in rows}
    rubric_rows = {}
    for rubric, (title, intro, columns) in BOARDS.items():
        rubric_rows[rubric] = board_rows(rubric, servers, others[rubric])
        shown = [{**by_id[row["id"]], **row} for row in rubric_rows[rubric]]  # description and filter fields come from the index
        jobs.append(_BoardJob(f"{rubric}/", shown, {"board": rubric, "title": title, "intro": intro, "columns": columns, "categories": [],
                                                     "category": None, "tiers": False, **base}))
    return jobs, rubric_rows


def _render_board(writer: SiteWriter, env: Environment, fingerprints: Fingerprints, job: _BoardJob, numbers: range | None = None) -> None:
    """Render a board's pages (or some of them), keeping those whose rows and context are unchanged."""
    template = env.get_template("board.html")
    pages = board_pages(job.prefix, job.rows)
    for page in pages if numbers is None else pages[numbers.start : numbers.stop]:
        if fingerprints.unchanged(page["path"], [page, job.context]):
            writer.keep(page["path"])
        else:
            writer.write(page["path"], template.render(page=page, root=page["root"], **job.context))


MANIFEST = ".build-manifest.json"  # input fingerprints of the last build's pages


class Fingerprints:
    """Skips pages whose inputs match the last build's: a fingerprint per page, kept in the manifest."""

    def __init__(self, site_dir: Path, code: str, existing: set[str]) -> None:
        self.previous = _read_manifest(site_dir / MANIFEST).get("pages") or {}
        self.current: dict[str, str] = {}
        self.code, self.existing = code, existing

    def unchanged(self, path: str, inputs: object, outputs: list[str] | None = None) -> bool:
        digest = hashlib.sha256(to_json([self.code, inputs], fallback=str)).hexdigest()
        self.current[path] = digest
        return self.previous.get(path) == digest and all(p in self.existing for p in (outputs or [path]))

    def fork(self) -> Fingerprints:
        """The same last build with nothing taken yet: a worker's share, merged back by the parent."""
        twin = Fingerprints.__new__(Fingerprints)
        twin.previous, twin.code, twin.existing, twin.current = self.previous, self.code, self.existing, {}
        return twin

    def manifest(self) -> bytes:
        return to_json({"pages": dict(sorted(self.current.items()))}) + b"\n"


def _server_outputs(server_id: str) -> list[str]:
    return [f"servers/{server_id}.html", f"api/servers/{server_id}.json", f"badge/{server_id}.svg", f"badge/{server_id}.json"]


def _optional_outputs(server_id: str) -> list[str]:
    return [f"servers/{server_id}.trend.svg", f"servers/{server_id}.reliability.svg"]


def _read_manifest(path: Path) -> dict:
    try:
        value = from_json(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _code_fingerprint(site_url: str, datasette_url: str) -> str:
    """What every page depends on besides its server: templates, the engine, the URLs it links to."""
    templates = sorted((p.name, p.read_bytes()) for p in TEMPLATES.glob("*"))
    return content_hash([ENGINE_VERSION, site_url, datasette_url, [(name, hashlib.sha256(data).hexdigest()) for name, data in templates]])


def _score_age(card: dict | None, now: datetime) -> int | None:
    if not card or not card.get("scored_at"):
        return None
    return (now - datetime.fromisoformat(card["scored_at"])).days


PARALLEL_FROM = 1000  # server pages to render before worker processes pay for themselves
PARALLEL_BOARD_ROWS = 10_000  # or board rows: at scale the boards are most of a rebuild
RENDER_TASK = 200  # servers per task
BOARD_TASK = 40  # board pages per task


@dataclass(frozen=True)
class _RenderJob:
    site_dir: str
    database: str
    now: datetime
    site_url: str
    rows_url: str


# Filled before the pool forks, so workers inherit board rows and fingerprints rather than receive them pickled.
_render_state: dict = {}


def _render_worker_init(job: _RenderJob) -> None:
    import gc
    import sqlite3

    # Everything inherited through fork (catalog, cards, board rows) stays put: the collector no longer walks
    # it, and walking it would copy every page of it out of the shared memory. The collector itself is back on
    # (the parent paused it): charts are full of reference cycles.
    gc.freeze()
    gc.enable()

    # The worker's own connection: the parent's, inherited through fork, is never used here.
    _render_state.update(job=job, env=environment(), db=Database(sqlite3.connect(f"file:{job.database}?mode=ro", uri=True)))


def _render_task(task: tuple[str, Any]) -> tuple[set[str], dict[str, int], dict[str, str]]:
    """A worker's task: a chunk of servers, or a run of one board's pages. Returns what it wrote and the fingerprints it took."""
    kind, payload = task
    fingerprints = _render_state["fingerprints"].fork()
    writer = SiteWriter(Path(_render_state["job"].site_dir), existing=fingerprints.existing)
    if kind == "servers":
        _render_servers(writer, _render_state["env"], _render_state["db"], _render_state["job"], payload)
    else:
        index, first, last = payload
        _render_board(writer, _render_state["env"], fingerprints, _render_state["boards"][index], range(first, last))
    return writer.claimed, writer.counts, fingerprints.current


def _render_servers(writer: SiteWriter, env: Environment, db: Database, job: _RenderJob, server_ids: list[str]) -> None:
    """Render some servers' pages, reading their full score cards only now (the build holds summaries)."""
    cards = store.score_cards(db, server_ids)
    evidence = store.page_evidence(db, server_ids, rubric=RUBRIC, since=job.now - timedelta(hours=24),
                                   since_day=(job.now.astimezone(timezone.utc).date() - timedelta(days=29)).isoformat())
    for server in store.active_servers(db, server_ids):
        _render_server(writer, env, db, server, cards[server.id], evidence[server.id], job, {"engine_version": ENGINE_VERSION})


def _render_server(writer: SiteWriter, env: Environment, db: Database, server, cards: dict, evidence: dict, job: _RenderJob,
                   base: dict) -> None:
    now, site_url, rows_url = job.now, job.site_url, job.rows_url
    probe = store.latest_probe(db, server.id)
    analysis_row = store.latest_analysis(db, server.id)
    analysis = analysis_row[1].model_dump(mode="json", exclude={"files"}) if analysis_row else None
    observed = Observed(judgements=evidence["judgements"], changes=evidence["changes"], daily=evidence["daily"],
                        last_day=evidence["last_day"], records=evidence["records"])
    context = server_page(
        server, cards.get(RUBRIC), probe, analysis, evidence["history"], now,
        other_cards={rubric: card for rubric, card in cards.items() if rubric != RUBRIC and card is not None}, observed=observed,
    )
    context["embed"] = embed_snippets(site_url, server.id)
    context["datasette"] = {"server": f"{rows_url}/servers/{server.id}", "probes": f"{rows_url}/probe_runs?server_id={server.id}",
                            "scores": f"{rows_url}/scores?server_id={server.id}"}
    # One folder for every server page: a folder per server costs a directory and a scattered file creation each,
    # three times the file system work of a flat folder (measured: 25,000 pages 14.4 s of system time vs 4.1 s).
    writer.write(f"servers/{server.id}.html", env.get_template("server.html").render(page=context, root="../", **base))
    writer.write(f"api/servers/{server.id}.json", _json(context, compact=True))
    card = cards.get(RUBRIC) or {}
    indicator = card.get("dimension_indicator") or "0/0"
    writer.write(f"badge/{server.id}.svg", score_badge(card.get("composite"), card.get("grade"), indicator))
    writer.write(f"badge/{server.id}.json", _json(shields_endpoint(card.get("composite"), card.get("grade"), indicator)))
    if context["trend_chart"]:
        writer.write(f"servers/{server.id}.trend.svg", trend_svg(f"trend-{server.id}", context["history"]))
    if context["reliability"] and len(context["reliability"]["days"]) > 1:
        writer.write(f"servers/{server.id}.reliability.svg", reliability_svg(f"reliability-{server.id}", context["reliability"]["days"]))


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    table = csv.DictWriter(out, fieldnames=LEADERBOARD_CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    table.writeheader()
    table.writerows(rows)
    return out.getvalue()


def _feed_updated(changes: list[dict], now: datetime) -> str:
    return changes[0]["day"] + "T00:00:00Z" if changes else now.astimezone(timezone.utc).date().isoformat() + "T00:00:00Z"


def sitemap(site_url: str, pages: list[str]) -> str:
    urls = "".join(f"<url><loc>{escape(site_url + page.removesuffix('index.html'))}</loc></url>" for page in pages)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'


CHANGES_WINDOW_DAYS = 30
LEADERBOARD_CSV_COLUMNS = ["rank", "id", "name", "composite", "grade", "visibility", "dimension_indicator", "transport", "era",
                           "protocol_version", "tool_count", "probe_outcome", "last_scored_at"]


def _snapshot_name(now: datetime) -> str:
    return f"scoreboard-{now.astimezone(timezone.utc).date().isoformat()}-engine-{ENGINE_VERSION}.db"


def _start_snapshot(source: str, target: Path, cleanup: ExitStack) -> Callable[[], None]:
    """Copy the database for download in a child process, beside the whole build; returns the wait, which raises on failure.

    A process, not a thread: the render pool forks later, and forking while a thread holds SQLite's locks could deadlock.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from pipeline.store import snapshot; snapshot(sys.argv[1], Path(sys.argv[2]))",
         str(Path(source).resolve()), str(target.resolve())],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )

    def stop() -> None:
        if child.poll() is None:
            child.kill()
            child.wait()

    cleanup.callback(stop)

    def wait() -> None:
        _, error = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"database snapshot for download failed: {error.decode(errors='replace').strip().splitlines()[-1:]}")

    return wait


def _write_shared(writer: SiteWriter, env: Environment, db: Database, servers: list, rows: list[dict], rubric_rows: dict[str, list[dict]],
                  database: str, site_url: str, now: datetime, base: dict) -> None:
    """Everything but the pages: the board JSON files, methodology, changes, feed, downloads, static files."""
    writer.write("api/servers.json", _json({"engine_version": ENGINE_VERSION, "servers": rows}, compact=True))
    for rubric, board in rubric_rows.items():
        writer.write(f"api/{rubric}.json", _json({"engine_version": ENGINE_VERSION, "rubric": rubric, "servers": board}, compact=True))
    methodology = methodology_html(METHODOLOGY.read_text(encoding="utf-8"))
    writer.write("methodology/index.html", env.get_template("methodology.html").render(body=Markup(methodology), root="../", **base))
    names = {s.id: s.name for s in servers}
    since = (now.astimezone(timezone.utc).date() - timedelta(days=CHANGES_WINDOW_DAYS)).isoformat()
    changes = score_changes(store.score_changes(db, RUBRIC, since), names)
    writer.write("api/changes.json", _json({"engine_version": ENGINE_VERSION, "rubric": RUBRIC, "since": since, "changes": changes}))
    writer.write("feed.xml", env.get_template("feed.xml.j2").render(changes=changes, site_url=site_url, updated=_feed_updated(changes, now)))
    writer.write("downloads/leaderboard.csv", _csv(rows))
    snapshot_name = _snapshot_name(now)
    writer.write("downloads/metadata.json", _json(metadata(database)))
    writer.write("downloads/index.html", env.get_template("downloads.html").render(snapshot=snapshot_name, site_url=site_url, root="../", **base))
    writer.write("404.html", env.get_template("404.html").render(root=site_url, **base))  # served at any path: absolute links
    writer.write("robots.txt", f"User-agent: *\nAllow: /\nSitemap: {site_url}sitemap.xml\n")
    for path in sorted(STATIC.rglob("*")):
        if path.is_file():
            writer.write(f"static/{path.relative_to(STATIC).as_posix()}", path.read_bytes())
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        writer.write(f"api/schema/{path.name}", path.read_bytes())


def run_build(
    db: Database, *, site_dir: Path, now: datetime, site_url: str = "http://localhost:8000/", datasette_url: str = "http://localhost:8001/",
    workers: int | None = None,
) -> StageReport:
    with ExitStack() as cleanup, without_cyclic_gc():  # cleanup stops the snapshot process if the build fails
        return _build(db, cleanup, site_dir=site_dir, now=now, site_url=site_url, datasette_url=datasette_url, workers=workers)


def _build(db: Database, cleanup: ExitStack, *, site_dir: Path, now: datetime, site_url: str, datasette_url: str, workers: int | None) -> StageReport:
    started = time.monotonic()
    laps = [("start", started)]

    def lap(phase: str) -> None:
        laps.append((phase, time.monotonic()))

    site_url = site_url.rstrip("/") + "/"
    database = Path(store.database_path(db)).stem
    rows_url = f"{datasette_url.rstrip('/')}/{database}"
    env = environment()
    writer = SiteWriter(site_dir)
    snapshot_done = _start_snapshot(store.database_path(db), writer.path_for(f"downloads/{_snapshot_name(now)}"), cleanup)
    servers = store.active_servers(db)
    scores = store.load_scores(db, RUBRIC)
    others = {rubric: store.load_scores(db, rubric) for rubric in ("review", "outside-in", "remote")}
    probes = store.latest_probe_summaries(db)
    analyses = store.latest_analysis_ids(db)
    stamps = store.page_evidence_stamps(db, (now.astimezone(timezone.utc).date() - timedelta(days=1)).isoformat())
    rows = leaderboard_rows(servers, scores, probes)
    fingerprints = Fingerprints(site_dir, _code_fingerprint(site_url, datasette_url), writer.existing)
    # No build timestamp in pages: a page changes only when what it shows changes.
    base = {"engine_version": ENGINE_VERSION}

    lap("load")
    todo: list[str] = []
    for server in servers:
        cards = {RUBRIC: scores.get(server.id), **{rubric: cards.get(server.id) for rubric, cards in others.items()}}
        probe_summary = probes.get(server.id)
        inputs = [
            server.model_dump_json(), {r: (c or {}).get("scored_at") for r, c in cards.items()},
            probe_summary["id"] if probe_summary else None, analyses.get(server.id), stamps.get(server.id), _score_age(cards[RUBRIC], now),
        ]
        outputs = _server_outputs(server.id)
        # A page whose inputs have not changed since the last build is kept as it is, unrendered.
        if fingerprints.unchanged(outputs[0], inputs, outputs):
            for path in outputs + [p for p in _optional_outputs(server.id) if p in writer.existing]:
                writer.keep(path)
            continue
        todo.append(server.id)
    lap("fingerprints")
    boards, rubric_rows = _boards(servers, rows, others, base)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    job = _RenderJob(str(site_dir), store.database_path(db), now, site_url, rows_url)
    board_rows_total = sum(len(b.rows) for b in boards)
    with ExitStack() as stack:
        rendered: Iterator[tuple[set[str], dict[str, int], dict[str, str]]] = iter(())
        if workers > 1 and (len(todo) >= PARALLEL_FROM or board_rows_total >= PARALLEL_BOARD_ROWS):
            # Server pages and board pages are nearly all of a build: worker processes render them, each writing
            # its own files, while this process writes the JSON, the feeds and the snapshot.
            _render_state.update(boards=boards, fingerprints=fingerprints)
            stack.callback(_render_state.clear)
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"),
                                                           initializer=_render_worker_init, initargs=(job,)))
            tasks: list[tuple[str, Any]] = [("servers", todo[i : i + RENDER_TASK]) for i in range(0, len(todo), RENDER_TASK)]
            for index, board in enumerate(boards):
                count = max(1, -(-len(board.rows) // PAGE_SIZE))
                tasks += [("boards", (index, first, min(count, first + BOARD_TASK))) for first in range(0, count, BOARD_TASK)]
            rendered = pool.map(_render_task, tasks)
        else:
            for start in range(0, len(todo), RENDER_TASK):
                _render_servers(writer, env, db, job, todo[start : start + RENDER_TASK])
            for board in boards:
                _render_board(writer, env, fingerprints, board)
        _write_shared(writer, env, db, servers, rows, rubric_rows, database, site_url, now, base)
        lap("feeds")
        for claimed, counts, taken in rendered:
            writer.adopt(claimed, counts)
            fingerprints.current.update(taken)
        snapshot_done()
    lap("pages and snapshot")
    pages = sorted(p for p in writer.claimed if p.endswith(".html") and p != "404.html")
    writer.write("sitemap.xml", sitemap(site_url, pages))
    writer.write(MANIFEST, fingerprints.manifest())
    writer.remove_stale()
    lap("finish")
    phases = {name: round(t - laps[i][1], 2) for i, (name, t) in enumerate(laps[1:])}
    return StageReport(stage="build", counts={"servers": len(servers), **writer.counts}, seconds=time.monotonic() - started, phases=phases)
