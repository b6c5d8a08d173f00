"""Page contexts: pure functions from stored rows to what templates and JSON files show."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from pipeline import ENGINE_VERSION
from pipeline.models import ProbeResult, Server

VISIBILITY_ORDER = ["complete", "verified", "assessed", "limited", "unscored"]
VISIBILITY_ICONS = {"complete": "◉", "verified": "◎", "assessed": "◐", "limited": "◔", "unscored": "○"}


def safe_url(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else (javascript:, data:) stays text."""
    if not url or not isinstance(url, str):
        return None
    lowered = url.strip().lower()
    return url.strip() if lowered.startswith(("https://", "http://")) else None


def repository_url(server: Server) -> str | None:
    base = safe_url(server.repository)
    if base and server.subpath:
        return f"{base.rstrip('/')}/tree/HEAD/{server.subpath.strip('/')}"
    return base


def _score_age_days(scored_at: str | None, now: datetime) -> int | None:
    if not scored_at:
        return None
    return max(0, (now - datetime.fromisoformat(scored_at)).days)


def leaderboard_rows(servers: list[Server], scores: dict[str, dict[str, Any]], probes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per active server, ordered by visibility tier, then composite, then id.

    `probes` holds each server's latest probe summary (era, protocol_version, tool_count, outcome).
    """
    rows = []
    for server in servers:
        card = scores.get(server.id) or {}
        probe = probes.get(server.id)
        visibility = card.get("visibility") or "unscored"
        rows.append(
            {
                "id": server.id,
                "name": server.name,
                "description": server.description or "",
                "transport": server.transport,
                "composite": card.get("composite"),
                "grade": card.get("grade"),
                "visibility": visibility,
                "visibility_icon": VISIBILITY_ICONS[visibility],
                "dimension_indicator": card.get("dimension_indicator") or "0/0",
                "era": probe["era"] if probe else None,
                "protocol_version": probe["protocol_version"] if probe else None,
                "tool_count": probe["tool_count"] if probe else None,
                "probe_outcome": probe["outcome"] if probe else "not probed",
                "last_scored_at": card.get("scored_at"),
            }
        )
    rows.sort(key=lambda r: (VISIBILITY_ORDER.index(r["visibility"]), -(r["composite"] if r["composite"] is not None else -1), r["id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


RUBRIC_LABELS = {
    "scoreboard": "Scoreboard (headline)",
    "review": "Live review",
    "outside-in": "Outside-in",
    "remote": "Remote endpoint",
}


def rubric_section(rubric: str, card: dict[str, Any]) -> dict[str, Any]:
    """One rubric's card as the page shows it: score, dimensions with their rules, extras."""
    dimensions = json.loads(card["dimensions"])
    rules = json.loads(card["rules"])
    return {
        "rubric": rubric,
        "label": RUBRIC_LABELS.get(rubric, rubric),
        "composite": card["composite"],
        "grade": card["grade"],
        "visibility": card["visibility"],
        "dimension_indicator": card["dimension_indicator"],
        "rules_version": card["rules_version"],
        "extra": json.loads(card.get("extra") or "{}"),
        "dimensions": [{**d, "rules": [r for r in rules if r["dimension"] == d["name"]]} for d in dimensions],
    }


def server_page(
    server: Server,
    card: dict[str, Any] | None,
    probe: tuple[int, ProbeResult] | None,
    analysis: dict[str, Any] | None,
    history: list[dict[str, Any]],
    now: datetime,
    other_cards: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    dimensions = json.loads(card["dimensions"]) if card else []
    rules = json.loads(card["rules"]) if card else []
    by_dimension = {d["name"]: {**d, "rules": [r for r in rules if r["dimension"] == d["name"]]} for d in dimensions}
    gains = [
        {"dimension": r["dimension"], "rule": r["rule"], "advice": r["how_to_gain"], "points": round(r["max_points"] - r["points"], 1)}
        for r in rules
        if r.get("how_to_gain")
    ]
    gains.sort(key=lambda g: (-g["points"], g["rule"]))
    result = probe[1] if probe else None
    tools = []
    for tool in (result.tools or []) if result else []:
        annotations = tool.get("annotations") or {}
        tools.append(
            {
                "name": str(tool.get("name", "")),
                "title": tool.get("title") or annotations.get("title"),
                "description": str(tool.get("description") or ""),
                "params": len((tool.get("inputSchema") or {}).get("properties") or {}),
                "read_only": annotations.get("readOnlyHint"),
                "destructive": annotations.get("destructiveHint"),
                "output_schema": tool.get("outputSchema") is not None,
            }
        )
    scored_at = card["scored_at"] if card else None
    return {
        "server": {
            "id": server.id,
            "name": server.name,
            "description": server.description,
            "transport": server.transport,
            "repository": repository_url(server),
            "homepage": safe_url(server.homepage),
            "remote_url": server.remote_url,
            "package": f"{server.launch.registry}: {server.launch.package}" if server.launch else None,
            "sources": server.sources,
            "external_links": {k: v for k, v in server.external_links.items() if safe_url(v)},
            "first_seen_at": server.first_seen_at.isoformat(),
            "is_active": server.is_active,
        },
        "score": {
            "composite": card["composite"] if card else None,
            "grade": card["grade"] if card else None,
            "visibility": card["visibility"] if card else "unscored",
            "visibility_icon": VISIBILITY_ICONS[card["visibility"] if card else "unscored"],
            "dimension_indicator": card["dimension_indicator"] if card else "0/0",
            "rules_version": card["rules_version"] if card else None,
            "badges": json.loads(card["badges"]) if card else [],
            "flags": json.loads(card["flags"]) if card else [],
            "dimensions": list(by_dimension.values()),
            "how_to_gain": gains,
        },
        "probe": None
        if result is None
        else {
            "ref": f"probe_runs/{probe[0]}" if probe else None,
            "started_at": result.started_at.isoformat(),
            "outcome": result.outcome.value,
            "detail": result.detail,
            "transport": result.transport,
            "era": result.era,
            "protocol_version": result.protocol_version,
            "handshake": result.handshake,
            "connect_ms": round(result.connect_ms, 1) if result.connect_ms is not None else None,
            "ping_ms": round(result.ping_ms, 1) if result.ping_ms is not None else None,
            "server_info": result.server_info,
            "capabilities": sorted((result.capabilities or {}).keys()),
            "instructions": result.instructions,
            "package_version": result.package_version,
            "checks": [c.model_dump() for c in result.checks],
            "resources": len(result.resources or []),
            "prompts": len(result.prompts or []),
        },
        "tools": tools,
        "other_rubrics": [rubric_section(rubric, c) for rubric, c in sorted((other_cards or {}).items(), key=lambda kv: list(RUBRIC_LABELS).index(kv[0]) if kv[0] in RUBRIC_LABELS else 99)],
        "analysis": analysis,
        "history": history,
        "last_scored_at": scored_at,
        "score_age_days": _score_age_days(scored_at, now),
        "engine_version": ENGINE_VERSION,
    }


def score_changes(rows: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
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


BOARDS = {
    # rubric: (title, intro, extra columns shown as (label, key in card extra))
    "review": ("Live review", "Seed 001's six sections; only servers that completed a handshake and list a tool are ranked.", []),
    "outside-in": ("Outside-in", "Seed 003's score over 30 days of runs, ordered by Rank Score (thin evidence shrunk toward 50%).",
                   [("Rank", "rank_score"), ("Status", "status"), ("Runs", "runs"), ("P95 ms", "p95_ms"), ("Spec readiness", "spec_readiness")]),
    "remote": ("Remote endpoint", "Seed 004's rubric for servers reached over HTTP.", []),
}


def board_rows(rubric: str, servers: list[Server], cards: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One rubric's leaderboard: ranked rows first (by rank score for outside-in, else composite), then the rest."""
    rows = []
    for server in servers:
        card = cards.get(server.id)
        if card is None:
            continue
        extra = json.loads(card.get("extra") or "{}")
        rows.append({"id": server.id, "name": server.name, "composite": card["composite"], "grade": card["grade"],
                     "visibility": card["visibility"], "dimension_indicator": card["dimension_indicator"], "extra": extra})
    def order(row: dict[str, Any]) -> tuple:
        value = row["extra"].get("rank_score") if rubric == "outside-in" else row["composite"]
        return (value is None, -(value or 0), row["id"])
    rows.sort(key=order)
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank if (row["extra"].get("rank_score") if rubric == "outside-in" else row["composite"]) is not None else None
    return rows


GENERATED_MARKER = re.compile(r"^<!-- /?generated:[\w-]+ -->\n", re.M)


def methodology_html(markdown_text: str) -> str:
    """The methodology document as HTML: raw HTML in the Markdown is shown as text, never rendered."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    return renderer.render(GENERATED_MARKER.sub("", markdown_text))
