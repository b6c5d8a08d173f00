"""Build: render the database into a static site (HTML, badge SVGs, JSON), incrementally, in four steps.

load (every read, batched) → plan (pure: boards, public files, what each page depends on) → render (server and
board pages, through an executor: here or in worker processes) → finish (shared files, snapshot, sitemap, clean-up).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from pipeline import store
from pipeline.assets import TEMPLATES
from pipeline.collector import without_cyclic_gc
from pipeline.fleet.status import status_of
from pipeline.listing_only import listing_only
from pipeline.models import RubricInfo, StageReport
from pipeline.progress import Progress
from pipeline.render.executors import Executor, ForkPool, Serial
from pipeline.render.fingerprints import Fingerprints, code_fingerprint
from pipeline.render.finish import Snapshot, finish, scratch_of, snapshot_name, write_shared
from pipeline.render.load import load_site
from pipeline.render.plan import SitePlan, page_inputs, plan_site
from pipeline.render.rendering import Renderer, tasks
from pipeline.render.writer import SiteWriter

PARALLEL_FROM = 1000  # server pages to render before worker processes pay for themselves
PARALLEL_BOARD_ROWS = 10_000  # or board rows: at scale the boards are most of a rebuild


def run_build(
    db: Database, *, rubrics: Sequence[RubricInfo], site_dir: Path, now: datetime, site_url: str = "http://localhost:8000/",
    datasette_url: str = "http://localhost:8001/", workers: int | None = None, executor: Executor | None = None,
    snapshots_url: str | None = None, run_id: int | None = None, progress: Progress | None = None,
) -> StageReport:
    """Build the site into `site_dir`; pages whose inputs are unchanged since the last build are kept as they are.

    The database download: with `snapshots_url` (the public page of the dated snapshots a run publishes, e.g. a GitHub
    release) the downloads page links them and the site holds no copy (deviation 102: a copy per build is most of a
    25,000-server site); without it (a local site) the build copies the database into downloads/ as before, its runs row
    `run_id` (this build's) ended in the copy as the report says.
    `executor` renders the pages; by default worker processes (`workers`, one per core) once there are enough pages to pay for them.
    `progress` gets a line per rendered batch of server or board pages (count, rate, time left).
    """
    started, laps = time.monotonic(), Laps()
    site_url = site_url.rstrip("/") + "/"
    writer = SiteWriter(site_dir)
    database = store.database_path(db)
    local = snapshots_url is None
    copy = f"downloads/{snapshot_name(now)}"
    if local:
        writer.reserve(scratch_of(copy))
    with without_cyclic_gc(), Snapshot(database, writer.path_for(copy) if local else None) as snapshot:
        site = load_site(db, rubrics, now)
        status, transitions = status_of(db, now), store.accepted_transitions(db)
        laps("load")
        plan = plan_site(site, rubrics, now)
        fingerprints = Fingerprints(site_dir, code_fingerprint(TEMPLATES, site_url, datasette_url), writer.existing)
        todo = _keep_unchanged(writer, fingerprints, page_inputs(site, rubrics, now), {s.id for s in site.servers if listing_only(s)})
        laps("plan")
        renderer = Renderer(site_dir, database, rubrics, {server.id: server for server in site.servers}, plan.boards, fingerprints, now, site_url,
                            f"{datasette_url.rstrip('/')}/{Path(database).stem}")
        executor = executor or _default_executor(plan, todo, workers)
        batches = tasks(todo, plan.boards)
        progress = progress or Progress("build", len(batches))
        progress.note(f"{len(todo)} server pages to render, {len(site.servers) - len(todo)} unchanged and kept; {len(plan.boards)} boards; "
                      f"{len(batches)} batches")
        with closing(executor.map(renderer.run, batches)) as rendered:
            write_shared(writer, renderer.environment(), plan, rubrics, status=status, site_url=site_url, now=now,
                         snapshots_url=snapshots_url, transitions=transitions)
            laps("shared files")
            for claimed, counts, taken in rendered:  # in the order the batches finish
                writer.adopt(claimed, counts)
                fingerprints.current.update(taken)
                progress.step(_batch(claimed), ", ".join(f"{key} {value}" for key, value in counts.items() if value) or "nothing to write")
            snapshot.wait()
        laps("pages and snapshot")
        finish(writer, fingerprints, site_url)
        laps("finish")
        seconds = time.monotonic() - started
        report = StageReport(stage="build", counts={"servers": len(site.servers), **writer.counts}, seconds=seconds, phases=laps.phases,
                             finished_at=now + timedelta(seconds=seconds))
        snapshot.conclude(run_id, report)
    return report


def _batch(claimed: set[str]) -> str:
    """What a rendered batch was, from the files it claimed: server pages, or a board's pages."""
    servers = sum(1 for path in claimed if path.startswith("servers/") and path.endswith(".html") and path.count("/") == 1)
    return f"{servers} server pages" if servers else f"{len(claimed)} board pages"


def _keep_unchanged(writer: SiteWriter, fingerprints: Fingerprints, pages: Iterable[tuple[str, list[Any]]], listed: set[str]) -> list[str]:
    """Keep each server's files whose inputs have not changed since the last build; return the servers to render. A
    listing-only server (`listed`) has a page and its JSON, and no badge."""
    todo = []
    for server_id, inputs in pages:
        outputs = [f"servers/{server_id}.html", f"api/servers/{server_id}.json"]
        if server_id not in listed:
            outputs += [f"badge/{server_id}.svg", f"badge/{server_id}.json"]
        if fingerprints.unchanged(outputs[0], inputs, outputs):
            optional = [f"servers/{server_id}.trend.svg", f"servers/{server_id}.reliability.svg"]
            for path in outputs + [p for p in optional if p in writer.existing]:
                writer.keep(path)
        else:
            todo.append(server_id)
    return todo


def _default_executor(plan: SitePlan, todo: list[str], workers: int | None) -> Executor:
    """Server and board pages are nearly all of a build: worker processes render them, each writing its own files,
    while this process writes the shared files and the snapshot is taken; for a few pages, forking costs more than it saves."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    big = len(todo) >= PARALLEL_FROM or sum(len(b.rows) for b in plan.boards) >= PARALLEL_BOARD_ROWS
    return ForkPool(workers) if workers > 1 and big else Serial()


class Laps:
    """Wall seconds of each phase, for benchmarks."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.last = time.monotonic()

    def __call__(self, phase: str) -> None:
        now = time.monotonic()
        self.phases[phase] = round(now - self.last, 2)
        self.last = now
