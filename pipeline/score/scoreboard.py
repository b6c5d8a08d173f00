"""The `scoreboard` rubric (seed 000, the headline score): dimensions, rules and the composite.

Each dimension scores 0–100: the measured rules' points over their maxima, then bonuses and
penalties (rules with max 0), clamped. The composite renormalises the category weights over
the dimensions that are scored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from pipeline.models import DimensionScore, FlagOutcome, RuleOutcome, ScoreCard
from pipeline.score.facts import Facts
from pipeline.score.flags import raised
from pipeline.score.rules import Verdict, rule, rules_for, unmeasured
from pipeline.score.tools import ToolView, tool_views

RUBRIC = "scoreboard"
RULES_VERSION = "scoreboard/0.1"
MIN_FAST_PROBES = 10  # seed 000: no reliability score under 10 probes
MIN_P95_SAMPLES = 20  # ours: a p95 from fewer successful probes is not a p95
FUZZ_POINTS = {"proper_error": 100, "accepted": 50, "crash": 0, "timeout": 0}


@dataclass(frozen=True)
class Dimension:
    name: str
    label: str
    weight: float  # without interpretability
    weight_enhanced: float  # with interpretability
    applicable: Callable[[Facts], str | None]  # None when applicable, else why not
    optional: bool = False  # counts toward the dimension indicator only once scored


def _always(_: Facts) -> str | None:
    return None


def _remote_only(facts: Facts) -> str | None:
    if facts.server.is_local:
        return "local server started by the scoreboard: uptime and latency of our own process say nothing"
    return None


DIMENSIONS = [
    Dimension("schema_quality", "Schema Quality", 25, 20, _always),
    Dimension("protocol_compliance", "Protocol Compliance", 20, 18, _always),
    Dimension("reliability", "Reliability", 20, 18, _remote_only),
    Dimension("docs_maintenance", "Docs & Maintenance", 15, 12, _always),
    Dimension("security_hygiene", "Security Hygiene", 20, 17, _always),
    Dimension("schema_interpretability", "Schema Interpretability", 0, 15, _always, optional=True),
]
STANDARD = [d.name for d in DIMENSIONS if d.name != "schema_interpretability"]
GRADES = [(95, "A+"), (85, "A"), (70, "B"), (55, "C"), (40, "D"), (0, "F")]
# Descriptions project generators leave behind. Matched whole (case and trailing punctuation
# ignored), so a real description that merely starts "MCP server for …" is never penalised.
TEMPLATE_DESCRIPTIONS = re.compile(
    r"^(an? )?(simple |new |basic )?(model context protocol|mcp) server( for(\s*(\.\.\.|…))?)?$"
    r"|^(an? )?(simple |new |basic )?(model context protocol|mcp) server (for|to) \w+$"
    r"|^add your description here$|^todo\b.*|^description$|^my mcp server$",
    re.I,
)
SENSITIVE_CREDENTIAL = re.compile(r"PASSWORD|PASSWD|DATABASE_URL|DB_URL|CONNECTION_STRING|AWS_SECRET|PRIVATE_KEY|GOOGLE_APPLICATION_CREDENTIALS|AZURE_CLIENT_SECRET|SERVICE_ACCOUNT", re.I)


def is_template_description(description: str | None) -> bool:
    return bool(description) and bool(TEMPLATE_DESCRIPTIONS.match(description.strip().rstrip(".!").strip()))


DECAY = [(7, 1.0), (14, 0.97), (30, 0.90), (60, 0.75), (90, 0.55)]
DECAY_FLOOR = 0.40


def decay_factor(age_days: float | None) -> float:
    """Stale-data decay of static-analysis points: 1.0 / 0.97 / 0.90 / 0.75 / 0.55 up to 7/14/30/60/90 days, then 0.40."""
    if age_days is None:
        return 1.0
    return next((factor for limit, factor in DECAY if age_days <= limit), DECAY_FLOOR)


def _static(facts: Facts, points: float, reason: str) -> tuple[float, str]:
    """Apply stale-data decay to points that come from static analysis, and say so."""
    factor = decay_factor(facts.analysis_age_days)
    if factor < 1:
        return points * factor, f"{reason}; ×{factor:.2f} for analysis {facts.analysis_age_days:.0f} days old"
    return points, reason


def grade_for(score: float) -> str:
    return next(letter for floor, letter in GRADES if score >= floor)


# ---------------------------------------------------------------- Schema Quality


def runtime_completeness(tools: list[ToolView]) -> tuple[float, str]:
    """Base 40 when tools exist, +60 × the mean share of schema checks each tool meets."""
    if not tools:
        return 0.0, "the server listed no tools"
    shares = []
    for view in tools:
        passed, checks = bool(view.description) + view.input_is_object, 2
        if view.params:
            passed += (view.params_typed == view.params) + (view.params_described == view.params) + view.has_required
            checks += 3
        shares.append(passed / checks)
    value = 40 + 60 * sum(shares) / len(shares)
    if not any(view.description for view in tools):
        value = min(value, 70)
    return value, f"{len(tools)} tools; {100 * sum(shares) / len(shares):.0f}% of schema checks met"


@rule(RUBRIC, "schema_quality", 60)
def schema_completeness(facts: Facts) -> Verdict:
    """Do tools have typed, described parameters? Runtime tools/list: base 40 + up to 60 for
    descriptions, object schemas, typed and described properties, declared required lists."""
    static = (facts.analysis.metrics.get("schema_completeness") or {}) if facts.analysis and facts.analysis.ok else {}
    if facts.tools is None and not static:
        return unmeasured("no runtime tool list and no tools found in source yet", "make the server reachable by the probe so its tools can be listed")
    views = tool_views(facts)
    runtime = runtime_completeness(views) if views is not None else None
    static_value = static.get("value")
    # Runtime override: runtime completeness wins whenever it is higher than the static reading.
    if runtime is not None and (static_value is None or runtime[0] >= static_value):
        value, reason, evidence = runtime[0], f"runtime: {runtime[1]}", facts.probe_ref
    else:
        value, evidence = float(static_value), facts.analysis_ref
        value, reason = _static(facts, value, f"from source: {value:.0f}/100")
    return Verdict(points=0.6 * value, reason=reason, evidence=evidence,
                   how_to_gain=None if value >= 99.5 else "describe every tool and parameter, give each parameter a type, list required parameters")


@rule(RUBRIC, "schema_quality", 40)
def description_quality(facts: Facts) -> Verdict:
    """Is the description clear and the README useful? Length, action words, headings, code examples, usage section."""
    if facts.analysis is None or not facts.analysis.ok:
        return unmeasured("no source analysis yet", "publish the source so it can be analysed")
    metric = facts.analysis.metrics.get("description_quality") or {}
    value = float(metric.get("value", 0))
    points, reason = _static(facts, 0.4 * value, f"description and README score {value:.0f}/100")
    return Verdict(points=points, reason=reason, evidence=facts.analysis_ref,
                   how_to_gain=None if value >= 100 else "write a one-line description that says what the server does, and a README with usage and code examples")


@rule(RUBRIC, "schema_quality", 0)
def template_description(facts: Facts) -> Verdict:
    """Penalty −15 for a generic placeholder description ("A Model Context Protocol server", "MCP server for…", "TODO")."""
    description = facts.description
    if not description:
        return Verdict(points=0, reason="no description to judge")
    if is_template_description(description):
        return Verdict(points=-15, reason=f"placeholder description: {description[:80]!r}", how_to_gain="replace the placeholder description with what the server does")
    return Verdict(points=0, reason="description is not a placeholder")


# ---------------------------------------------------------------- Protocol Compliance


@rule(RUBRIC, "protocol_compliance", 20)
def reachability(facts: Facts) -> Verdict:
    """Did the server complete the MCP handshake (initialize or server/discover)?"""
    if facts.probe is None:
        return unmeasured("not probed yet")
    if facts.probe.reachable:
        return Verdict(points=20, reason=f"handshake completed ({facts.probe.handshake}, {facts.probe.protocol_version})", evidence=facts.probe_ref)
    return Verdict(points=0, reason=f"probe outcome {facts.probe.outcome.value}: {(facts.probe.detail or '')[:160]}", evidence=facts.probe_ref,
                   how_to_gain="make the server start and answer the handshake")


@rule(RUBRIC, "protocol_compliance", 20)
def schema_validity(facts: Facts) -> Verdict:
    """Share of listed tools whose inputSchema (and outputSchema) are valid object JSON Schemas."""
    tools = facts.tools
    if tools is None:
        return unmeasured("no runtime tool list yet")
    if not tools:
        return unmeasured("no tools to validate")
    check = facts.check("schema_validity")
    invalid = len([part for part in (check.detail or "").split("; ") if part]) if check and not check.passed else 0
    share = (len(tools) - invalid) / len(tools)
    return Verdict(points=20 * share, reason=f"{len(tools) - invalid}/{len(tools)} tools have valid schemas", evidence=facts.probe_ref,
                   how_to_gain=None if share == 1 else f"fix: {(check.detail if check else '')[:200]}")


@rule(RUBRIC, "protocol_compliance", 20)
def error_handling(facts: Facts) -> Verdict:
    """Bad calls (unknown tool, missing required parameter, wrong parameter type) get a proper error (JSON-RPC error or isError result), not a crash or silence."""
    checks = [c for c in (facts.probe.checks if facts.probe else []) if c.name.startswith("error_") and c.passed is not None]
    if not checks:
        return unmeasured("error handling not tested yet")
    passed = [c for c in checks if c.passed]
    share = len(passed) / len(checks)
    summary = ", ".join(f"{c.name.removeprefix('error_')}: {c.outcome}" for c in checks)
    failed = [c.name.removeprefix("error_").replace("_", " ") for c in checks if not c.passed]
    return Verdict(points=20 * share, reason=summary, evidence=facts.probe_ref,
                   how_to_gain=None if not failed else f"answer these bad calls with a JSON-RPC error or an isError result: {', '.join(failed)}")


@rule(RUBRIC, "protocol_compliance", 20)
def fuzz_resilience(facts: Facts) -> Verdict:
    """Adversarial inputs (oversized, empty, Unicode edge cases, nulls, boundaries): proper_error 100, accepted 50, crash or timeout 0."""
    cases = facts.probe.fuzz if facts.probe and facts.probe.reachable else None
    if cases is None:
        return unmeasured("no fuzz cases run yet")
    if not cases:
        return unmeasured("no tool was safe to fuzz")
    value = sum(FUZZ_POINTS[c.outcome] for c in cases) / len(cases)
    crashes = [f"{c.tool}/{c.case}" for c in cases if c.outcome in ("crash", "timeout")]
    return Verdict(points=0.2 * value, reason=f"{len(cases)} fuzz cases, {len(crashes)} crashes or timeouts", evidence=facts.probe_ref,
                   how_to_gain=("validate inputs and return errors for: " + ", ".join(crashes[:5])) if crashes else None)


@rule(RUBRIC, "protocol_compliance", 20)
def invocation_smoke_test(facts: Facts) -> Verdict:
    """Share of safe (read-only) tools that return a non-error result to schema-valid arguments within 10 s."""
    calls = facts.probe.invocations if facts.probe and facts.probe.reachable else None
    if calls is None:
        return unmeasured("no invocation smoke test run yet")
    if not calls:
        return unmeasured("no tool was safe to call (read-only by annotation and by name)")
    ok = [c for c in calls if c.outcome == "ok"]
    failed = [c.tool for c in calls if c.outcome != "ok"]
    return Verdict(points=20 * len(ok) / len(calls), reason=f"{len(ok)}/{len(calls)} safe tools answered", evidence=facts.probe_ref,
                   how_to_gain=("make these tools answer schema-valid calls without error: " + ", ".join(failed[:5])) if failed else None)


@rule(RUBRIC, "protocol_compliance", 0)
def auth_discovery_bonus(facts: Facts) -> Verdict:
    """+10 (capped at 100) when an auth-gated server implements OAuth protected-resource discovery (RFC 9728). No penalty without."""
    http = facts.probe.http if facts.probe else None
    if http is None or not http.auth_required:
        return Verdict(points=0, reason="no authentication required: no bonus, no penalty")
    if http.protected_resource_metadata:
        return Verdict(points=10, reason="auth-gated with RFC 9728 protected-resource metadata", evidence=facts.probe_ref)
    return Verdict(points=0, reason="auth-gated without protected-resource metadata", evidence=facts.probe_ref,
                   how_to_gain="publish /.well-known/oauth-protected-resource (RFC 9728) for +10")


# ---------------------------------------------------------------- Reliability


def latency_score(ms: float) -> float:
    """Seed 000's continuous curve: 100→100, 200→90, 500→70, 1000→50, 2000→25, 5000+→10."""
    points = [(100, 100), (200, 90), (500, 70), (1000, 50), (2000, 25), (5000, 10)]
    if ms <= points[0][0]:
        return 100.0
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if ms <= x1:
            return y0 + (y1 - y0) * (ms - x0) / (x1 - x0)
    return 10.0


def _has_p95(facts: Facts) -> bool:
    return facts.fast.samples >= MIN_P95_SAMPLES


@rule(RUBRIC, "reliability", 60)
def uptime(facts: Facts) -> Verdict:
    """7-day uptime: share of successful fast probes (60%, or 70% without p95). Needs 10+ probes."""
    total = facts.fast.runs
    if total < MIN_FAST_PROBES:
        return unmeasured(f"{total} fast probes in 7 days; {MIN_FAST_PROBES} needed")
    share = facts.fast.ok / total
    weight = 60 if _has_p95(facts) else 70
    return Verdict(points=weight * share, reason=f"{100 * share:.1f}% of {total} probes succeeded", max_points=weight)


@rule(RUBRIC, "reliability", 25)
def latency_p50(facts: Facts) -> Verdict:
    """Median connect time of successful probes on the latency curve (25%, or 30% without p95); from 5%-wide histogram buckets."""
    if facts.fast.runs < MIN_FAST_PROBES or not facts.fast.samples:
        return unmeasured("not enough successful fast probes")
    p50 = facts.fast.percentile(0.5)
    weight = 25 if _has_p95(facts) else 30
    return Verdict(points=weight * latency_score(p50) / 100, reason=f"p50 {p50:.0f} ms", max_points=weight)


@rule(RUBRIC, "reliability", 15)
def latency_p95(facts: Facts) -> Verdict:
    """95th-percentile connect time on the latency curve (15%); left out when there is no p95 data."""
    if facts.fast.runs < MIN_FAST_PROBES or not _has_p95(facts):
        return unmeasured(f"p95 needs {MIN_P95_SAMPLES}+ successful probes")
    p95 = facts.fast.percentile(0.95)
    return Verdict(points=15 * latency_score(p95) / 100, reason=f"p95 {p95:.0f} ms")


# ---------------------------------------------------------------- Docs & Maintenance


def _metric(facts: Facts, name: str) -> dict[str, Any] | None:
    if facts.analysis is None or not facts.analysis.ok:
        return None
    return facts.analysis.metrics.get(name)


@rule(RUBRIC, "docs_maintenance", 30)
def documentation(facts: Facts) -> Verdict:
    """README, CHANGELOG, examples, CONTRIBUTING, LICENSE, docs/, SECURITY, CODE_OF_CONDUCT, namespace match, installable package."""
    metric = _metric(facts, "documentation_coverage")
    if metric is None:
        return unmeasured("no source analysis yet")
    missing = [k for k, present in metric["signals"].items() if not present]
    points, reason = _static(facts, 0.3 * metric["value"], f"documentation coverage {metric['value']}/100")
    return Verdict(points=points, reason=reason, evidence=facts.analysis_ref,
                   how_to_gain=("add: " + ", ".join(missing)) if missing else None)


@rule(RUBRIC, "docs_maintenance", 30)
def maintenance_pulse(facts: Facts) -> Verdict:
    """Vitality, release discipline and community health from repository history."""
    if _metric(facts, "maintenance_pulse") is None:
        return unmeasured("needs repository history (commits, releases, issues); a published package does not carry it")
    metric = _metric(facts, "maintenance_pulse") or {}
    points, reason = _static(facts, 0.3 * metric["value"], f"maintenance pulse {metric['value']}/100")
    return Verdict(points=points, reason=reason, evidence=facts.analysis_ref)


@rule(RUBRIC, "docs_maintenance", 15)
def dependency_health(facts: Facts) -> Verdict:
    """Dependency manifest +30, lock file +25, CI/CD +20, Renovate/Dependabot +25."""
    metric = _metric(facts, "dependency_health")
    if metric is None:
        return unmeasured("no source analysis yet")
    missing = [k for k, present in metric["signals"].items() if not present]
    points, reason = _static(facts, 0.15 * metric["value"], f"dependency health {metric['value']}/100 (seen in the {metric.get('scope', 'repository')})")
    return Verdict(points=points, reason=reason,
                   evidence=facts.analysis_ref, how_to_gain=("add: " + ", ".join(missing)) if missing else None)


@rule(RUBRIC, "docs_maintenance", 15)
def license_clarity(facts: Facts) -> Verdict:
    """Known SPDX license 100, identified non-standard 70, custom 40, none 0."""
    metric = _metric(facts, "license_clarity")
    if metric is None:
        return unmeasured("no source analysis yet")
    points, reason = _static(facts, 0.15 * metric["value"], f"license {metric.get('license') or 'none'} ({metric.get('kind')})")
    return Verdict(points=points, reason=reason, evidence=facts.analysis_ref,
                   how_to_gain=None if metric["value"] == 100 else "declare a standard SPDX license identifier and ship the LICENSE file")


@rule(RUBRIC, "docs_maintenance", 10)
def version_hygiene(facts: Facts) -> Verdict:
    """GitHub releases +30, semver tag ratio +35, release notes +15, pre-release use +10."""
    if _metric(facts, "version_hygiene") is None:
        return unmeasured("needs the repository's releases and tags")
    metric = _metric(facts, "version_hygiene") or {}
    points, reason = _static(facts, 0.1 * metric["value"], f"version hygiene {metric['value']}/100")
    return Verdict(points=points, reason=reason, evidence=facts.analysis_ref)


# ---------------------------------------------------------------- Security Hygiene


def _secrets(facts: Facts) -> list[str]:
    return [v.name for v in facts.server.env_vars if v.secret]


@rule(RUBRIC, "security_hygiene", 20)
def secret_env_vars(facts: Facts) -> Verdict:
    """How many secrets are required: 0 → 20, 1 → 16, 2 → 11, 3–4 → 6, 5+ → 0."""
    count = len(_secrets(facts))
    points = 20 if count == 0 else 16 if count == 1 else 11 if count == 2 else 6 if count <= 4 else 0
    return Verdict(points=points, reason=f"{count} secret environment variables required")


@rule(RUBRIC, "security_hygiene", 15)
def transport_risk(facts: Facts) -> Verdict:
    """STDIO-only (local) 15, SSE 9, remote (Streamable HTTP) 6."""
    points = {"stdio": 15, "sse": 9, "streamable-http": 6}[facts.server.transport]
    return Verdict(points=points, reason=f"transport {facts.server.transport}")


@rule(RUBRIC, "security_hygiene", 15)
def credential_sensitivity(facts: Facts) -> Verdict:
    """No credentials 15; API tokens only 10; database passwords or cloud keys 5."""
    secrets = _secrets(facts)
    if not secrets:
        return Verdict(points=15, reason="no credentials required")
    sensitive = [name for name in secrets if SENSITIVE_CREDENTIAL.search(name)]
    if sensitive:
        return Verdict(points=5, reason=f"sensitive credentials: {', '.join(sensitive)}")
    return Verdict(points=10, reason=f"API tokens: {', '.join(secrets)}")


@rule(RUBRIC, "security_hygiene", 15)
def distribution_clarity(facts: Facts) -> Verdict:
    """Published package + source repo 15, repo only 12, package only 8, neither 3."""
    package = facts.server.launch is not None
    repo = bool(facts.server.repository)
    points = 15 if package and repo else 12 if repo else 8 if package else 3
    return Verdict(points=points, reason=f"package {'yes' if package else 'no'}, source repository {'yes' if repo else 'no'}",
                   how_to_gain=None if points == 15 else "publish both a package and its source repository")


@rule(RUBRIC, "security_hygiene", 35)
def behavioral_security(facts: Facts) -> Verdict:
    """LLM-analysed source behaviour (injection, exfiltration, hardcoded credentials, dangerous ops, scope creep); neutral 50/100 without it."""
    return Verdict(points=17.5, reason="no behavioural source analysis yet: neutral 50/100")


# ---------------------------------------------------------------- Schema Interpretability


def blend(scores: list[float]) -> float:
    """Minimum-weighted blend: 3 models 50/30/20 lowest first; 2 models 60/40."""
    ordered = sorted(scores)
    if len(ordered) >= 3:
        return 0.5 * ordered[0] + 0.3 * ordered[1] + 0.2 * ordered[-1]
    return 0.6 * ordered[0] + 0.4 * ordered[-1]


@rule(RUBRIC, "schema_interpretability", 100)
def interpretability_consensus(facts: Facts) -> Verdict:
    """Three-judge consensus on clarity, input completeness, confidence; blended lowest-first; ×0.90 when models spread by more than 25."""
    counted = [j for j in facts.judgements if not j.offline]
    by_model: dict[str, list[float]] = {}
    for j in counted:
        by_model.setdefault(j.model, []).append((j.clarity + j.input_completeness + j.confidence) / 3)
    if len(by_model) < 2:
        offline = "; an offline heuristic judgement is shown but not counted" if facts.judgements else ""
        return unmeasured(f"needs 2+ LLM judges, has {len(by_model)}{offline}")
    model_scores = [sum(v) / len(v) for v in by_model.values()]
    value = blend(model_scores)
    spread = max(model_scores) - min(model_scores)
    if spread > 25:
        value *= 0.9
    return Verdict(points=value, reason=f"{len(by_model)} models, spread {spread:.0f}")


# ---------------------------------------------------------------- composite


def score(facts: Facts) -> ScoreCard:
    outcomes, dimensions = evaluate(facts, RUBRIC, DIMENSIONS)
    scored = [d for d in dimensions if d.status == "scored"]
    enhanced = any(d.name == "schema_interpretability" for d in scored)
    weights = {d.name: (d.weight_enhanced if enhanced else d.weight) for d in DIMENSIONS}
    total_weight = sum(weights[d.name] for d in scored)
    composite = uncapped = None
    if len(scored) >= 2 and total_weight > 0:
        for d in scored:
            d.weight = round(weights[d.name] / total_weight, 4)
        composite = uncapped = sum((d.score or 0) * weights[d.name] for d in scored) / total_weight
    flags = [FlagOutcome(name=f.name, label=f.label, severity=f.severity, reason=f.fn(facts) or "", cap=f.cap) for f in raised(facts)]
    caps = [f.cap for f in flags if f.cap is not None]
    if composite is not None and caps:
        composite = min(composite, min(caps))  # critical flags cap the composite; dimension scores stay visible
    return ScoreCard(
        server_id=facts.server.id,
        rubric=RUBRIC,
        composite=composite,
        grade=grade_for(composite) if composite is not None else None,
        visibility=visibility(dimensions, facts),
        dimensions=dimensions,
        rules=outcomes,
        flags=flags,
        badges=badges(facts),
        rules_version=RULES_VERSION,
        scored_at=facts.now,
        uncapped=round(uncapped, 1) if uncapped is not None and uncapped != composite else None,
    )


def evaluate(facts: Facts, rubric: str, dimension_list: list[Dimension]) -> tuple[list[RuleOutcome], list[DimensionScore]]:
    """Run a rubric's rules and fold them into dimension scores (0–100, or pending / not applicable).

    The rules of a dimension that does not apply are not run: the dimension's reason says why.
    """
    outcomes: list[RuleOutcome] = []
    # Per dimension: [points of measured rules, their maxima, bonus/penalty points, reasons of unmeasured rules]
    totals: dict[str, list] = {dim.name: [0.0, 0.0, 0.0, []] for dim in dimension_list}
    not_applicable = {dim.name: why for dim in dimension_list if (why := dim.applicable(facts))}
    for r in rules_for(rubric):
        if r.dimension in not_applicable:
            continue
        verdict = r.fn(facts)
        maximum = verdict.max_points or r.max_points
        total = totals[r.dimension]
        if not verdict.measured:
            total[3].append(verdict.reason)
        elif r.max_points > 0:
            total[0] += verdict.points
            total[1] += maximum
        else:
            total[2] += verdict.points
        outcomes.append(
            RuleOutcome(r.name, r.dimension, round(verdict.points, 2), maximum, verdict.measured, verdict.reason, verdict.how_to_gain, verdict.evidence)
        )
    dimensions: list[DimensionScore] = []
    for dim in dimension_list:
        why_not = not_applicable.get(dim.name)
        if why_not:
            dimensions.append(DimensionScore(dim.name, dim.label, "not_applicable", None, 0, why_not))
            continue
        points, maximum, adjustments, pending = totals[dim.name]
        if not maximum:
            dimensions.append(DimensionScore(dim.name, dim.label, "pending", None, 0, "; ".join(pending)[:300], dim.optional))
            continue
        value = max(0.0, min(100.0, 100 * points / maximum + adjustments))
        dimensions.append(DimensionScore(dim.name, dim.label, "scored", round(value, 1), 0, None, dim.optional))
    return outcomes, dimensions


def visibility(dimensions: list[DimensionScore], facts: Facts) -> str:
    """complete / verified / assessed / limited / unscored, from which dimensions are scored."""
    scored = {d.name for d in dimensions if d.status == "scored"}
    applicable = {d.name for d in dimensions if d.status != "not_applicable" and d.name in STANDARD}
    if len(scored) < 2:
        return "unscored"
    if not applicable <= scored:
        return "limited"
    if "schema_interpretability" in scored:
        return "complete"
    if facts.probe is not None and facts.probe.reachable:
        return "verified"
    return "assessed"


BADGE_GROUPS = {
    "Schema": ["README", "Changelog", "Examples", "Contributing Guide", "SECURITY.md", "Namespace Match", "Installable"],
    "Protocol": ["Reachable", "Schema Valid", "Tool Count", "Error Handling Quality", "Auth Discovery"],
    "Reliability": ["99%+ Uptime", "95%+ Uptime", "Degraded", "Fast (<200ms)", "Slow (>500ms)", "Local Only"],
    "Maintenance": ["Active Development", "Stale", "Abandoned", "Regular Releases", "CI/CD", "Lock File", "Semver"],
    "Security": ["No Secrets Required", "Few Secrets", "Many Secrets", "STDIO Only", "Published Package"],
}


def badges(facts: Facts) -> list[str]:
    """Seed 000's badges, in group order; each only where its evidence exists."""
    found: set[str] = set()
    documentation = _metric(facts, "documentation_coverage")
    if documentation:
        signals = documentation["signals"]
        for signal, label in (("readme", "README"), ("changelog", "Changelog"), ("examples", "Examples"), ("contributing", "Contributing Guide"),
                              ("security", "SECURITY.md"), ("namespace_match", "Namespace Match"), ("installable", "Installable")):
            if signals.get(signal):
                found.add(label)
    probe = facts.probe
    if probe and probe.reachable:
        found.add("Reachable")
        validity = facts.check("schema_validity")
        if validity and validity.passed:
            found.add("Schema Valid")
        if facts.tools:
            found.add("Tool Count")
        errors = [c for c in probe.checks if c.name.startswith("error_") and c.passed is not None]
        if errors and all(c.passed for c in errors):
            found.add("Error Handling Quality")
    if probe and probe.http and probe.http.auth_required and probe.http.protected_resource_metadata:
        found.add("Auth Discovery")
    if facts.server.is_local:
        found.add("Local Only")
    elif facts.fast.runs >= MIN_FAST_PROBES:
        uptime_share = facts.fast.ok / facts.fast.runs
        found.add("99%+ Uptime" if uptime_share >= 0.99 else "95%+ Uptime" if uptime_share >= 0.95 else "Degraded")
        if facts.fast.samples:
            p50 = facts.fast.percentile(0.5)
            if p50 < 200:
                found.add("Fast (<200ms)")
            elif p50 > 500:
                found.add("Slow (>500ms)")
    repository = (facts.analysis.metrics.get("repository") or {}) if facts.analysis and facts.analysis.ok else {}
    if repository.get("pushed_at"):
        from pipeline.store import parse_iso

        age = (facts.now - parse_iso(repository["pushed_at"])).days
        found.add("Active Development" if age <= 30 else "Abandoned" if age > 730 else "Stale" if age > 365 else "")
    if repository.get("releases_last_year", 0) >= 4:
        found.add("Regular Releases")
    dependency = _metric(facts, "dependency_health")
    if dependency:
        if dependency["signals"].get("ci"):
            found.add("CI/CD")
        if dependency["signals"].get("lock_file"):
            found.add("Lock File")
    if (_metric(facts, "version_hygiene") or {}).get("semver"):
        found.add("Semver")
    secrets = len(_secrets(facts))
    found.add("No Secrets Required" if secrets == 0 else "Few Secrets" if secrets <= 2 else "Many Secrets")
    if facts.server.transport == "stdio":
        found.add("STDIO Only")
    if facts.server.launch is not None:
        found.add("Published Package")
    return [label for group in BADGE_GROUPS.values() for label in group if label in found]
