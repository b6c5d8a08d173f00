"""Plan: from the loaded summaries to every board, every public file and what each server page depends on. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from pipeline import ENGINE_VERSION
from pipeline.eras import ERA_COLUMN
from pipeline.models import RubricInfo
from pipeline.render.board_pages import Board, BoardFile, Change, ChangesFile, LeaderboardRow, ServersFile
from pipeline.render.boards import (
    FILTERS,
    HEADLINE_COLUMNS,
    LISTED_BOARD,
    LISTED_COLUMNS,
    LISTED_FILTERS,
    LISTED_INTRO,
    UNGRADED_FILTERS,
    board_rows,
    categories,
    leaderboard_rows,
    rubric_columns,
    score_changes,
)
from pipeline.render.load import SiteInputs


@dataclass(frozen=True)
class BoardJob:
    """A board to pre-render: its pages' path prefix, its rows and what its pages share."""

    prefix: str
    rows: list[dict[str, Any]]
    context: Board


@dataclass(frozen=True)
class SitePlan:
    rows: list[LeaderboardRow]  # the headline board
    boards: list[BoardJob]
    files: dict[str, BaseModel]  # the public board and change files, by path
    changes: list[Change]


def _score_age(card: dict | None, now: datetime) -> int | None:
    if not card or not card.get("scored_at"):
        return None
    return (now - datetime.fromisoformat(card["scored_at"])).days


def plan_site(site: SiteInputs, rubrics: Sequence[RubricInfo], now: datetime) -> SitePlan:
    headline = next(r for r in rubrics if r.headline)
    others = [r for r in rubrics if not r.headline]
    rows = leaderboard_rows(site.servers, site.scores[headline.name], site.probes)
    boards, rubric_rows = _boards(site, headline, others, rows)
    names = {s.id: s.name for s in site.servers}
    changes = score_changes(site.changes, names)
    files: dict[str, BaseModel] = {"api/servers.json": ServersFile.model_construct(engine_version=ENGINE_VERSION, servers=rows)}
    for rubric, board in rubric_rows.items():
        files[f"api/{rubric}.json"] = BoardFile.model_construct(engine_version=ENGINE_VERSION, rubric=rubric, servers=board)
    files["api/changes.json"] = ChangesFile.model_construct(engine_version=ENGINE_VERSION, rubric=headline.name, since=site.changes_since,
                                                            changes=changes)
    return SitePlan(rows=rows, boards=boards, files=files, changes=changes)


def page_inputs(site: SiteInputs, rubrics: Sequence[RubricInfo], now: datetime) -> Iterator[tuple[str, list[Any]]]:
    """Per server, what its page shows (summaries and stamps of it), for its fingerprint: made one at a time, never all held."""
    headline = next(r for r in rubrics if r.headline)
    ordered = [headline, *(r for r in rubrics if not r.headline)]
    for server in site.servers:
        cards = {r.name: site.scores[r.name].get(server.id) for r in ordered}
        probe = site.probes.get(server.id)
        yield server.id, [server.model_dump_json(), {r: (c or {}).get("scored_at") for r, c in cards.items()}, probe["id"] if probe else None,
                          site.analyses.get(server.id), site.stamps.get(server.id), _score_age(cards[headline.name], now)]


def _boards(site: SiteInputs, headline: RubricInfo, others: list[RubricInfo], rows: list[LeaderboardRow]) -> tuple[list[BoardJob], dict]:
    """Every board to pre-render (headline, one per category, the listing-only servers', one per other rubric), and each other
    rubric's rows for its JSON."""
    base = {"engine_version": ENGINE_VERSION}
    # Listing-only servers (deviation 80) are left off the ranked boards, which say how many and link to their own board.
    measured = [r for r in rows if not r["listing_only"]]
    listed = [r for r in rows if r["listing_only"]]
    listed_in: dict[str, int] = {}
    for row in listed:
        listed_in[row["category"]] = listed_in.get(row["category"], 0) + 1
    present = categories(measured)
    common = {"board": headline.name, "intro": headline.intro, "columns": HEADLINE_COLUMNS, "categories": present, "tiers": True,
              "filters": FILTERS, "legend": [ERA_COLUMN], **base}
    jobs = [BoardJob("", measured, {**common, "title": headline.title, "category": None, "listing_only": len(listed)})]  # type: ignore[typeddict-item]
    for found in present:
        jobs.append(BoardJob(f"category/{found['slug']}/", [r for r in measured if r["category"] == found["name"]],
                             {**common, "title": f"{found['name']} servers", "category": found["name"],
                              "listing_only": listed_in.get(found["name"], 0)}))  # type: ignore[typeddict-item]
    jobs.append(BoardJob(f"{LISTED_BOARD}/", listed, {"board": LISTED_BOARD, "title": "Listed only: nothing measured", "intro": LISTED_INTRO,
                                                      "columns": LISTED_COLUMNS, "categories": [], "category": None, "tiers": False,
                                                      "filters": LISTED_FILTERS, "legend": [], "listing_only": 0, **base}))  # type: ignore[typeddict-item]
    by_id = {row["id"]: row for row in rows}
    rubric_rows = {}
    for rubric in others:
        rubric_rows[rubric.name] = board_rows(rubric.rank_by, site.servers, site.scores[rubric.name])
        shown = [{**by_id[row["id"]], **row} for row in rubric_rows[rubric.name]]  # description and filter fields come from the index
        jobs.append(BoardJob(f"{rubric.name}/", shown, {"board": rubric.name, "title": rubric.title, "intro": rubric.intro,
                                                         "columns": rubric_columns(rubric), "categories": [], "category": None,
                                                         "tiers": False, "filters": FILTERS if rubric.graded else UNGRADED_FILTERS,
                                                         "legend": list(rubric.legend), "listing_only": 0,
                                                         **base}))  # type: ignore[typeddict-item]
    return jobs, rubric_rows
