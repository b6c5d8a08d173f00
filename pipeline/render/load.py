"""Load: every read the build makes, batched. Nothing here writes, and nothing reads one server at a time.

The whole site's summaries are read once, up front (`load_site`). The full inputs of server pages (every
rule of every card, the latest probe's evidence) are read by whoever renders them, a batch at a time
(`load_pages`): held for all 25,000 servers at once they would be several times the build's memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from pipeline import store
from pipeline.models import ProbeResult, RubricInfo, Server
from pipeline.render.contexts import Observed

CHANGES_WINDOW_DAYS = 30


@dataclass(frozen=True)
class SiteInputs:
    """What the boards, the shared files and the page fingerprints need: summaries of every active server."""

    servers: list[Server]
    scores: dict[str, dict[str, dict[str, Any]]]  # rubric -> server id -> card summary (no rules)
    probes: dict[str, dict[str, Any]]  # latest probe summaries
    analyses: dict[str, int]  # latest analysis ids
    stamps: dict[str, list[Any]]  # what else a page shows changed (db.page_evidence_stamps)
    changes_since: str
    changes: list[dict[str, Any]]  # the headline rubric's recent score changes


def load_site(db: Database, rubrics: Sequence[RubricInfo], now: datetime) -> SiteInputs:
    today = now.astimezone(timezone.utc).date()
    since = (today - timedelta(days=CHANGES_WINDOW_DAYS)).isoformat()
    headline = next(r.name for r in rubrics if r.headline)
    return SiteInputs(
        servers=store.active_servers(db),
        scores={rubric.name: store.load_scores(db, rubric.name) for rubric in rubrics},
        probes=store.latest_probe_summaries(db),
        analyses=store.latest_analysis_ids(db),
        stamps=store.page_evidence_stamps(db, (today - timedelta(days=1)).isoformat()),
        changes_since=since,
        changes=store.score_changes(db, headline, since),
    )


@dataclass(frozen=True)
class PageInputs:
    """Everything one server page shows, as stored."""

    server: Server
    cards: dict[str, dict[str, Any]]  # rubric -> full score row
    probe: tuple[int, ProbeResult] | None  # with its probe_runs id
    analysis: dict[str, Any] | None
    history: list[dict[str, Any]]
    observed: Observed


def load_pages(db: Database, servers: list[Server], *, headline: str, now: datetime) -> list[PageInputs]:
    """The page inputs of some servers (already loaded by `load_site`): one query per kind of evidence for the whole batch."""
    server_ids = [server.id for server in servers]
    cards = store.score_cards(db, server_ids)
    evidence = store.page_evidence(db, server_ids, rubric=headline, since=now - timedelta(hours=24),
                                   since_day=(now.astimezone(timezone.utc).date() - timedelta(days=29)).isoformat())
    probes = store.latest_probes(db, server_ids)
    analyses = store.latest_analyses(db, server_ids)
    pages = []
    for server in servers:
        found, analysis = evidence[server.id], analyses.get(server.id)
        observed = Observed(judgements=found["judgements"], changes=found["changes"], daily=found["daily"], last_day=found["last_day"],
                            records=found["records"])
        pages.append(PageInputs(
            server=server, cards={rubric: card for rubric, card in cards[server.id].items() if card is not None},
            probe=probes.get(server.id), analysis=analysis[1].model_dump(mode="json", exclude={"files"}) if analysis else None,
            history=found["history"], observed=observed,
        ))
    return pages


def read_only(database: str) -> Database:
    """A connection of a render worker's own: one inherited through fork must never be used."""
    return Database(sqlite3.connect(f"file:{Path(database).resolve()}?mode=ro", uri=True))
