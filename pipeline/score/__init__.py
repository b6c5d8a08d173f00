"""Score: turn stored evidence into score cards, with no network. Rescoring is always safe."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Sequence

from sqlite_utils import Database

from pipeline import db as store
from pipeline.models import ScoreCard, Server, StageReport
from pipeline.progress import Progress
from pipeline.score import scoreboard
from pipeline.score.facts import gather

RUBRICS = {scoreboard.RUBRIC: scoreboard.score}


def run_score(db: Database, *, servers: Sequence[Server], now: datetime, progress: Progress | None = None) -> StageReport:
    started = time.monotonic()
    report = StageReport(stage="score")
    progress = progress or Progress("score", len(servers))
    cards: list[ScoreCard] = []
    for server in servers:
        facts = gather(db, server, now)
        for rubric, score in RUBRICS.items():
            card = score(facts)
            cards.append(card)
            if rubric == scoreboard.RUBRIC:
                shown = f"{card.composite:.1f} {card.grade} ({card.dimension_indicator}, {card.visibility})" if card.composite is not None else f"unscored ({card.dimension_indicator})"
                progress.step(server.id, shown)
    counts = store.write_scores(db, cards, now)
    report.counts.update(counts)
    report.counts["graded"] = sum(1 for c in cards if c.grade)
    report.seconds = time.monotonic() - started
    return report
