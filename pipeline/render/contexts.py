"""Page contexts: pure functions from stored rows to what templates and JSON files show."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pydantic_core import from_json  # several times faster than json.loads on 25,000 cards

from pipeline import ENGINE_VERSION
from pipeline.models import Judgement, ProbeResult, RubricInfo, Server
from pipeline.render.badges import embed_snippets
from pipeline.render.evidence import protocol, reliability, schema_drift, tool_rows
from pipeline.render.pages import Dimension, HeadlineScore, ProbeSeen, RubricSection, ServerFacts, ServerPage


@dataclass
class Observed:
    """Stored evidence a server page shows beyond its score cards and latest probe."""

    judgements: list[Judgement] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)  # tool-surface changes, newest first (db.page_evidence)
    daily: list[dict[str, Any]] = field(default_factory=list)  # fast-probe rollups, 30 days (db.page_evidence)
    last_day: list[dict[str, Any]] = field(default_factory=list)  # raw fast probes of the last 24 hours
    records: list[dict[str, Any]] = field(default_factory=list)  # per source: first seen, last changed, versions (db.page_evidence)

VISIBILITY_ORDER = ["complete", "verified", "assessed", "limited", "unscored"]
VISIBILITY_ICONS = {"complete": "◉", "verified": "◎", "assessed": "◐", "limited": "◔", "unscored": "○"}


def safe_url(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else (javascript:, data:) stays text."""
    if not url or not isinstance(url, str):
        return None
    lowered = url.strip().lower()
    return url.strip() if lowered.startswith(("https://", "http://")) else None


# Source figures shown as "popularity", in this order, with their labels (metrics keys from discovery).
POPULARITY = {
    "github_stars": "GitHub stars", "docker_pulls": "Docker Hub pulls", "npm_weekly_downloads": "npm downloads last week",
    "pypi_weekly_downloads": "PyPI downloads last week", "smithery_uses": "Smithery uses", "pulsemcp_visitors_week": "PulseMCP visitors last week",
    "package_downloads": "package downloads (PulseMCP)", "bestof_projectrank": "best-of project rank", "contributors": "contributors",
}
FIELD_LABELS = {
    "name": "Name", "description": "Description", "repository": "Repository", "subpath": "Folder in the repository", "homepage": "Website",
    "registry_name": "Registry name", "remotes": "Remote endpoints", "remote_url": "Endpoint probed", "transport": "Transport",
    "packages": "Packages", "env_vars": "Environment variables", "launch": "How it is started", "repo_key": "Repository identity",
}


def popularity(metrics: dict[str, float]) -> list[dict[str, Any]]:
    return [{"label": label, "key": key, "value": metrics[key]} for key, label in POPULARITY.items() if key in metrics]


def provenance_rows(provenance: dict[str, str]) -> list[dict[str, str]]:
    """Which source each shown field came from (seed 000: source priority), in a stable order."""
    return [{"field": FIELD_LABELS[f], "source": provenance[f]} for f in FIELD_LABELS if f in provenance]


def observed_listings(observed: Observed, sources: list[str]) -> list[dict[str, Any]]:
    """The sources listing the server now, with when each first listed it and last changed its record."""
    by_source = {r["source"]: r for r in observed.records}
    return [{"source": s, **{k: by_source[s][k] for k in ("first_seen", "last_changed", "versions")}} if s in by_source
            else {"source": s, "first_seen": None, "last_changed": None, "versions": 0} for s in sources]


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
        flags = from_json(card.get("flags") or "[]")
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
                "probe_outcome": probe["outcome"] if probe else "not probed",
                "flags": [{"label": f["label"], "severity": f["severity"]} for f in flags],
                "last_scored_at": card.get("scored_at"),
            }
        )
    rows.sort(key=lambda r: (VISIBILITY_ORDER.index(r["visibility"]), -(r["composite"] if r["composite"] is not None else -1), r["id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def _with_rules(dimensions: list[dict[str, Any]], rules: list[dict[str, Any]]) -> list[Dimension]:
    """Each dimension with the rules that scored it, in the card's order."""
    return [{**d, "rules": [r for r in rules if r["dimension"] == d["name"]]} for d in dimensions]  # type: ignore[typeddict-item]


def rubric_section(rubric: RubricInfo, card: dict[str, Any]) -> RubricSection:
    """One rubric's card as the page shows it: score, dimensions with their rules, extras."""
    return RubricSection.model_construct(
        rubric=rubric.name, label=rubric.label, composite=card["composite"], grade=card["grade"], visibility=card["visibility"],
        dimension_indicator=card["dimension_indicator"], rules_version=card["rules_version"], extra=from_json(card.get("extra") or "{}"),
        dimensions=_with_rules(from_json(card["dimensions"]), from_json(card["rules"])),
    )


def _server_facts(server: Server, observed: Observed) -> ServerFacts:
    return ServerFacts.model_construct(
        id=server.id, name=server.name, description=server.description, transport=server.transport, repository=repository_url(server),
        homepage=safe_url(server.homepage), remote_url=server.remote_url,
        package=f"{server.launch.registry}: {server.launch.package}" if server.launch else None, sources=server.sources,
        external_links={k: v for k, v in server.external_links.items() if safe_url(v)}, verified_publisher=server.verified_publisher,
        registry_name=server.registry_name,
        packages=[f"{p.registry}: {p.identifier}" + (f" {p.version}" if p.version else "") for p in server.packages],
        remotes=[{"transport": r.transport, "url": r.url, "auth_headers": r.auth_headers} for r in server.remotes],
        popularity=popularity(server.metrics), source_categories=server.source_categories, provenance=provenance_rows(server.provenance),
        listings=observed_listings(observed, server.sources), first_seen_at=server.first_seen_at.isoformat(), is_active=server.is_active,
    )


def _headline_score(card: dict[str, Any] | None, rules: list[dict[str, Any]]) -> HeadlineScore:
    gains = [
        {"dimension": r["dimension"], "rule": r["rule"], "advice": r["how_to_gain"], "points": round(r["max_points"] - r["points"], 1)}
        for r in rules
        if r.get("how_to_gain")
    ]
    gains.sort(key=lambda g: (-g["points"], g["rule"]))
    visibility = card["visibility"] if card else "unscored"
    return HeadlineScore.model_construct(
        composite=card["composite"] if card else None, grade=card["grade"] if card else None, visibility=visibility,
        visibility_icon=VISIBILITY_ICONS[visibility], dimension_indicator=card["dimension_indicator"] if card else "0/0",
        rules_version=card["rules_version"] if card else None, badges=from_json(card["badges"]) if card else [],
        flags=from_json(card["flags"]) if card else [], dimensions=_with_rules(from_json(card["dimensions"]), rules) if card else [],
        how_to_gain=gains,
    )


def _probe_seen(probe: tuple[int, ProbeResult]) -> ProbeSeen:
    ref, result = probe
    return ProbeSeen.model_construct(
        ref=f"probe_runs/{ref}", started_at=result.started_at.isoformat(), outcome=result.outcome.value, detail=result.detail,
        transport=result.transport, era=result.era, protocol_version=result.protocol_version, handshake=result.handshake,
        connect_ms=round(result.connect_ms, 1) if result.connect_ms is not None else None,
        ping_ms=round(result.ping_ms, 1) if result.ping_ms is not None else None, server_info=result.server_info,
        capabilities=sorted((result.capabilities or {}).keys()), instructions=result.instructions, package_version=result.package_version,
        checks=[c.model_dump() for c in result.checks], resources=len(result.resources or []), prompts=len(result.prompts or []),
    )


def server_page(
    server: Server,
    card: dict[str, Any] | None,
    probe: tuple[int, ProbeResult] | None,
    analysis: dict[str, Any] | None,
    history: list[dict[str, Any]],
    now: datetime,
    *,
    rubrics: Sequence[RubricInfo],
    other_cards: dict[str, dict[str, Any]],
    observed: Observed,
    site_url: str,
    rows_url: str,
) -> ServerPage:
    """A server page: its headline card (`card`), the other rubrics' cards in the rubrics' order, and what was observed."""
    rules = from_json(card["rules"]) if card else []
    result = probe[1] if probe else None
    sections = [rubric_section(rubric, other_cards[rubric.name]) for rubric in rubrics if rubric.name in other_cards]
    extras = {section.rubric: section.extra for section in sections}
    review_extra, outside_extra = extras.get("review", {}), extras.get("outside-in", {})
    tools = tool_rows(result.tools if result else None, review_extra.get("tool_docs") or {}, observed.judgements)
    scored_at = card["scored_at"] if card else None
    return ServerPage.model_construct(
        server=_server_facts(server, observed),
        score=_headline_score(card, rules),
        probe=_probe_seen(probe) if probe else None,
        tools=tools,
        schema_drift=schema_drift(analysis, result.tools if result else None, observed.changes),
        protocol=protocol(result, outside_extra),
        # A local server runs only while we probe it: its "uptime" would describe our own process (methodology item 7).
        reliability=None if server.is_local else reliability(observed.daily, observed.last_day, now.astimezone(timezone.utc).date()),
        other_rubrics=sections,
        analysis=analysis,
        history=history,
        # A chart only when the score moved: a flat line says no more than the sentence shown instead.
        trend_chart=len({row["composite"] for row in history}) > 1,
        last_scored_at=scored_at,
        score_age_days=_score_age_days(scored_at, now),
        engine_version=ENGINE_VERSION,
        embed=embed_snippets(site_url, server.id),
        datasette={"server": f"{rows_url}/servers/{server.id}", "probes": f"{rows_url}/probe_runs?server_id={server.id}",
                   "scores": f"{rows_url}/scores?server_id={server.id}"},
    )


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


def _column(key: str, label: str, kind: str = "text") -> dict[str, str]:
    return {"key": key, "label": label, "kind": kind}


# Columns are shared by the pre-rendered pages and site/static/board.js, so both draw the same table.
HEADLINE_COLUMNS = [
    _column("rank", "#", "num"), _column("name", "Server", "server"), _column("composite", "Score", "score"),
    _column("grade", "Grade", "grade"), _column("visibility", "Visibility", "visibility"), _column("category", "Category"),
    _column("transport", "Transport"), _column("era", "Era"), _column("tool_count", "Tools", "num"), _column("probe_outcome", "Probe"),
]
_RUBRIC_COLUMNS = [_column("rank", "#", "num"), _column("name", "Server", "server"), _column("composite", "Score", "score"),
                   _column("grade", "Grade", "grade"), _column("visibility", "Coverage")]



def rubric_columns(rubric: RubricInfo) -> list[dict[str, str]]:
    """A rubric board's columns: rank, name, score, grade and coverage, then the rubric's own."""
    return _RUBRIC_COLUMNS + [_column(c.key, c.label, c.kind) for c in rubric.extra_columns]


PAGE_SIZE = 100
FILTERS = [("category", "Category"), ("platform", "Platform"), ("transport", "Transport"), ("grade", "Grade"), ("era", "Protocol era"),
           ("flag", "Flags")]


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


def board_pages(prefix: str, rows: list[dict[str, Any]], size: int = PAGE_SIZE) -> list[dict[str, Any]]:
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


def categories(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Categories present on the board, largest first, with the path of their own pre-rendered board."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["category"]] = counts.get(row["category"], 0) + 1
    return [{"name": name, "count": n, "slug": slug(name)} for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def board_rows(rubric: str, servers: list[Server], cards: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One rubric's leaderboard: ranked rows first (by rank score for outside-in, else composite), then the rest."""
    rows = []
    for server in servers:
        card = cards.get(server.id)
        if card is None:
            continue
        # Per-tool and per-change detail stays on the server page; boards carry scalar figures only.
        extra = {k: v for k, v in from_json(card.get("extra") or "{}").items() if not isinstance(v, (dict, list))}
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
