"""Every rubric the scoreboard publishes, in the order the site shows them: the one list that feeds
scoring, the methodology tables, the CLI and (as RubricInfo) the site. A new rubric is a module
defining its Rubric value, plus one line here."""

from __future__ import annotations

from dataclasses import replace

from pipeline.models import RubricInfo
from pipeline.score.engine import Rubric
from pipeline.score.outside_in import OUTSIDE_IN
from pipeline.score.remote import REMOTE
from pipeline.score.review import REVIEW
from pipeline.score.scoreboard import SCOREBOARD

RUBRICS: list[Rubric] = [
    SCOREBOARD,
    REVIEW,
    OUTSIDE_IN,
    REMOTE,
]


def rubrics() -> list[Rubric]:
    return list(RUBRICS)


def names() -> list[str]:
    return [r.name for r in RUBRICS]


def get(name: str) -> Rubric:
    return next(r for r in RUBRICS if r.name == name)


def infos() -> list[RubricInfo]:
    """What the build and the CLI are handed: the rubrics as the site shows them."""
    return [replace(r.info, graded=bool(r.grades)) for r in RUBRICS]
