"""Build: render the database into a static site (HTML, badge SVGs, JSON), incrementally."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline import db as store
from pipeline.config import REPO_ROOT
from pipeline.models import StageReport
from pipeline.render.badges import score_badge
from pipeline.render.contexts import leaderboard_rows, server_page
from pipeline.render.writer import SiteWriter
from pipeline.score.scoreboard import RUBRIC

TEMPLATES = REPO_ROOT / "site" / "templates"
STATIC = REPO_ROOT / "site" / "static"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "xml", "svg", "j2"], default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = lambda v: "–" if v is None else f"{v:.1f}"
    return env


def _json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def run_build(db: Database, *, site_dir: Path, now: datetime) -> StageReport:
    started = time.monotonic()
    env = environment()
    writer = SiteWriter(site_dir)
    servers = store.active_servers(db)
    scores = store.load_scores(db, RUBRIC)
    others = {rubric: store.load_scores(db, rubric) for rubric in ("review", "outside-in", "remote")}
    probes = {}
    for server in servers:
        latest = store.latest_probe(db, server.id)
        if latest:
            probes[server.id] = latest
    rows = leaderboard_rows(servers, scores, {k: v[1] for k, v in probes.items()})
    # No build timestamp in pages: a page changes only when what it shows changes.
    base = {"engine_version": ENGINE_VERSION}

    writer.write("index.html", env.get_template("leaderboard.html").render(rows=rows, root="", **base))
    writer.write("api/servers.json", _json({"engine_version": ENGINE_VERSION, "servers": rows}))
    for server in servers:
        analysis_row = store.latest_analysis(db, server.id)
        analysis = analysis_row[1].model_dump(mode="json", exclude={"files"}) if analysis_row else None
        context = server_page(
            server, scores.get(server.id), probes.get(server.id), analysis,
            store.score_history(db, server.id, RUBRIC), now,
            other_cards={rubric: cards[server.id] for rubric, cards in others.items() if server.id in cards},
        )
        writer.write(f"servers/{server.id}/index.html", env.get_template("server.html").render(page=context, root="../../", **base))
        writer.write(f"api/servers/{server.id}.json", _json(context))
        card = scores.get(server.id) or {}
        writer.write(
            f"badge/{server.id}.svg",
            score_badge(card.get("composite"), card.get("grade"), card.get("dimension_indicator") or "0/0"),
        )
    for path in sorted(STATIC.rglob("*")):
        if path.is_file():
            writer.write(f"static/{path.relative_to(STATIC).as_posix()}", path.read_bytes())
    writer.remove_stale()
    return StageReport(stage="build", counts={"servers": len(servers), **writer.counts}, seconds=time.monotonic() - started)
