"""Render: server pages and board pages, as tasks an executor runs here or in worker processes.

A task is a batch of server ids (read, planned and rendered together) or a run of one board's pages.
Each returns what it wrote and the fingerprints it took, for the build to merge.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment
from pydantic_core import to_json
from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline.models import RubricInfo, Server
from pipeline.render.badges import score_badge, shields_endpoint
from pipeline.render.boards import PAGE_SIZE, board_pages
from pipeline.render.charts import trend_svg
from pipeline.render.contexts import server_page
from pipeline.render.environment import environment
from pipeline.render.fingerprints import Fingerprints
from pipeline.render.load import PageInputs, load_pages, read_only
from pipeline.render.plan import BoardJob
from pipeline.render.reliability_chart import reliability_svg
from pipeline.render.writer import SiteWriter

RENDER_TASK = 200  # servers per task
BOARD_TASK = 40  # board pages per task

Task = tuple[str, Any]
Rendered = tuple[set[str], dict[str, int], dict[str, str]]


def json_file(value: object, compact: bool = False, exclude_none: bool = False) -> bytes:
    # Every API document is built in a fixed key order (stored evidence was written with sorted keys),
    # so the output is stable without sorting; pydantic-core encodes it many times faster.
    # Board and server files are compact: the browser fetches boards whole for search and filters,
    # and 25,000 indented server files would be half a gigabyte of spaces.
    # A server file leaves its nulls out (deviation 106): its schema marks every field that may be null as optional.
    return to_json(value, indent=None if compact else 2, exclude_none=exclude_none) + b"\n"


def tasks(servers: list[str], boards: list[BoardJob]) -> list[Task]:
    """Server pages in batches, and every board's pages in runs."""
    found: list[Task] = [("servers", servers[i : i + RENDER_TASK]) for i in range(0, len(servers), RENDER_TASK)]
    for index, board in enumerate(boards):
        count = max(1, -(-len(board.rows) // PAGE_SIZE))
        found += [("boards", (index, first, min(count, first + BOARD_TASK))) for first in range(0, count, BOARD_TASK)]
    return found


@dataclass
class Renderer:
    """What rendering needs, held for its tasks: a worker process inherits it whole through fork."""

    site_dir: Path
    database: str
    rubrics: Sequence[RubricInfo]
    servers: dict[str, Server]  # every active server, as load_site read them: a batch's pages need not read them again
    boards: list[BoardJob]
    fingerprints: Fingerprints
    now: datetime
    site_url: str
    rows_url: str
    _env: Environment | None = field(default=None, repr=False)
    _db: tuple[int, Database] | None = field(default=None, repr=False)

    def run(self, task: Task) -> Rendered:
        kind, payload = task
        fingerprints = self.fingerprints.fork()
        writer = SiteWriter(self.site_dir, existing=fingerprints.existing)
        if kind == "servers":
            headline = next(r.name for r in self.rubrics if r.headline)
            servers = [self.servers[server_id] for server_id in payload]
            for page in load_pages(self._connection(), servers, headline=headline, now=self.now):
                self._server(writer, page, headline)
        else:
            index, first, last = payload
            self._board(writer, fingerprints, self.boards[index], range(first, last))
        return writer.claimed, writer.counts, fingerprints.current

    def environment(self) -> Environment:
        if self._env is None:
            self._env = environment(self.rubrics)
        return self._env

    def _connection(self) -> Database:
        """This process's own read-only connection (a forked worker opens its own on its first task)."""
        if self._db is None or self._db[0] != os.getpid():
            self._db = (os.getpid(), read_only(self.database))
        return self._db[1]

    def _server(self, writer: SiteWriter, inputs: PageInputs, headline: str) -> None:
        server, card = inputs.server, inputs.cards.get(headline)
        page = server_page(server, card, inputs.probe, inputs.analysis, inputs.history, self.now, rubrics=self.rubrics,
                           other_cards={r: c for r, c in inputs.cards.items() if r != headline}, observed=inputs.observed,
                           site_url=self.site_url, rows_url=self.rows_url)
        # One folder for every server page: a folder per server costs a directory and a scattered file creation each,
        # three times the file system work of a flat folder (measured: 25,000 pages 14.4 s of system time vs 4.1 s).
        template = "listed_server.html" if page.server.listing_only else "server.html"
        html = self.environment().get_template(template).render(page=page, root="../", engine_version=ENGINE_VERSION)
        writer.write(f"servers/{server.id}.html", html)
        writer.write(f"api/servers/{server.id}.json", json_file(page, compact=True, exclude_none=True))
        if page.server.listing_only:
            return  # nothing measured: no badge, no charts (deviation 80)
        card = card or {}
        indicator = card.get("dimension_indicator") or "0/0"
        writer.write(f"badge/{server.id}.svg", score_badge(card.get("composite"), card.get("grade"), indicator))
        writer.write(f"badge/{server.id}.json", json_file(shields_endpoint(card.get("composite"), card.get("grade"), indicator)))
        # One chart id for every server's chart: a chart is its own file, shown as <img>, so its stylesheet (scoped by the id,
        # a hundred times) cannot meet another chart's; an id per server was a fifth of each chart (deviation 103).
        if page.trend_chart:
            writer.write(f"servers/{server.id}.trend.svg", trend_svg("t", page.history))
        if page.reliability and len(page.reliability["days"]) > 1:
            writer.write(f"servers/{server.id}.reliability.svg", reliability_svg(page.reliability["days"]))  # drawn directly (deviation 134)

    def _board(self, writer: SiteWriter, fingerprints: Fingerprints, job: BoardJob, numbers: range) -> None:
        """Render some of a board's pages, keeping those whose rows and context are unchanged."""
        template = self.environment().get_template("board.html")
        for page in board_pages(job.prefix, job.rows)[numbers.start : numbers.stop]:
            if fingerprints.unchanged(page["path"], [page, job.context]):
                writer.keep(page["path"])
            else:
                writer.write(page["path"], template.render(page=page, root=page["root"], **job.context))
