"""Leaderboards: the headline board's rows, each other rubric's, their pre-rendered pages and columns. Pure functions of stored rows."""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import from_json  # several times faster than json.loads on 25,000 cards

from pipeline.listing_only import listing_only
from pipeline.models import RubricInfo, Server
from pipeline.render.board_pages import BoardPage, BoardRow, Category, Change, Column, LeaderboardRow
from pipeline.render.values import VISIBILITY_ICONS, VISIBILITY_ORDER


def leaderboard_rows(servers: list[Server], scores: dict[str, dict[str, Any]], probes: dict[str, dict[str, Any]]) -> list[LeaderboardRow]:
    """One row per active server, ordered by visibility tier, then composite, then id; listing-only servers (deviation 80)
    last and unranked: nothing of theirs was measured, so they have no place in a ranking.

    `probes` holds each server's latest probe summary (era, protocol_version, tool_count, outcome). The probe column says
    "unreachable from here (1 attempt)" where the card says the failures to reach the server do not stand yet.
    """
    rows = []
    for server in servers:
        listed = listing_only(server)
        card = {} if listed else scores.get(server.id) or {}
        probe = probes.get(server.id)
        visibility = card.get("visibility") or "unscored"
        flags = from_json(card.get("flags") or "[]")
        reach = from_json(card.get("extra") or "{}").get("reach")
        rows.append(
            {
                "id": server.id,
                "name": server.name,
                "description": server.description or "",
                "category": server.category,
                "platforms": server.platforms,
                "transport": server.transport,
                "composite": card.get("composite"),
                "grade": card.get("grade"),
                "visibility": visibility,
                "visibility_icon": VISIBILITY_ICONS[visibility],
                "dimension_indicator": card.get("dimension_indicator") or "0/0",
                "era": probe["era"] if probe else None,
                "protocol_version": probe["protocol_version"] if probe else None,
                "tool_count": probe["tool_count"] if probe else None,
                "probe_outcome": reach or (probe["outcome"] if probe else "not probed"),
                "flags": [{"label": f["label"], "severity": f["severity"]} for f in flags],
                "last_scored_at": card.get("scored_at"),
                "listing_only": listed,
                "sources": server.sources,
            }
        )
    rows.sort(key=lambda r: (r["listing_only"], VISIBILITY_ORDER.index(r["visibility"]), -(r["composite"] if r["composite"] is not None else -1),
                             r["id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = None if row["listing_only"] else rank
    return rows


def score_changes(rows: list[dict[str, Any]], names: dict[str, str]) -> list[Change]:
    """Recent day-to-day score changes, as the changes API and the Atom feed show them."""
    changes = []
    for row in rows:
        old, new = row["previous"], row["composite"]
        changes.append(
            {
                "id": row["server_id"],
                "name": names.get(row["server_id"], row["server_id"]),
                "day": row["day"],
                "previous_day": row["previous_day"],
                "previous": old,
                "composite": new,
                "grade": row["grade"],
                "delta": round(new - old, 1) if old is not None and new is not None else None,
            }
        )
    return changes


def _column(key: str, label: str, kind: str = "text") -> Column:
    return {"key": key, "label": label, "kind": kind}


# Columns are shared by the pre-rendered pages and site/static/board.js, so both draw the same table.
HEADLINE_COLUMNS = [
    _column("rank", "#", "num"), _column("name", "Server", "server"), _column("composite", "Score", "score"),
    _column("grade", "Grade", "grade"), _column("visibility", "Visibility", "visibility"), _column("category", "Category"),
    _column("transport", "Transport"), _column("era", "Era"), _column("tool_count", "Tools", "num"), _column("probe_outcome", "Probe"),
]
LISTED_BOARD = "listed"  # the board of listing-only servers, at listed/
LISTED_INTRO = ("Servers a listing names without a source repository, a published package or a remote endpoint: there is nothing to "
                "analyse, start or probe, so they have no score, no grade and no rank. Each page says what the listings say. "
                "Left off the leaderboard and its categories.")
# The listed-only board: what the listings say, nothing measured (no score, grade or probe column).
LISTED_COLUMNS = [_column("name", "Server", "server"), _column("category", "Category"), _column("sources", "Listed by", "list")]
_RUBRIC_COLUMNS = [_column("rank", "#", "num"), _column("name", "Server", "server"), _column("composite", "Score", "score"),
                   _column("grade", "Grade", "grade"), _column("visibility", "Coverage")]



def rubric_columns(rubric: RubricInfo) -> list[Column]:
    """A rubric board's columns: rank, name, score, grade and coverage, then the rubric's own. A rubric without letter grades
    shows how many of its dimensions were measured where the grade would be: a column of empty grades says nothing."""
    own = [_column(c.key, c.label, c.kind) for c in rubric.extra_columns]
    if not rubric.graded:
        return [_column("dimension_indicator", "Measured") if c["kind"] == "grade" else c for c in _RUBRIC_COLUMNS] + own
    return _RUBRIC_COLUMNS + own


PAGE_SIZE = 100
FILTERS = [("category", "Category"), ("platform", "Platform"), ("transport", "Transport"), ("grade", "Grade"), ("era", "Protocol era"),
           ("flag", "Flags")]
LISTED_FILTERS = [("category", "Category"), ("platform", "Platform"), ("source", "Listed by")]
UNGRADED_FILTERS = [f for f in FILTERS if f[0] != "grade"]  # a rubric without letter grades: no grade to filter by


def cell(row: dict[str, Any], key: str) -> Any:
    """A column's value in a row; dotted keys reach into nested objects (extra.rank_score)."""
    value: Any = row
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "other"


def page_path(prefix: str, number: int) -> str:
    return f"{prefix}index.html" if number == 1 else f"{prefix}page/{number}/index.html"


def board_pages(prefix: str, rows: list[dict[str, Any]], size: int = PAGE_SIZE) -> list[BoardPage]:
    """Split a board into pre-rendered pages: each with its path, link root, rows, tier groups and pager."""
    count = max(1, -(-len(rows) // size))
    pages = []
    for number in range(1, count + 1):
        path = page_path(prefix, number)
        root = "../" * path.count("/")
        chunk = rows[(number - 1) * size : number * size]
        groups: list[dict[str, Any]] = []
        for row in chunk:
            if not groups or groups[-1]["tier"] != row.get("visibility"):
                groups.append({"tier": row.get("visibility"), "icon": VISIBILITY_ICONS.get(row.get("visibility") or "", ""), "rows": []})
            groups[-1]["rows"].append(row)
        shown = sorted({1, count, *range(max(1, number - 2), min(count, number + 2) + 1)})
        links = [{"number": n, "href": root + page_path(prefix, n), "current": n == number} for n in shown]
        pages.append({
            "path": path, "root": root, "number": number, "count": count, "groups": groups, "links": links,
            "first": (number - 1) * size + 1 if chunk else 0, "last": (number - 1) * size + len(chunk), "total": len(rows),
            "previous": root + page_path(prefix, number - 1) if number > 1 else None,
            "next": root + page_path(prefix, number + 1) if number < count else None,
        })
    return pages


def categories(rows: list[LeaderboardRow]) -> list[Category]:
    """Categories present on the board, largest first, with the path of their own pre-rendered board."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["category"]] = counts.get(row["category"], 0) + 1
    return [{"name": name, "count": n, "slug": slug(name)} for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def board_rows(rank_by: str | None, servers: list[Server], cards: dict[str, dict[str, Any]]) -> list[BoardRow]:
    """One rubric's leaderboard: ranked rows first (by the extra figure `rank_by` where the rubric names one, else the
    composite), then the rest."""
    rows = []
    for server in servers:
        card = cards.get(server.id)
        if card is None:
            continue
        # Per-tool and per-change detail stays on the server page; boards carry scalar figures only.
        extra = {k: v for k, v in from_json(card.get("extra") or "{}").items() if not isinstance(v, (dict, list))}
        rows.append({"id": server.id, "name": server.name, "composite": card["composite"], "grade": card["grade"],
                     "visibility": card["visibility"], "dimension_indicator": card["dimension_indicator"], "extra": extra})
    def ranked_by(row: dict[str, Any]) -> Any:
        return row["extra"].get(rank_by) if rank_by else row["composite"]

    rows.sort(key=lambda row: (ranked_by(row) is None, -(ranked_by(row) or 0), row["id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank if ranked_by(row) is not None else None
    return rows
