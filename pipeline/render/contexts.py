"""A server page's context, and the methodology page: pure functions of stored rows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pydantic_core import from_json  # several times faster than json.loads on 25,000 cards

from pipeline import ENGINE_VERSION
from pipeline.listing_only import NOT_MEASURED, listing_only
from pipeline.models import Judgement, ModelTransition, ProbeResult, RubricInfo, Server, cap_advice
from pipeline.outcomes import sandbox_caused
from pipeline.render.badges import embed_snippets
from pipeline.render.evidence import eras_explained, protocol, reliability, schema_drift, tool_rows
from pipeline.render.pages import Dimension, HeadlineScore, ProbeSeen, RubricSection, ServerFacts, ServerPage
from pipeline.render.source import source_seen
from pipeline.render.values import VISIBILITY_ICONS


@dataclass
class Observed:
    """Stored evidence a server page shows beyond its score cards and latest probe."""

    judgements: list[Judgement] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)  # tool-surface changes, newest first (db.page_evidence)
    daily: list[dict[str, Any]] = field(default_factory=list)  # fast-probe rollups, 30 days (db.page_evidence)
    last_day: list[dict[str, Any]] = field(default_factory=list)  # raw fast probes of the last 24 hours
    records: list[dict[str, Any]] = field(default_factory=list)  # per source: first seen, last changed, versions (db.page_evidence)

def safe_url(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else (javascript:, data:) stays text."""
    if not url or not isinstance(url, str):
        return None
    lowered = url.strip().lower()
    return url.strip() if lowered.startswith(("https://", "http://")) else None


# Source figures shown as "popularity", in this order, with their labels (metrics keys from discovery).
LOG_TAIL = 1500  # characters of a failed sandbox start's log shown on its page
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


def _without_nulls(value: Any) -> Any:
    """A stored document without its null fields, as a server's JSON leaves every null out (deviation 106)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _score_age_days(scored_at: str | None, now: datetime) -> int | None:
    if not scored_at:
        return None
    return max(0, (now - datetime.fromisoformat(scored_at)).days)


def _with_rules(dimensions: list[dict[str, Any]], rules: list[dict[str, Any]]) -> list[Dimension]:
    """Each dimension with the rules that scored it, in the card's order; a rule under its dimension does not name it again
    (no field twice in a page's JSON: deviation 105)."""
    by_dimension: dict[str, list[dict[str, Any]]] = {d["name"]: [] for d in dimensions}
    for rule in rules:
        by_dimension.setdefault(rule["dimension"], []).append(
            {"rule": rule["rule"], "points": rule["points"], "max_points": rule["max_points"], "measured": rule["measured"],
             "reason": rule["reason"], "how_to_gain": rule["how_to_gain"], "evidence": rule["evidence"]})
    return [{**d, "rules": by_dimension[d["name"]]} for d in dimensions]  # type: ignore[typeddict-item]


def explained(legend: Sequence[tuple[str, str]], extra: dict[str, Any]) -> str | None:
    """A card's status in plain words from its rubric's legend ("legacy only, modern fails: ..."), else its verdict's
    ("Down: ..."); a status carrying its own count ("unreachable from here (2 attempts)") is found by how it begins."""
    for value in (extra.get("status"), extra.get("verdict")):
        if isinstance(value, str):
            for term, meaning in legend:
                if value.startswith(term):
                    return f"{value}: {meaning}."
    return None


def rubric_section(rubric: RubricInfo, card: dict[str, Any]) -> RubricSection:
    """One rubric's card as the page shows it: score, dimensions with their rules, extras, and what its status means."""
    extra = from_json(card.get("extra") or "{}")
    return RubricSection.model_construct(
        rubric=rubric.name, label=rubric.label, composite=card["composite"], grade=card["grade"], visibility=card["visibility"],
        dimension_indicator=card["dimension_indicator"], rules_version=card["rules_version"], extra=extra,
        dimensions=_with_rules(from_json(card["dimensions"]), from_json(card["rules"])), explained=explained(rubric.legend, extra),
    )


def _server_facts(server: Server, observed: Observed) -> ServerFacts:
    return ServerFacts.model_construct(
        id=server.id, name=server.name, description=server.description, category=server.category, platforms=server.platforms,
        transport=server.transport, repository=repository_url(server),
        homepage=safe_url(server.homepage), remote_url=server.remote_url,
        package=f"{server.launch.registry}: {server.launch.package}" if server.launch else None, sources=server.sources,
        external_links={k: v for k, v in server.external_links.items() if safe_url(v)}, verified_publisher=server.verified_publisher,
        registry_name=server.registry_name,
        packages=[f"{p.registry}: {p.identifier}" + (f" {p.version}" if p.version else "") for p in server.packages],
        remotes=[{"transport": r.transport, "url": r.url, "auth_headers": r.auth_headers} for r in server.remotes],
        env_vars=[{"name": v.name, "secret": v.secret, "required": v.required} for v in server.env_vars],
        popularity=popularity(server.metrics), source_categories=server.source_categories, provenance=provenance_rows(server.provenance),
        listings=observed_listings(observed, server.sources), first_seen_at=server.first_seen_at.isoformat(), is_active=server.is_active,
        listing_only=listing_only(server),
    )


def _headline_score(card: dict[str, Any] | None, rules: list[dict[str, Any]]) -> HeadlineScore:
    gains = [
        {"dimension": r["dimension"], "rule": r["rule"], "advice": r["how_to_gain"], "points": round(r["max_points"] - r["points"], 1)}
        for r in rules
        if r.get("how_to_gain")
    ]
    gains.sort(key=lambda g: (-g["points"], g["rule"]))
    flags = from_json(card["flags"]) if card else []
    visibility = card["visibility"] if card else "unscored"
    return HeadlineScore.model_construct(
        composite=card["composite"] if card else None, grade=card["grade"] if card else None, visibility=visibility,
        visibility_icon=VISIBILITY_ICONS[visibility], dimension_indicator=card["dimension_indicator"] if card else "0/0",
        rules_version=card["rules_version"] if card else None, badges=from_json(card["badges"]) if card else [],
        flags=flags, dimensions=_with_rules(from_json(card["dimensions"]), rules) if card else [],
        how_to_gain=gains,
        caps=[cap_advice(f["label"], f["cap"], f["reason"]) for f in flags if f.get("cap") is not None],
    )


def _probe_seen(probe: tuple[int, ProbeResult]) -> ProbeSeen:
    ref, result = probe
    failed = sandbox_caused(result.kind, result.outcome.value)
    return ProbeSeen.model_construct(
        ref=f"probe_runs/{ref}", started_at=result.started_at.isoformat(), outcome=result.outcome.value, detail=result.detail,
        transport=result.transport, era=result.era, protocol_version=result.protocol_version, handshake=result.handshake,
        connect_ms=round(result.connect_ms, 1) if result.connect_ms is not None else None,
        ping_ms=round(result.ping_ms, 1) if result.ping_ms is not None else None, server_info=result.server_info,
        capabilities=sorted((result.capabilities or {}).keys()), instructions=result.instructions, package_version=result.package_version,
        checks=[c.model_dump() for c in result.checks], resources=len(result.resources or []), prompts=len(result.prompts or []),
        sandbox=result.sandbox, mocked_env=result.mocked_env or [], sandbox_failure=failed,
        log_tail=result.stderr_tail[-LOG_TAIL:] if failed and result.stderr_tail else None,
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
    """A server page: its headline card (`card`), the other rubrics' cards in the rubrics' order, and what was observed.

    A listing-only server's page (deviation 80) is what its listings say and why nothing could be measured: no card, no
    badge, and none of the evidence sections (stored evidence from when a listing still named a way in is not current)."""
    if listing_only(server):
        return _listed_page(server, observed, rows_url)
    rules = from_json(card["rules"]) if card else []
    result = probe[1] if probe else None
    sections = [rubric_section(rubric, other_cards[rubric.name]) for rubric in rubrics if rubric.name in other_cards]
    extras = {section.rubric: section.extra for section in sections}
    review_extra, outside_extra = extras.get("review", {}), extras.get("outside-in", {})
    tools = tool_rows(result.tools if result else None, review_extra.pop("tool_docs", None) or {}, observed.judgements)  # shown per tool
    scored_at = card["scored_at"] if card else None
    return ServerPage.model_construct(
        server=_server_facts(server, observed),
        score=_headline_score(card, rules),
        probe=_probe_seen(probe) if probe else None,
        tools=tools,
        schema_drift=schema_drift(analysis, result.tools if result else None, observed.changes),
        protocol=protocol(result, outside_extra),
        eras_explained=eras_explained(result),
        # A local server runs only while we probe it: its "uptime" would describe our own process (methodology item 7).
        reliability=None if server.is_local else reliability(observed.daily, observed.last_day, now.astimezone(timezone.utc).date()),
        other_rubrics=sections,
        analysis=_without_nulls(analysis),
        source=source_seen(analysis),
        history=history,
        # A chart only when the score moved: a flat line says no more than the sentence shown instead.
        trend_chart=len({row["composite"] for row in history}) > 1,
        last_scored_at=scored_at,
        score_age_days=_score_age_days(scored_at, now),
        engine_version=ENGINE_VERSION,
        not_measured=None,
        embed=embed_snippets(site_url, server.id),
        datasette={"server": f"{rows_url}/servers/{server.id}", "probes": f"{rows_url}/probe_runs?server_id={server.id}",
                   "scores": f"{rows_url}/scores?server_id={server.id}"},
    )


def _listed_page(server: Server, observed: Observed, rows_url: str) -> ServerPage:
    return ServerPage.model_construct(
        server=_server_facts(server, observed), not_measured=NOT_MEASURED, score=None, probe=None, tools=[],
        schema_drift={"source_vs_runtime": None, "changes": []}, protocol=None, eras_explained=None, reliability=None, other_rubrics=[],
        analysis=None, source=None, history=[], trend_chart=False, last_scored_at=None, score_age_days=None, engine_version=ENGINE_VERSION,
        embed=None,
        datasette={"server": f"{rows_url}/servers/{server.id}", "probes": f"{rows_url}/probe_runs?server_id={server.id}",
                   "scores": f"{rows_url}/scores?server_id={server.id}"},
    )


GENERATED_MARKER = re.compile(r"^<!-- /?generated:[\w-]+ -->\n", re.M)
TRANSITIONS_MARKER = "<!-- published:model-transitions -->"  # where the build writes the accepted model transitions


# The four published scoring methods, as the page names them. The document, which is also the project's record of what each
# method says, cites them by number ("seed 003"); a reader never saw those numbers, so the page says what each one is.
METHOD_NAMES = {"000": "the headline method", "001": "the live review rubric", "003": "the outside-in score",
                "004": "the remote-endpoint rubric"}
_SEEDS = re.compile(r"\b([Ss])eeds?\s+(\d{3})((?:,\s+\d{3})*(?:,?\s+and\s+\d{3})?)")
_SEED_WORDS = [  # the document's other words for them, and its other kind of seed: a dated snapshot of the official registry
    (re.compile(r"\b(\d{4}-\d{2})(\s+registry)?\s+seed\b"), r"\1\2 snapshot"),
    (re.compile(r"\b([Tt])he\s+seeds\b"), r"\1he published methods"),
    (re.compile(r"\b([Tt])he\s+seed\b"), r"\1he published method"),
    (re.compile(r"\b([Aa])\s+seed\b"), r"\1 published method"),
]
DEVIATIONS_HEADING = "<h2>Deviations and values we chose</h2>"
# "deviation 13", "deviations 35 and 38", "deviations 42–44", "deviations 60, 61": each number a link to its item
_DEVIATION_REFS = re.compile(r"\b([Dd]eviations?\s+)(\d+(?:(?:,\s+|\s+and\s+|\s+or\s+|–|-)\d+)*)\b")


def _method_names(match: re.Match[str]) -> str:
    numbers = [match.group(2), *re.findall(r"\d{3}", match.group(3))]
    names = [METHOD_NAMES.get(n, f"published method {n}") for n in numbers]
    said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return said[0].upper() + said[1:] if match.group(1) == "S" else said


def plain_citations(html: str) -> str:
    """The rendered document with every seed number said as the name of the method it is."""
    html = _SEEDS.sub(_method_names, html)
    for pattern, words in _SEED_WORDS:
        html = pattern.sub(words, html)
    return html


def linked_deviations(html: str) -> str:
    """Each item of the deviations list given its number as an anchor (id d13), and every "deviation 13" on the page a link to it."""
    start = html.find(DEVIATIONS_HEADING)
    if start < 0:
        return html
    opened = html.index("<ol", start)
    first = re.match(r'<ol(?: start="(\d+)")?>', html[opened:])
    number, depth, parts, done = int(first.group(1) or 1) if first else 1, 0, [html[:opened]], opened
    for tag in re.finditer(r"<(/?)(?:ol|ul)\b[^>]*>|<li>", html[opened:]):
        if tag.group() == "<li>":
            if depth == 1:  # an item of the list itself, not of a list inside one
                parts += [html[done:opened + tag.start()], f'<li id="d{number}">']
                done, number = opened + tag.end(), number + 1
            continue
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            break
    html = "".join(parts) + html[done:]
    html = html.replace(DEVIATIONS_HEADING, DEVIATIONS_HEADING.replace("<h2>", '<h2 id="deviations">'), 1)
    return _DEVIATION_REFS.sub(lambda m: m.group(1) + re.sub(r"\d+", lambda n: f'<a href="#d{n.group()}">{n.group()}</a>', m.group(2)), html)


def methodology_html(markdown_text: str, transitions: Sequence[ModelTransition] = ()) -> str:
    """The methodology document as HTML for readers: its own opening (which introduces the methods by their numbers) left to
    the page's introduction, the methods named, each deviation linked, and the accepted model transitions in their place.
    Raw HTML in the Markdown is shown as text, never rendered."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = markdown_text[markdown_text.index("\n## ") + 1:] if "\n## " in markdown_text else markdown_text
    html = renderer.render(GENERATED_MARKER.sub("", body).replace(TRANSITIONS_MARKER, transitions_table(transitions)))
    return linked_deviations(plain_citations(html))


def transitions_table(transitions: Sequence[ModelTransition]) -> str:
    """Seed 000: "Transition details are published on this page when they occur". One row per accepted transition."""
    if not transitions:
        return "No model transition has occurred yet."
    lines = ["| decided | judge replaced | by | servers compared | mean reading | shift | per-server change p10 / p50 / p90 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in transitions:
        p10, p50, p90 = t.quantiles.get("delta", [0.0, 0.0, 0.0])
        cells = [t.decided_at.date().isoformat(), f"`{t.from_judge}`", f"`{t.to_judge}`", f"{t.compared} of {t.sampled}",
                 f"{t.mean_from or 0:.1f} → {t.mean_to or 0:.1f}", f"{t.shift or 0:+.2f}%", f"{p10:+.1f} / {p50:+.1f} / {p90:+.1f}"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)
