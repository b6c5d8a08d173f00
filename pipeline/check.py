"""`scoreboard check`: probe one server (and optionally its source), score it under every
rubric and explain every point, for server authors and their CI. Nothing is kept: the evidence goes
through a throw-away store and the score stage's own gathering, so `check` shows the number the site
would show for the same evidence (methodology deviation 66)."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import AsyncIterator
from urllib.parse import urlsplit

import anyio

from pipeline import store
from pipeline.analyze import analyze_server
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.config import Settings
from pipeline.judge import Panel, run_judge
from pipeline.models import AnalysisResult, CatalogEntry, ProbeResult, ScoreCard, Server, ServerFields, SourceRecord, cap_advice
from pipeline.net import target_kinds
from pipeline.probe import probe_limits
from pipeline.probe.deep import deep_probe
from pipeline.probe.sandbox import Running, scrubbed_environment
from pipeline.progress import Progress
from pipeline.score import registry, score_all
from pipeline.score.facts import gather_many

NOT_MEASURED = "not measured"


def target_server(url: str | None, command: list[str] | None, now: datetime) -> Server:
    if url:
        transport = "sse" if url.rstrip("/").endswith("/sse") else "streamable-http"
        return Server(id="check", name=url, transport=transport, remote_url=url, first_seen_at=now, last_seen_at=now)
    return Server(id="check", name=" ".join(command or []), transport="stdio", first_seen_at=now, last_seen_at=now)


@asynccontextmanager
async def _stdio(command: list[str], extra_env: dict[str, str]) -> AsyncIterator[Running]:
    scratch = Path(tempfile.mkdtemp(prefix="scoreboard-check-"))
    errlog = (scratch / "stderr.log").open("w", encoding="utf-8")
    try:
        # The author's own command: keep PATH and HOME so their toolchain works; nothing else leaks.
        env = scrubbed_environment(tuple(os.environ.get("PATH", "").split(os.pathsep)), Path.home())
        env.update(extra_env)
        yield Running(transport="stdio", command=command[0], args=tuple(command[1:]), env=env, cwd=Path.cwd(), errlog=errlog,
                      stderr_path=scratch / "stderr.log")
    finally:
        errlog.close()
        shutil.rmtree(scratch, ignore_errors=True)


async def _probe(server: Server, command: list[str] | None, extra_env: dict[str, str], settings: Settings, now: datetime) -> ProbeResult:
    if command:
        async with _stdio(command, extra_env) as running:
            result = await deep_probe(server.id, running, limits=probe_limits(settings, allow_private=True),
                                      total_timeout=settings.probe_timeout, now=now)
            result.stderr_tail = running.stderr_tail(4000)
            return result
    running = Running(transport=server.transport, url=server.remote_url)
    # A URL the author names may be on localhost or their own network: checking one's own server before publishing it
    # is the point. Only the target's own kind of address is allowed, so a public target cannot send us there.
    allowed = await anyio.to_thread.run_sync(target_kinds, server.remote_url or "", abandon_on_cancel=True)
    return await deep_probe(server.id, running, limits=probe_limits(settings, allow_private=False, allowed=allowed),
                            total_timeout=settings.probe_timeout, now=now)


def probe_target(url: str | None, command: list[str] | None, settings: Settings, now: datetime) -> ProbeResult:
    """`scoreboard probe TARGET`: one deep probe of a server that need not be in the catalog; nothing is stored."""
    return anyio.run(_probe, target_server(url, command, now), command, {}, settings, now)


def render_probe(probe: ProbeResult, url: str | None = None) -> str:
    """What the prober saw, for a person: handshake, eras, endpoint facts, lists and every check. A fact the probe did
    not establish (None) reads "not measured", never "no" or a dash."""
    lines = [f"outcome: {probe.outcome.value}" + (f" ({probe.detail})" if probe.detail else "") + f"; {probe.duration_ms:.0f} ms"]
    if probe.reachable:
        lines.append(f"protocol: {probe.era} {probe.protocol_version} via {probe.handshake} over {probe.transport}; connect {_ms(probe.connect_ms)}"
                     + (f", ping {probe.ping_ms:.0f} ms" if probe.ping_ms is not None else ""))
    info = probe.server_info
    if info is None:
        lines.append(f"server: {NOT_MEASURED}")
    elif info:
        shown = ", ".join(f"{k} {info[k]!r}" for k in ("name", "title", "version", "description", "websiteUrl") if info.get(k))
        icons = info.get("icons") or []
        lines.append(f"server: {shown}" + (f"; {len(icons)} icons ({', '.join(str(i.get('mimeType')) for i in icons[:4])})" if icons else ""))
    if probe.instructions:
        lines.append(f"instructions: {len(probe.instructions)} chars: {probe.instructions[:160]!r}")
    lines.append(f"capabilities: {NOT_MEASURED if probe.capabilities is None else ', '.join(sorted(probe.capabilities)) or 'none'}")
    eras = probe.eras.model_dump() if probe.eras is not None else {}
    lines.append(f"eras: modern {_fact(eras.get('modern'))}, legacy {_fact(eras.get('legacy'))}; header routing {_fact(eras.get('header_routing'))}, "
                 f"list cache hints {_fact(eras.get('list_cache_hints'))}")
    if probe.transport != "stdio":
        lines.append(_endpoint(probe, url))
    for name, capability in (("tools", None), ("resources", "resources"), ("resource_templates", "resources"), ("prompts", "prompts")):
        items = getattr(probe, name)
        if items is not None:
            names = [str(i.get("name") or i.get("uri") or i.get("uriTemplate")) for i in items]
            listed = f": {', '.join(names[:12])}" + (" …" if len(names) > 12 else "") if names else ""
            lines.append(f"{name.replace('_', ' ')}: {len(items)}{listed}")
        else:
            offered = probe.capabilities is None or capability is None or capability in probe.capabilities  # tools are always asked for
            lines.append(f"{name.replace('_', ' ')}: {NOT_MEASURED if offered else 'not offered'}")
    for check in probe.checks:
        state = "pass" if check.passed else "fail" if check.passed is False else "info"
        lines.append(f"  check {check.name}: {check.outcome} [{state}]" + (f" — {check.detail[:200]}" if check.detail else ""))
    if probe.stderr_tail:
        lines.append(f"stderr (last lines): {probe.stderr_tail[-400:]!r}")
    return "\n".join(lines)


def _endpoint(probe: ProbeResult, url: str | None) -> str:
    """The endpoint's HTTP facts; with no facts at all (the probe never got that far) each one is not measured."""
    facts = probe.http.model_dump() if probe.http is not None else {}
    if facts.get("tls_version"):
        tls = f"TLS {facts['tls_version']} (certificate valid {_fact(facts.get('cert_valid'))}), HSTS {_fact(facts.get('hsts'))}"
    elif url is not None and urlsplit(url).scheme == "http":
        tls = "TLS none (plain HTTP)"
    else:
        tls = f"TLS {NOT_MEASURED}"
    auth = f"auth required: {_fact(facts.get('auth_required'))}"
    if facts.get("auth_required"):
        auth += (f" (protected-resource metadata {_fact(facts.get('protected_resource_metadata'))}, "
                 f"authorization-server metadata {_fact(facts.get('authorization_server_metadata'))})")
    return f"endpoint: {tls}; {auth}; server card {_fact(facts.get('server_card'))}, HTML setup page {_fact(facts.get('html_setup_page'))}"


def _fact(value: bool | None) -> str:
    return NOT_MEASURED if value is None else "yes" if value else "no"


def _ms(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value:.0f} ms"


def run_check(url: str | None, command: list[str] | None, source: Path | None, extra_env: dict[str, str], settings: Settings,
              now: datetime) -> tuple[ProbeResult, list[ScoreCard]]:
    server = target_server(url, command, now)
    probe = anyio.run(_probe, server, command, extra_env, settings, now)
    analysis = analyze_server(server, LocalDirectoryFetcher(source), now) if source else None
    if analysis and analysis.description and not server.description:
        server = server.model_copy(update={"description": analysis.description, "repository": "local"})
    return probe, score_as_the_site(server, probe, analysis, now)


class _Target:
    """The checked server as a discovery source lists it: what the author told us, nothing more."""

    name = "check"

    def __init__(self, server: Server) -> None:
        self.server = server

    def read(self):
        from pipeline.discover import SourceBatch

        fields = self.server.model_dump(include=set(ServerFields.model_fields))
        key = f"check:{self.server.id}"
        return SourceBatch(entries=[CatalogEntry(**fields, keys=[key], records=[SourceRecord(source=self.name, key=self.server.id)])])


def score_as_the_site(server: Server, probe: ProbeResult, analysis: AnalysisResult | None, now: datetime) -> list[ScoreCard]:
    """The cards the site shows for this evidence: the server, its probe and its analysis are written to a throw-away
    store as `scoreboard run` writes them (cleaned, with the tool snapshot and the offline judge's judgements), read back
    by the score stage's own gathering and scored by the same rules."""
    from pipeline.discover import run_discover  # only once the probe is done: `probe TARGET` and `check` start without discovery

    with tempfile.TemporaryDirectory(prefix="scoreboard-check-") as scratch:
        db = store.open_db(Path(scratch) / "check.db")
        try:
            run_discover(db, sources=[_Target(server)], now=now, progress=_quiet("discover", 2))
            stored = store.active_servers(db)
            store.record_probe(db, probe.model_copy(update={"server_id": stored[0].id}), None)
            if analysis is not None:
                store.record_analysis(db, analysis.model_copy(update={"server_id": stored[0].id}))
            run_judge(db, servers=stored, panel=Panel.offline(), now=now, progress=_quiet("judge", 1))
            facts = next(gather_many(db, stored, now))
        finally:
            db.close()
    facts.probe_ref, facts.analysis_ref = "this probe", "--source" if analysis is not None else None  # the store is gone
    return score_all(facts)


def _quiet(stage: str, total: int) -> Progress:
    return Progress(stage, total, stream=io.StringIO())


def unmeasured_rules(cards: list[ScoreCard]) -> dict[str, list[tuple[str, str]]]:
    """Per rubric, the rules this check could not measure and why (a dimension that does not apply is not among them:
    it is no gap in the evidence). Each is left out of its score, never counted as zero."""
    counted = {(r.name, d.name) for r in registry.RUBRICS for d in r.dimensions if d.weight or d.weight_enhanced}  # not "reported only"
    gaps: dict[str, list[tuple[str, str]]] = {}
    for card in cards:
        if card.visibility == "not applicable":
            continue
        applicable = {d.name for d in card.dimensions if d.status != "not_applicable" and (card.rubric, d.name) in counted}
        rules = [(r.rule, r.reason) for r in card.rules if not r.measured and r.dimension in applicable]
        if rules:
            gaps[card.rubric] = rules
    return gaps


def caps(card: ScoreCard) -> list[str]:
    """Every flag standing on the card that caps its score, with the cap: the first thing to fix."""
    return [f"flag {cap_advice(f.label, f.cap, f.reason)}" for f in card.flags if f.cap is not None]


def render_text(probe: ProbeResult, cards: list[ScoreCard], source: bool = False) -> str:
    lines = [f"probe: {probe.outcome.value}" + (f" ({probe.detail})" if probe.detail else "")]
    if probe.reachable:
        tools = NOT_MEASURED if probe.tools is None else len(probe.tools)
        lines.append(f"  {probe.era} {probe.protocol_version} via {probe.handshake}, tools {tools}, connect {_ms(probe.connect_ms)}")
    if probe.transport == "stdio":
        lines.append("  started by your command, with your PATH and HOME; the site starts a published server in its sandbox (no network, "
                     "placeholder credentials), where it may behave differently")
    lines += _gaps(cards, source)
    for card in cards:
        value = NOT_MEASURED if card.composite is None else f"{card.composite:.1f}"
        grade = f" {card.grade}" if card.grade else ""
        lines += ["", f"{card.rubric}: {value}{grade} ({card.visibility}, {card.dimension_indicator})"]
        if card.flags:
            lines += [f"  flag {f.label} [{f.severity}]: {f.reason}" for f in card.flags]
        for extra in ("rank_score", "status", "spec_readiness"):
            if card.extra.get(extra) is not None:
                lines.append(f"  {extra.replace('_', ' ')}: {card.extra[extra]}")
        for dim in card.dimensions:
            shown = f"{dim.score:.1f}" if dim.score is not None else "not applicable" if dim.status == "not_applicable" else NOT_MEASURED
            lines.append(f"  {dim.label}: {shown} [{dim.status.replace('_', ' ')}]")
            for r in (r for r in card.rules if r.dimension == dim.name):
                points = f"{r.points:g}/{r.max_points:g}" if r.measured else NOT_MEASURED
                lines.append(f"    {r.rule}: {points} — {r.reason}")
        gains = sorted((r for r in card.rules if r.how_to_gain), key=lambda r: r.points - r.max_points)
        if gains or caps(card):
            lines.append("  how to gain points:")
            lines += [f"    - {cap}" for cap in caps(card)]
            lines += [f"    - {r.rule}: {r.how_to_gain}" for r in gains]
    return "\n".join(lines)


def _gaps(cards: list[ScoreCard], source: bool) -> list[str]:
    """What this check could not measure, said before any number: each rule is left out of its score, so the site,
    which may hold more evidence (the published source, probes over days), can show a different one."""
    gaps = unmeasured_rules(cards)
    if not gaps:
        return []
    lines = ["", "not measured by this check (left out of the scores below, not counted as zero; the site scores what its own "
             "evidence allows, so its number may differ):"]
    if not source:
        lines.append("  no --source was given: nothing that needs the source was measured; pass --source DIR to include it")
    lines.append("  what the site's catalog knows of a published server (its package, its repository) is not known here: distribution_clarity "
                 "and the No Source Code flag count only a --source directory that describes the server")
    for rubric, rules in gaps.items():
        lines.append(f"  {rubric}:")
        lines += [f"    - {rule}: {reason}" for rule, reason in rules]
    return lines
