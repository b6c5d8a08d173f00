"""Score: turn stored evidence into score cards, with no network. Rescoring is always safe."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Sequence

from sqlite_utils import Database

from pipeline import db as store
from pipeline.models import ScoreCard, Server, StageReport
from pipeline.progress import Progress
from pipeline.score import outside_in, remote, review, scoreboard
from pipeline.score.facts import Facts, gather_many

RUBRICS = {
    scoreboard.RUBRIC: scoreboard.score,
    review.RUBRIC: review.score,
    outside_in.RUBRIC: outside_in.score,
    remote.RUBRIC: remote.score,
}


def score_all(facts: Facts) -> list[ScoreCard]:
    """Every rubric's card for one server: pure, deterministic."""
    return [score(facts) for score in RUBRICS.values()]


def run_score(db: Database, *, servers: Sequence[Server], now: datetime, progress: Progress | None = None) -> StageReport:
    started = time.monotonic()
    report = StageReport(stage="score")
    progress = progress or Progress("score", len(servers))
    cards: list[ScoreCard] = []
    for facts in gather_many(db, servers, now):
        server_cards = score_all(facts)
        cards.extend(server_cards)
        headline = server_cards[0]
        shown = f"{headline.composite:.1f} {headline.grade} ({headline.dimension_indicator}, {headline.visibility})" if headline.composite is not None else f"unscored ({headline.dimension_indicator})"
        progress.step(facts.server.id, shown)
    counts = store.write_scores(db, cards, now)
    report.counts.update(counts)
    report.counts["graded"] = sum(1 for c in cards if c.grade and c.rubric == scoreboard.RUBRIC)
    report.seconds = time.monotonic() - started
    return report
