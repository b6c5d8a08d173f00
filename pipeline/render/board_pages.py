"""Typed contexts of board pages, and the public board and change files (api/servers.json, api/<rubric>.json, api/changes.json).

Board rows are TypedDicts: plain dicts at run time (a board of 25,000 rows is built, fingerprinted and paged
as dicts), typed for the published JSON Schemas.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from pipeline.render.values import Context, Day, Grade, Number, Score, Transport, Visibility

# ---------------------------------------------------------------- leaderboards


class FlagLabel(TypedDict):
    label: str
    severity: Literal["critical", "warning", "info"]


class LeaderboardRow(TypedDict):
    """A row of the headline board: its pages, api/servers.json and downloads/leaderboard.csv."""

    id: str
    name: str
    description: str
    category: Annotated[str, Field(description="its category on the leaderboard")]
    platforms: list[str]
    transport: Transport
    composite: Score
    grade: Grade
    visibility: Visibility
    visibility_icon: str
    dimension_indicator: Annotated[str, Field(pattern=r"^[0-9]+/[0-9]+$")]
    era: Literal["modern", "legacy"] | None
    protocol_version: str | None
    tool_count: Annotated[int, Field(ge=0)] | None
    probe_outcome: str
    flags: list[FlagLabel]
    last_scored_at: str | None
    listing_only: Annotated[bool, Field(description="a listing names it but no repository, package or remote endpoint: nothing measured, "
                                                    "so no card and no rank")]
    sources: Annotated[list[str], Field(description="the sources listing it")]
    rank: Annotated[int, Field(ge=1)] | None


class BoardRow(TypedDict):
    """A row of another rubric's board (api/<rubric>.json); unranked rows have rank null."""

    id: str
    name: str
    composite: Score
    grade: str | None
    visibility: str
    dimension_indicator: str
    extra: dict[str, Any]
    rank: Annotated[int, Field(ge=1)] | None


class ServersFile(Context):
    model_config = ConfigDict(title="MCP Scoreboard leaderboard (api/servers.json)")

    engine_version: str
    servers: list[LeaderboardRow]


class BoardFile(Context):
    model_config = ConfigDict(title="MCP Scoreboard leaderboard of one rubric (api/<rubric>.json)")

    engine_version: str
    rubric: str
    servers: list[BoardRow]


class Change(TypedDict):
    id: str
    name: str
    day: Day
    previous_day: Day
    previous: Number | None
    composite: Number | None
    grade: str | None
    delta: Number | None


class ChangesFile(Context):
    model_config = ConfigDict(title="MCP Scoreboard recent score changes (api/changes.json)")

    engine_version: str
    rubric: str
    since: Day
    changes: list[Change]


class Column(TypedDict):
    key: str
    label: str
    kind: str


class Category(TypedDict):
    name: str
    count: int
    slug: str


class Board(TypedDict):
    """What every page of one board shares: which rubric, its title, columns and category links (a dict: its key order,
    which differs between the headline and the rubric boards, is part of each page's fingerprint)."""

    board: str
    title: str
    intro: str
    columns: list[Column]
    categories: list[Category]
    category: str | None
    tiers: bool
    filters: list[tuple[str, str]]
    legend: list[tuple[str, str]]  # what the words in its cells mean (term, meaning), said once under the table
    listing_only: int  # listing-only servers this board leaves out (its category's, on a category board), shown as a count and a link
    engine_version: str


class TierGroup(TypedDict):
    tier: str | None
    icon: str
    rows: list[dict[str, Any]]


class PageLink(TypedDict):
    number: int
    href: str
    current: bool


class BoardPage(TypedDict):
    """One pre-rendered page of a board: its rows grouped by tier, and the pager."""

    path: str
    root: str
    number: int
    count: int
    groups: list[TierGroup]
    links: list[PageLink]
    first: int
    last: int
    total: int
    previous: str | None
    next: str | None
