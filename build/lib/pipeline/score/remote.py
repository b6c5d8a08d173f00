"""The `remote` rubric (seed 004): a hosted endpoint's connection, operator and exposed surface.

Categories: transport & reachability 10, endpoint security 40, capabilities 4, schema quality &
AI usability 18, tool coverage 8, tool safety 6, stability & change management 14. Fixed weights:
an inconclusive check (auth we do not hold, an unreachable endpoint, text no judge has read)
keeps its weight and scores 0. Only evidence our prober did not collect at all is "pending".
Applies to servers reached over HTTP; a stdio package has no endpoint to score.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import to_json

from pipeline.models import ScoreCard
from pipeline.score.facts import Facts
from pipeline.score.markers import findings
from pipeline.score.rules import Verdict, rule, unmeasured
from pipeline.score.scoreboard import Dimension, evaluate
from pipeline.score.tools import ToolView, tool_views

RUBRIC = "remote"
RULES_VERSION = "remote/1.0"
PROTOCOL_RECENCY = {"2026-07-28": 100, "2025-11-25": 85, "2025-06-18": 70, "2025-03-26": 50, "2024-11-05": 30}
TOKEN_BUDGET = 600  # estimated tokens one tool/resource/prompt definition may use before it decays
PENALTY = {"removed_tool": 0.10, "breaking_change": 0.05, "dropped_auth": 0.50}
MUTATING = ("delete", "remove", "write", "update", "create", "send", "execute", "exec", "run", "drop", "insert", "modify",
            "move", "rename", "set", "post", "publish", "upload", "kill", "reset", "push", "merge", "edit", "add", "purge")


def _http(facts: Facts) -> str | None:
    return None if facts.server.transport != "stdio" else "a stdio package has no endpoint: the remote rubric scores hosted endpoints"


DIMENSIONS = [
    Dimension("transport", "Transport & reachability", 10, 10, _http),
    Dimension("endpoint_security", "Endpoint security", 40, 40, _http),
    Dimension("capabilities", "Capabilities", 4, 4, _http),
    Dimension("schema_quality", "Schema quality & AI usability", 18, 18, _http),
    Dimension("tool_coverage", "Tool coverage", 8, 8, _http),
    Dimension("tool_safety", "Tool safety", 6, 6, _http),
    Dimension("stability", "Stability & change management", 14, 14, _http),
]


def _inconclusive(facts: Facts) -> str | None:
    """Why the surface could not be read (the check then scores 0 but keeps its weight)."""
    if facts.probe is None:
        return "not probed yet"
    if facts.probe.outcome.value == "auth_required":
        return "inconclusive: the endpoint requires authentication we do not hold"
    if not facts.probe.reachable:
        return f"inconclusive: the endpoint could not be read ({facts.probe.outcome.value})"
    return None


def _zero(reason: str, gain: str | None = None) -> Verdict:
    return Verdict(points=0, reason=reason, how_to_gain=gain)


# ---------------------------------------------------------------- Transport & reachability


@rule(RUBRIC, "transport", 100)
def transport_verified(facts: Facts) -> Verdict:
    """MCP spoken over the declared endpoint: Streamable HTTP 100, legacy HTTP+SSE only 60; auth-gated or unreachable 0."""
    why = _inconclusive(facts)
    if why:
        return _zero(why, "let the probe complete a handshake (claim the server to lift an auth gate)")
    points = 100 if facts.probe.transport == "streamable-http" else 60
    return Verdict(points=points, reason=f"handshake over {facts.probe.transport}",
                   how_to_gain=None if points == 100 else "serve Streamable HTTP; HTTP+SSE is deprecated")


# ---------------------------------------------------------------- Endpoint security


def _http_facts(facts: Facts):
    return facts.probe.http if facts.probe else None


@rule(RUBRIC, "endpoint_security", 40)
def tls(facts: Facts) -> Verdict:
    """TLS 1.2 or higher with a valid certificate."""
    http = _http_facts(facts)
    if http is None:
        return unmeasured("TLS not observed by this prober version")
    if http.tls_version is None:
        return _zero("no TLS: plain http", "serve the endpoint over HTTPS (TLS 1.2+)")
    modern = http.tls_version in ("TLSv1.2", "TLSv1.3")
    ok = modern and http.cert_valid is not False
    return Verdict(points=40 if ok else 0, reason=f"{http.tls_version}, certificate {'valid' if http.cert_valid else 'invalid'}",
                   how_to_gain=None if ok else "use TLS 1.2+ with a valid certificate")


@rule(RUBRIC, "endpoint_security", 30)
def hsts(facts: Facts) -> Verdict:
    """HTTP Strict Transport Security (RFC 6797) on the endpoint."""
    http = _http_facts(facts)
    if http is None or http.hsts is None:
        return unmeasured("HSTS not observed by this prober version")
    return Verdict(points=30 if http.hsts else 0, reason="HSTS header present" if http.hsts else "no Strict-Transport-Security header",
                   how_to_gain=None if http.hsts else "send Strict-Transport-Security")


@rule(RUBRIC, "endpoint_security", 30)
def protected_resource_metadata(facts: Facts) -> Verdict:
    """OAuth protected-resource metadata (RFC 9728) for an auth-gated endpoint; not applicable to an open one."""
    http = _http_facts(facts)
    if http is None:
        return unmeasured("auth discovery not observed by this prober version")
    if not http.auth_required:
        return unmeasured("the endpoint does not require authentication")
    ok = bool(http.protected_resource_metadata)
    return Verdict(points=30 if ok else 0, reason="RFC 9728 metadata found" if ok else "auth-gated without RFC 9728 metadata",
                   how_to_gain=None if ok else "publish /.well-known/oauth-protected-resource")


# ---------------------------------------------------------------- Capabilities


@rule(RUBRIC, "capabilities", 100)
def protocol_recency(facts: Facts) -> Verdict:
    """How current the negotiated protocol version is: 2026-07-28 100, 2025-11-25 85, 2025-06-18 70, 2025-03-26 50, 2024-11-05 30."""
    why = _inconclusive(facts)
    if why:
        return _zero(why)
    version = facts.probe.protocol_version or ""
    points = PROTOCOL_RECENCY.get(version, 0)
    return Verdict(points=points, reason=f"negotiated {version}", how_to_gain=None if points == 100 else "support the 2026-07-28 protocol")


@rule(RUBRIC, "capabilities", 0)
def ui_hint_bonus(facts: Facts) -> Verdict:
    """+10 when the server ships MCP Apps UI hints (pure bonus; never a penalty)."""
    if facts.probe is None or not facts.probe.reachable:
        return Verdict(points=0, reason="no handshake")
    extensions = (facts.probe.capabilities or {}).get("extensions") or {}
    linked = any(((t.get("_meta") or {}).get("ui") or (t.get("_meta") or {}).get("ui/resourceUri")) for t in facts.tools or [])
    has = "io.modelcontextprotocol/ui" in extensions or linked
    return Verdict(points=10 if has else 0, reason="UI hints present" if has else "no UI hints (no signal)")


# ---------------------------------------------------------------- Schema quality & AI usability


def _items(facts: Facts) -> list[tuple[str, dict[str, Any]]]:
    probe = facts.probe
    items = [("tool", t) for t in probe.tools or []]
    items += [("resource", r) for r in probe.resources or []] + [("resource template", r) for r in probe.resource_templates or []]
    items += [("prompt", p) for p in probe.prompts or []]
    return items


@rule(RUBRIC, "schema_quality", 50)
def prompt_resource_descriptions(facts: Facts) -> Verdict:
    """Share of prompts and resources that carry a description (tool text is scored under tool coverage)."""
    why = _inconclusive(facts)
    if why:
        return _zero(why)
    items = [(kind, i) for kind, i in _items(facts) if kind != "tool"]
    if not _items(facts):
        return _zero("empty schema: no tools, prompts or resources to assess", "expose at least one tool, prompt or resource")
    if not items:
        return unmeasured("no prompts or resources")
    described = sum(1 for _, i in items if str(i.get("description") or "").strip())
    return Verdict(points=50 * described / len(items), reason=f"{described}/{len(items)} prompts and resources described",
                   how_to_gain=None if described == len(items) else "describe every prompt and resource")


def estimated_tokens(item: dict[str, Any]) -> int:
    """About four characters of JSON a token."""
    return max(1, len(to_json(item)) // 4)


@rule(RUBRIC, "schema_quality", 50)
def token_budget(facts: Facts) -> Verdict:
    """Every definition is loaded into the model's context: at or under the per-item budget scores full marks; overspend decays."""
    why = _inconclusive(facts)
    if why:
        return _zero(why)
    sizes = [(v.name, v.tokens) for v in tool_views(facts) or []]
    sizes += [(str(i.get("name") or i.get("uri")), estimated_tokens(i)) for kind, i in _items(facts) if kind != "tool"]
    if not sizes:
        return _zero("empty schema: nothing to assess")
    shares = [min(1.0, TOKEN_BUDGET / tokens) for _, tokens in sizes]
    over = [name for name, tokens in sizes if tokens > TOKEN_BUDGET]
    return Verdict(points=50 * sum(shares) / len(shares), reason=f"{len(sizes) - len(over)}/{len(sizes)} definitions within ~{TOKEN_BUDGET} tokens",
                   how_to_gain=("trim: " + ", ".join(over[:5])) if over else None)


# ---------------------------------------------------------------- Tool coverage


def _tools_or_why(facts: Facts) -> tuple[list[ToolView] | None, str | None]:
    why = _inconclusive(facts)
    if why:
        return None, why
    return tool_views(facts) or [], None


@rule(RUBRIC, "tool_coverage", 60)
def tool_description_coverage(facts: Facts) -> Verdict:
    """Share of tools with a description."""
    tools, why = _tools_or_why(facts)
    if why:
        return _zero(why)
    if not tools:
        return _zero("no tools listed")
    described = sum(1 for v in tools if v.description)
    return Verdict(points=60 * described / len(tools), reason=f"{described}/{len(tools)} tools described",
                   how_to_gain=None if described == len(tools) else "describe every tool")


@rule(RUBRIC, "tool_coverage", 40)
def parameter_description_coverage(facts: Facts) -> Verdict:
    """Share of tool parameters with a description; omitted for a server whose tools take no parameters."""
    tools, why = _tools_or_why(facts)
    if why:
        return _zero(why)
    params = sum(v.params for v in tools)
    if not params:
        return unmeasured("no parameters to document")
    described = sum(v.params_described for v in tools)
    return Verdict(points=40 * described / params, reason=f"{described}/{params} parameters described",
                   how_to_gain=None if described == params else "describe every parameter")


@rule(RUBRIC, "tool_coverage", 0)
def output_schema_credit(facts: Facts) -> Verdict:
    """Credit only: +10 × the share of tools declaring an outputSchema; never a penalty."""
    tools, why = _tools_or_why(facts)
    if why or not tools:
        return Verdict(points=0, reason=why or "no tools")
    share = sum(1 for v in tools if v.output_schema) / len(tools)
    return Verdict(points=10 * share, reason=f"{100 * share:.0f}% of tools declare an output schema")


# ---------------------------------------------------------------- Tool safety


_CAMEL = re.compile(r"([a-z])([A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_MUTATING = frozenset(MUTATING)


def _words(text: str) -> list[str]:
    return _NON_WORD.split(_CAMEL.sub(r"\1_\2", text).lower())


def implied_destructive(tool: dict[str, Any]) -> bool:
    """A tool whose name, or the verb its description opens with, suggests a change, unless it claims to be read-only."""
    if (tool.get("annotations") or {}).get("readOnlyHint") is True:
        return False
    opening = _FIRST_WORD.search(str(tool.get("description") or ""))
    if opening and opening.group(0).lower() in _MUTATING:
        return True
    return not _MUTATING.isdisjoint(_words(str(tool.get("name", ""))))


@rule(RUBRIC, "tool_safety", 50)
def marker_scan(facts: Facts) -> Verdict:
    """A fixed list of tool-poisoning phrases and characters over instructions, names, titles and descriptions; each finding costs 10."""
    tools, why = _tools_or_why(facts)
    if why:
        return _zero(why)
    found = findings(facts)
    if not found["texts"]:
        return _zero("inconclusive: no inspectable text captured")
    found_markers = [f"{where}: {', '.join(m)}" for where, m in found["injection"]]
    return Verdict(points=max(0, 50 - 10 * len(found_markers)), reason="; ".join(found_markers[:5]) or "no markers found",
                   how_to_gain=("remove: " + "; ".join(found_markers[:3])) if found_markers else None)


@rule(RUBRIC, "tool_safety", 25)
def annotation_gap(facts: Facts) -> Verdict:
    """Share of implied-destructive tools that declare destructiveHint either way (absent means true)."""
    tools, why = _tools_or_why(facts)
    if why:
        return _zero(why)
    if not tools:
        return _zero("inconclusive: no tools captured")
    risky = [v for v in tools if implied_destructive(v.tool)]
    if not risky:
        return Verdict(points=25, reason="no implied-destructive tools")
    declared = [v for v in risky if isinstance(v.hints.get("destructiveHint"), bool)]
    gap = [v.name for v in risky if not isinstance(v.hints.get("destructiveHint"), bool)]
    return Verdict(points=25 * len(declared) / len(risky), reason=f"{len(declared)}/{len(risky)} implied-destructive tools declare destructiveHint",
                   how_to_gain=("declare destructiveHint on: " + ", ".join(gap[:5])) if gap else None)


@rule(RUBRIC, "tool_safety", 25)
def judged_reading(facts: Facts) -> Verdict:
    """Every tool's text read by an LLM judge; unjudged or partly judged text scores 0 rather than being assumed clean."""
    tools, why = _tools_or_why(facts)
    if why:
        return _zero(why)
    judged = {j.tool_name for j in facts.judgements if not j.offline}
    names = {v.name for v in tools}
    if not names:
        return _zero("inconclusive: no tools captured")
    if names <= judged:
        return Verdict(points=25, reason=f"all {len(names)} tools read by a judge")
    return _zero(f"unjudged: {len(names - judged)}/{len(names)} tools not yet read by an LLM judge")


# ---------------------------------------------------------------- Stability & change management


def _schema_of(tool: dict[str, Any], key: str) -> dict[str, Any]:
    schema = tool.get(key) if isinstance(tool.get(key), dict) else {}
    return schema


def breaking_changes(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Input: a parameter removed, newly required, or retyped. Output: a declared field removed."""
    count = 0
    old_in, new_in = _schema_of(before, "inputSchema"), _schema_of(after, "inputSchema")
    old_props, new_props = old_in.get("properties") or {}, new_in.get("properties") or {}
    for name, schema in old_props.items():
        if name not in new_props:
            count += 1
        elif isinstance(schema, dict) and isinstance(new_props[name], dict) and schema.get("type") != new_props[name].get("type"):
            count += 1
    count += len(set(new_in.get("required") or []) - set(old_in.get("required") or []))
    old_out = (_schema_of(before, "outputSchema").get("properties") or {})
    new_out = (_schema_of(after, "outputSchema").get("properties") or {})
    count += len(set(old_out) - set(new_out))
    return count


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


@rule(RUBRIC, "stability", 100)
def stability(facts: Facts) -> Verdict:
    """clamp(observedDays/30 − penalty) × 100: credit ramps over 30 days of snapshots; removed tools, breaking changes and dropped auth subtract (added auth never does)."""
    if not facts.snapshots:
        return _zero("no snapshot history yet: cannot be verified", "stay reachable so snapshots accumulate")
    observed = (facts.now - facts.snapshots[0].captured_at).total_seconds() / 86400
    changes = churn(facts)
    penalty = sum(PENALTY[k] * v for k, v in changes.items())
    value = max(0.0, min(1.0, observed / 30 - penalty))
    described = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in changes.items() if v) or "no destabilising changes"
    return Verdict(points=100 * value, reason=f"{observed:.1f} days observed; {described}",
                   how_to_gain=None if value >= 1 else "keep the tool surface stable; credit accrues over 30 days")


def score(facts: Facts) -> ScoreCard:
    outcomes, dimensions = evaluate(facts, RUBRIC, DIMENSIONS)
    weights = {d.name: d.weight for d in DIMENSIONS}
    scored = [d for d in dimensions if d.status == "scored"]
    total = sum(weights[d.name] for d in scored)
    composite = None
    if scored and total:
        for d in scored:
            d.weight = round(weights[d.name] / total, 4)
        composite = sum((d.score or 0) * weights[d.name] for d in scored) / total
    applicable = facts.server.transport != "stdio"
    return ScoreCard(
        server_id=facts.server.id, rubric=RUBRIC, composite=composite if applicable else None, grade=None,
        visibility="scored" if applicable and composite is not None else "not applicable" if not applicable else "unscored",
        dimensions=dimensions, rules=outcomes, rules_version=RULES_VERSION, scored_at=facts.now,
        extra={"churn": churn(facts) if applicable else None},
    )
