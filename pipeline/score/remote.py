"""The `remote` rubric (seed 004): a hosted endpoint's connection, operator and exposed surface.

Categories: transport & reachability 10, endpoint security 40, capabilities 4, schema quality &
AI usability 18, tool coverage 8, tool safety 6, stability & change management 14. Fixed weights:
an inconclusive check (auth we do not hold, an endpoint whose failures to answer stand, text no
judge has read) keeps its weight and scores 0. Evidence our prober did not collect at all is
"pending": an endpoint not probed yet, a probe that measured nothing (a 429, an opt-out, our own
refusal) and a failure to answer that does not stand yet (pipeline.outcomes). Applies to hosted
endpoints reached over HTTP; a stdio package, or one we start on loopback, has no endpoint to score.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import to_json

from pipeline.drift import breaking_changes
from pipeline.judging import directive_reports
from pipeline.models import DimensionScore, RubricInfo
from pipeline.outcomes import Reading
from pipeline.score.engine import (
    Dimension,
    Outcome,
    Rubric,
    RuleSet,
    on_scale,
    pass_or_fail,
    ratio,
    share,
    unmeasured,
    weighted_composite,
)
from pipeline.score.facts import Facts
from pipeline.score.markers import findings
from pipeline.score.tools import ToolView, tool_views
from pipeline.tool_safety import read_only_contradictions

RUBRIC = "remote"
RULES_VERSION = "remote/1.0"
LATEST_PROTOCOL = "2026-07-28"
PROTOCOL_RECENCY = {LATEST_PROTOCOL: 100, "2025-11-25": 85, "2025-06-18": 70, "2025-03-26": 50, "2024-11-05": 30}
TRANSPORT_POINTS = {"streamable-http": 100, "sse": 60}  # legacy HTTP+SSE only: 60
MARKER_SCAN_POINTS, MARKER_COST = 50, 10  # each tool-poisoning finding costs 10 of 50
TOKEN_BUDGET = 600  # estimated tokens one tool/resource/prompt definition may use before it decays
PENALTY = {"removed_tool": 0.10, "breaking_change": 0.05, "dropped_auth": 0.50}
MUTATING = ("delete", "remove", "write", "update", "create", "send", "execute", "exec", "run", "drop", "insert", "modify",
            "move", "rename", "set", "post", "publish", "upload", "kill", "reset", "push", "merge", "edit", "add", "purge")
RULES = RuleSet()
rule = RULES.rule


def _http(facts: Facts) -> str | None:
    """Seed 004 scores hosted endpoints: a stdio package has none, and a package we start ourselves on loopback is our
    machine (its TLS, its stability), not an operator's endpoint."""
    if facts.server.transport == "stdio":
        return "a stdio package has no endpoint: the remote rubric scores hosted endpoints"
    if facts.server.is_local:
        return "a package the scoreboard starts on its own machine has no hosted endpoint: the remote rubric scores hosted endpoints"
    return None


DIMENSIONS = (
    Dimension("transport", "Transport & reachability", 10, applicable=_http),
    Dimension("endpoint_security", "Endpoint security", 40, applicable=_http),
    Dimension("capabilities", "Capabilities", 4, applicable=_http),
    Dimension("schema_quality", "Schema quality & AI usability", 18, applicable=_http),
    Dimension("tool_coverage", "Tool coverage", 8, applicable=_http),
    Dimension("tool_safety", "Tool safety", 6, applicable=_http),
    Dimension("stability", "Stability & change management", 14, applicable=_http),
)


def _unread(facts: Facts) -> Outcome | None:
    """Why the surface could not be read: not measured (not probed, a probe that measured nothing, a failure to answer
    that does not stand yet), or inconclusive (auth we do not hold, failures that stand), which scores 0 and keeps its
    weight; None when the handshake completed."""
    if facts.probe is None:
        return unmeasured("not probed yet")
    if (why := facts.not_measured) is not None:
        return unmeasured(why)
    if (why := facts.unconfirmed_failure) is not None:
        return unmeasured(why)
    if facts.reading is Reading.gated:
        return _zero("inconclusive: the endpoint requires authentication we do not hold")
    if facts.reading is Reading.failed:
        return _zero(f"inconclusive: the endpoint could not be read ({facts.probe.outcome.value})")
    return None


def _zero(reason: str, gain: str | None = None) -> Outcome:
    return share(0, reason, how_to_gain=gain)


# ---------------------------------------------------------------- Transport & reachability


@rule("transport", max(TRANSPORT_POINTS.values()))
def transport_verified(facts: Facts) -> Outcome:
    """MCP spoken over the declared endpoint: Streamable HTTP 100, legacy HTTP+SSE only 60; auth-gated or unreachable 0."""
    if (unread := _unread(facts)) is not None:
        if unread.measured:
            unread.how_to_gain = "let the probe complete a handshake (claim the server to lift an auth gate)"
        return unread
    modern = facts.probe.transport == "streamable-http"
    return on_scale(TRANSPORT_POINTS["streamable-http" if modern else "sse"], f"handshake over {facts.probe.transport}",
                    how_to_gain=None if modern else "serve Streamable HTTP; HTTP+SSE is deprecated")


# ---------------------------------------------------------------- Endpoint security


def _http_facts(facts: Facts):
    return facts.probe.http if facts.probe else None


@rule("endpoint_security", 40)
def tls(facts: Facts) -> Outcome:
    """TLS 1.2 or higher with a valid certificate; plain http scores 0, an https endpoint whose TLS handshake we never
    completed is not measured."""
    http = _http_facts(facts)
    if http is None:
        return unmeasured("TLS not observed by this prober version")
    if http.tls_version is None:
        if (facts.server.remote_url or "").lower().startswith("https://"):
            return unmeasured("TLS not observed: no TLS handshake with the endpoint completed")
        return _zero("no TLS: plain http", "serve the endpoint over HTTPS (TLS 1.2+)")
    modern = http.tls_version in ("TLSv1.2", "TLSv1.3")
    ok = modern and http.cert_valid is not False
    reason = f"{http.tls_version}, certificate {'valid' if http.cert_valid else 'invalid'}"
    return pass_or_fail(ok, reason, reason, "use TLS 1.2+ with a valid certificate")


@rule("endpoint_security", 30)
def hsts(facts: Facts) -> Outcome:
    """HTTP Strict Transport Security (RFC 6797) on the endpoint."""
    http = _http_facts(facts)
    if http is None or http.hsts is None:
        return unmeasured("HSTS not observed by this prober version")
    return pass_or_fail(bool(http.hsts), "HSTS header present", "no Strict-Transport-Security header", "send Strict-Transport-Security")


@rule("endpoint_security", 30)
def protected_resource_metadata(facts: Facts) -> Outcome:
    """OAuth protected-resource metadata (RFC 9728) for an auth-gated endpoint; not applicable to an open one."""
    http = _http_facts(facts)
    if http is None:
        return unmeasured("auth discovery not observed by this prober version")
    if not http.auth_required:
        return unmeasured("the endpoint does not require authentication")
    ok = bool(http.protected_resource_metadata)
    return pass_or_fail(ok, "RFC 9728 metadata found", "auth-gated without RFC 9728 metadata", "publish /.well-known/oauth-protected-resource")


# ---------------------------------------------------------------- Capabilities


@rule("capabilities", max(PROTOCOL_RECENCY.values()))
def protocol_recency(facts: Facts) -> Outcome:
    """How current the negotiated protocol version is: 2026-07-28 100, 2025-11-25 85, 2025-06-18 70, 2025-03-26 50, 2024-11-05 30."""
    if (unread := _unread(facts)) is not None:
        return unread
    version = facts.probe.protocol_version or ""
    return on_scale(PROTOCOL_RECENCY.get(version, 0), f"negotiated {version}",
                    how_to_gain=None if version == LATEST_PROTOCOL else f"support the {LATEST_PROTOCOL} protocol")


@rule("capabilities", bonus=10)
def ui_hint_bonus(facts: Facts) -> Outcome:
    """+10 when the server ships MCP Apps UI hints (pure bonus; never a penalty)."""
    if facts.probe is None or not facts.probe.reachable:
        return share(0, "no handshake")
    extensions = (facts.probe.capabilities or {}).get("extensions") or {}
    metas = [t["_meta"] for t in facts.tools or [] if isinstance(t.get("_meta"), dict)]  # a tool is as the server sent it
    linked = any(meta.get("ui") or meta.get("ui/resourceUri") for meta in metas)
    has = "io.modelcontextprotocol/ui" in extensions or linked
    return share(1 if has else 0, "UI hints present" if has else "no UI hints (no signal)")


# ---------------------------------------------------------------- Schema quality & AI usability


def _items(facts: Facts) -> list[tuple[str, dict[str, Any]]]:
    probe = facts.probe
    items = [("tool", t) for t in probe.tools or []]
    items += [("resource", r) for r in probe.resources or []] + [("resource template", r) for r in probe.resource_templates or []]
    items += [("prompt", p) for p in probe.prompts or []]
    return items


@rule("schema_quality", 50)
def prompt_resource_descriptions(facts: Facts) -> Outcome:
    """Share of prompts and resources that carry a description (tool text is scored under tool coverage)."""
    if (unread := _unread(facts)) is not None:
        return unread
    items = [(kind, i) for kind, i in _items(facts) if kind != "tool"]
    if not _items(facts):
        return _zero("empty schema: no tools, prompts or resources to assess", "expose at least one tool, prompt or resource")
    if not items:
        return unmeasured("no prompts or resources")
    described = sum(1 for _, i in items if str(i.get("description") or "").strip())
    return ratio(described, len(items), f"{described}/{len(items)} prompts and resources described",
                 how_to_gain=None if described == len(items) else "describe every prompt and resource")


def estimated_tokens(item: dict[str, Any]) -> int:
    """About four characters of JSON a token."""
    return max(1, len(to_json(item)) // 4)


@rule("schema_quality", 50)
def token_budget(facts: Facts) -> Outcome:
    """Every definition is loaded into the model's context: at or under the per-item budget scores full marks; overspend decays."""
    if (unread := _unread(facts)) is not None:
        return unread
    sizes = [(v.name, v.tokens) for v in tool_views(facts) or []]
    sizes += [(str(i.get("name") or i.get("uri")), estimated_tokens(i)) for kind, i in _items(facts) if kind != "tool"]
    if not sizes:
        return _zero("empty schema: nothing to assess")
    shares = [min(1.0, TOKEN_BUDGET / tokens) for _, tokens in sizes]
    over = [name for name, tokens in sizes if tokens > TOKEN_BUDGET]
    return ratio(sum(shares), len(shares), f"{len(sizes) - len(over)}/{len(sizes)} definitions within ~{TOKEN_BUDGET} tokens",
                 how_to_gain=("trim: " + ", ".join(over[:5])) if over else None)


# ---------------------------------------------------------------- Tool coverage


def _tools_or_unread(facts: Facts) -> tuple[list[ToolView], Outcome | None]:
    if (unread := _unread(facts)) is not None:
        return [], unread
    return tool_views(facts) or [], None


@rule("tool_coverage", 60)
def tool_description_coverage(facts: Facts) -> Outcome:
    """Share of tools with a description."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None:
        return unread
    if not tools:
        return _zero("no tools listed")
    described = sum(1 for v in tools if v.description)
    return ratio(described, len(tools), f"{described}/{len(tools)} tools described",
                 how_to_gain=None if described == len(tools) else "describe every tool")


@rule("tool_coverage", 40)
def parameter_description_coverage(facts: Facts) -> Outcome:
    """Share of tool parameters with a description; omitted for a server whose tools take no parameters."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None:
        return unread
    params = sum(v.params for v in tools)
    if not params:
        return unmeasured("no parameters to document")
    described = sum(v.params_described for v in tools)
    return ratio(described, params, f"{described}/{params} parameters described",
                 how_to_gain=None if described == params else "describe every parameter")


@rule("tool_coverage", bonus=10)
def output_schema_credit(facts: Facts) -> Outcome:
    """Credit only: +10 × the share of tools declaring an outputSchema; never a penalty."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None or not tools:
        return share(0, unread.reason if unread is not None else "no tools")
    declared = sum(1 for v in tools if v.output_schema) / len(tools)
    return share(declared, f"{100 * declared:.0f}% of tools declare an output schema")


# ---------------------------------------------------------------- Tool safety


_CAMEL = re.compile(r"([a-z])([A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_MUTATING = frozenset(MUTATING)


def _words(text: str) -> list[str]:
    return _NON_WORD.split(_CAMEL.sub(r"\1_\2", text).lower())


def implied_destructive(tool: dict[str, Any]) -> bool:
    """A tool whose name, or the verb its description opens with, suggests a change, unless it claims to be read-only."""
    if isinstance(tool.get("annotations"), dict) and tool["annotations"].get("readOnlyHint") is True:
        return False
    opening = _FIRST_WORD.search(str(tool.get("description") or ""))
    if opening and opening.group(0).lower() in _MUTATING:
        return True
    return not _MUTATING.isdisjoint(_words(str(tool.get("name", ""))))


@rule("tool_safety", MARKER_SCAN_POINTS)
def marker_scan(facts: Facts) -> Outcome:
    """A fixed list of tool-poisoning phrases and characters over instructions, names, titles and descriptions; each finding costs 10."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None:
        return unread
    found = findings(facts)
    if not found["texts"]:
        return _zero("inconclusive: no inspectable text captured")
    found_markers = [f"{where}: {', '.join(m)}" for where, m in found["injection"]]
    return on_scale(max(0, MARKER_SCAN_POINTS - MARKER_COST * len(found_markers)), "; ".join(found_markers[:5]) or "no markers found",
                    how_to_gain=("remove: " + "; ".join(found_markers[:3])) if found_markers else None)


@rule("tool_safety", 25)
def annotation_gap(facts: Facts) -> Outcome:
    """Share of implied-destructive tools that declare destructiveHint either way (absent means true); a read-only
    annotation that the tool's own name or description contradicts counts as an undeclared one."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None:
        return unread
    if not tools:
        return _zero("inconclusive: no tools captured")
    contradicted = [(v, found) for v in tools if (found := read_only_contradictions(v.tool))]
    lying = {id(v) for v, _ in contradicted}
    risky = [v for v in tools if id(v) in lying or implied_destructive(v.tool)]
    if not risky:
        return share(1, "no implied-destructive tools")
    undeclared = [v.name for v in risky if id(v) not in lying and not isinstance(v.hints.get("destructiveHint"), bool)]
    truthful = len(risky) - len(lying) - len(undeclared)
    reason = f"{truthful}/{len(risky)} implied-destructive tools declare destructiveHint"
    if contradicted:
        shown = "; ".join(f"{v.name} ({', '.join(found[:2])})" for v, found in contradicted[:3])
        reason += f"; read-only annotation contradicted by the tool's own words: {shown}"
    gains = ([f"annotate truthfully (readOnlyHint: false, destructiveHint) or rename: {', '.join(v.name for v, _ in contradicted[:5])}"]
             * bool(contradicted) + [f"declare destructiveHint on: {', '.join(undeclared[:5])}"] * bool(undeclared))
    return ratio(truthful, len(risky), reason[:500], how_to_gain="; ".join(gains) or None)


@rule("tool_safety", 25)
def judged_reading(facts: Facts) -> Outcome:
    """Share of tools whose current text an LLM judge has read and no judge reported as instructing the model reading it;
    unjudged or partly judged text scores 0 rather than being assumed clean, and a reported directive costs that tool's share."""
    tools, unread = _tools_or_unread(facts)
    if unread is not None:
        return unread
    judged = {j.tool_name for j in facts.current_judgements if not j.offline}
    names = {v.name for v in tools}
    if not names:
        return _zero("inconclusive: no tools captured")
    if not names <= judged:
        return _zero(f"unjudged: {len(names - judged)}/{len(names)} tools not yet read by an LLM judge in their current text")
    directive = {tool: models for tool, models in directive_reports(facts.current_judgements).items() if tool in names}
    if not directive:
        return share(1, f"all {len(names)} tools read by a judge; none reported instructing the model reading it")
    shown = "; ".join(f"{tool} ({', '.join(models)})" for tool, models in list(directive.items())[:5])
    return ratio(len(names) - len(directive), len(names), f"a judge reported text instructing the model reading it: {shown}"[:500],
                 how_to_gain=f"describe the tool, do not address the agent: {', '.join(list(directive)[:5])}")


# ---------------------------------------------------------------- Stability & change management


def churn(facts: Facts) -> dict[str, int]:
    removed = breaking = 0
    for before, after in zip(facts.snapshots, facts.snapshots[1:]):
        if before.content_hash == after.content_hash or before.tools is None or after.tools is None:
            continue
        previous = {str(t.get("name")): t for t in before.tools}
        current = {str(t.get("name")): t for t in after.tools}
        removed += len(set(previous) - set(current))
        breaking += sum(breaking_changes(previous[n], current[n]) for n in set(previous) & set(current))
    dropped = sum(1 for (_, a), (_, b) in zip(facts.auth_history, facts.auth_history[1:]) if a and not b)
    return {"removed_tool": removed, "breaking_change": breaking, "dropped_auth": dropped}


@rule("stability", 100)
def stability(facts: Facts) -> Outcome:
    """clamp(observedDays/30 − penalty) × 100: credit ramps over 30 days of snapshots; removed tools,
    breaking changes and dropped auth subtract (added auth never does). Without snapshots: not measured while the
    endpoint was never read (not probed, or a probe that measured nothing), 0 otherwise."""
    if not facts.snapshots:
        if (unread := _unread(facts)) is not None and not unread.measured:
            return unread
        return _zero("no snapshot history yet: cannot be verified", "stay reachable so snapshots accumulate")
    observed = (facts.now - facts.snapshots[0].captured_at).total_seconds() / 86400
    changes = churn(facts)
    penalty = sum(PENALTY[k] * v for k, v in changes.items())
    value = max(0.0, min(1.0, observed / 30 - penalty))
    described = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in changes.items() if v) or "no destabilising changes"
    return share(value, f"{observed:.1f} days observed; {described}",
                 how_to_gain=None if value >= 1 else "keep the tool surface stable; credit accrues over 30 days")


def composite(facts: Facts, dimensions: list[DimensionScore]) -> float | None:
    """Fixed category weights, renormalised over the categories scored; none until the endpoint's transport was measured
    (an endpoint no probe has read is not scored from its history alone: "100.0, 1/7" said nothing of it)."""
    if not any(d.name == "transport" and d.status == "scored" for d in dimensions):
        return None
    return weighted_composite(dimensions, {d.name: d.weight for d in DIMENSIONS})


def visibility(facts: Facts, dimensions: list[DimensionScore], composite: float | None) -> str:
    if _http(facts) is not None:
        return "not applicable"
    return "scored" if composite is not None else "unscored"


def extra(facts: Facts, composite: float | None) -> dict:
    return {"churn": churn(facts) if _http(facts) is None else None}


REMOTE = Rubric(
    info=RubricInfo(RUBRIC, "Remote endpoint", "Remote endpoint",
                    "The remote-endpoint rubric, for servers reached over HTTP: endpoint security and reachability, then the tools it "
                    "exposes. It gives no letter grades.", RULES_VERSION,
                    nav="Remote"),
    dimensions=DIMENSIONS,
    rules=tuple(RULES.rules),
    composite=composite,
    visibility=visibility,
    extra=extra,
    tables=("weights", "rules"),
)
