"""Every rubric the scoreboard publishes, in the order the site shows them."""

from __future__ import annotations

from pipeline.models import BoardColumn, RubricInfo
from pipeline.score import outside_in, remote, review, scoreboard

RUBRIC_INFOS = [
    RubricInfo(scoreboard.RUBRIC, "Scoreboard (headline)", "MCP server leaderboard",
               "Ordered by visibility tier (how much we could measure), then by composite score.", scoreboard.RULES_VERSION, headline=True),
    RubricInfo(review.RUBRIC, "Live review", "Live review",
               "Seed 001's six sections; only servers that completed a handshake and list a tool are ranked.", review.RULES_VERSION),
    RubricInfo(outside_in.RUBRIC, "Outside-in", "Outside-in",
               "Seed 003's score over 30 days of runs, ordered by Rank Score (thin evidence shrunk toward 50%).", outside_in.RULES_VERSION,
               extra_columns=(BoardColumn("extra.rank_score", "Rank score", "num"), BoardColumn("extra.status", "Status"),
                              BoardColumn("extra.runs", "Runs", "num"), BoardColumn("extra.p95_ms", "P95 ms", "num"),
                              BoardColumn("extra.spec_readiness", "Spec readiness"))),
    RubricInfo(remote.RUBRIC, "Remote endpoint", "Remote endpoint", "Seed 004's rubric for servers reached over HTTP.", remote.RULES_VERSION),
]


def infos() -> list[RubricInfo]:
    """What the build and the CLI are handed: the rubrics as the site shows them."""
    return list(RUBRIC_INFOS)
