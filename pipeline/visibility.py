"""Seed 000's visibility tiers, shared by the score stage (which assigns them) and the judge stage (which spends judge
calls only on servers at Assessed visibility or above)."""

from __future__ import annotations

HEADLINE_RUBRIC = "scoreboard"  # the rubric whose card carries a server's visibility
JUDGED = frozenset(("complete", "verified", "assessed"))  # seed 000: interpretability "for servers with at least Assessed visibility"


def at_least_assessed(visibility: str | None) -> bool:
    return visibility in JUDGED
