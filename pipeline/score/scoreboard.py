"""The `scoreboard` rubric (seed 000, the headline score): dimensions, rules and the composite.

Each dimension scores 0–100: the measured rules' points over their maxima, then bonuses and
penalties (rules with max 0), clamped. The composite renormalises the category weights over
the dimensions that are scored.
"""

from __future__ import annotations

from pipeline.models import DimensionScore, RubricInfo
from pipeline.outcomes import Reading
from pipeline.score.badges import badges
from pipeline.score.engine import Decay, Depends, Dimension, Outcome, Rubric, RuleSet, percent, ratio, share, unmeasured, weighted_composite
from pipeline.score.facts import Facts
from pipeline.score.flags import FLAGS
from pipeline.score.inferred import found_and_missing, inferred, label, places
from pipeline.score.scoreboard_interpretability import INTERPRETABILITY_RULES
from pipeline.score.scoreboard_security import SECURITY_RULES
from pipeline.score.scoreboard_visibility import from_assessed, monitored_remote, visibility, with_protocol_data
from pipeline.score.signals import MIN_FAST_PROBES, MIN_P95_SAMPLES, has_p95, is_template_description, metric
from pipeline.score.tools import ToolView, tool_views
from pipeline.visibility import HEADLINE_RUBRIC

RUBRIC = HEADLINE_RUBRIC
RULES_VERSION = "scoreboard/0.1"
FUZZ_POINTS = {"proper_error": 100, "accepted": 50, "crash": 0, "timeout": 0}
RULES = RuleSet()  # the first four dimensions; Security Hygiene and Schema Interpretability have modules of their own
rule = RULES.rule


DIMENSIONS = (
    Dimension("schema_quality", "Schema Quality", 25, 20),
    Dimension("protocol_compliance", "Protocol Compliance", 20, 18, with_protocol_data,
              applies_to="servers with probe data or protocol signals inferred from source"),
    Dimension("reliability", "Reliability", 20, 18, monitored_remote, applies_to="remote servers with monitoring history (10+ probes in 7 days)"),
    Dimension("docs_maintenance", "Docs & Maintenance", 15, 12),
    Dimension("security_hygiene", "Security Hygiene", 20, 17),
    Dimension("schema_interpretability", "Schema Interpretability", 0, 15, optional=True, after=from_assessed,
              applies_to="servers at Assessed visibility or above"),
)
GRADES = ((95, "A+"), (85, "A"), (70, "B"), (55, "C"), (40, "D"), (0, "F"))
# Stale-data decay of static-analysis points: 1.0 / 0.97 / 0.90 / 0.75 / 0.55 up to 7/14/30/60/90 days, then 0.40.
DECAY = Decay(((7, 1.0), (14, 0.97), (30, 0.90), (60, 0.75), (90, 0.55)), floor=0.40)


def _decay(facts: Facts, reason: str) -> tuple[float, str]:
    """The decay factor for points that come from static analysis, and the reason saying so."""
    factor = DECAY.factor(facts.analysis_age_days)
    if factor < 1:
        return factor, f"{reason}; ×{factor:.2f} for analysis {facts.analysis_age_days:.0f} days old"
    return factor, reason


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


@rule("schema_quality", 60)
def schema_completeness(facts: Facts) -> Outcome:
    """Do tools have typed, described parameters? Runtime tools/list: base 40 + up to 60 for
    descriptions, object schemas, typed and described properties, declared required lists."""
    static = (facts.analysis.metrics.get("schema_completeness") or {}) if facts.analysis and facts.analysis.ok else {}
    if facts.tools is None and not static:
        return unmeasured("no runtime tool list and no tools found in source yet",
                          "make the server reachable by the probe so its tools can be listed")
    views = tool_views(facts)
    runtime = runtime_completeness(views) if views is not None else None
    static_value = static.get("value")
    if static_value is not None:
        factor, static_reason = _decay(facts, f"from source: {float(static_value):.0f}/100")
        static_value = float(static_value) * factor
    # Runtime override, compared after decay: static analysis never lowers a value the runtime tools support.
    if runtime is not None and (static_value is None or runtime[0] >= static_value):
        value, reason, evidence = runtime[0], f"runtime: {runtime[1]}", facts.probe_ref
    else:
        value, reason, evidence = static_value, static_reason, facts.analysis_ref
    return percent(value, reason, evidence=evidence,
                   how_to_gain=None if value >= 99.5 else "describe every tool and parameter, give each parameter a type, list required parameters")


@rule("schema_quality", 40)
def description_quality(facts: Facts) -> Outcome:
    """Is the description clear and the README useful? Length, action words, headings, code examples, usage section."""
    if facts.analysis is None or not facts.analysis.ok:
        return unmeasured("no source analysis yet", "publish the source so it can be analysed")
    quality = facts.analysis.metrics.get("description_quality") or {}
    value = float(quality.get("value", 0))
    factor, reason = _decay(facts, f"description and README score {value:.0f}/100")
    return percent(value, reason, factor=factor, evidence=facts.analysis_ref,
                   how_to_gain=None if value >= 100 else
                   "write a one-line description that says what the server does, and a README with usage and code examples")


@rule("schema_quality", bonus=-15)
def template_description(facts: Facts) -> Outcome:
    """Penalty −15 for a generic placeholder description ("A Model Context Protocol server", "MCP server for…", "TODO")."""
    description = facts.description
    if not description:
        return share(0, "no description to judge")
    if is_template_description(description):
        return share(1, f"placeholder description: {description[:80]!r}", how_to_gain="replace the placeholder description with what the server does")
    return share(0, "description is not a placeholder")


# ---------------------------------------------------------------- Protocol Compliance


@rule("protocol_compliance", 20)
def reachability(facts: Facts) -> Outcome:
    """Did the server complete the MCP handshake (initialize or server/discover)? An answer behind an authentication gate
    (401/403) is a reachable server: full marks, the protocol behind the gate not measured. A 429, an opt-out, our own
    policy's refusal and what our sandbox may have caused are not measured; a remote server's failure to answer counts
    only once it stands (3 failed attempts over at least 24 hours), and is "unreachable from here" until then."""
    probe = facts.probe
    if probe is None:
        return unmeasured("not probed yet")
    if (why := facts.not_measured) is not None:
        return unmeasured(why, facts.not_measured_gain)
    if facts.reading is Reading.answered:
        return share(1, f"handshake completed ({probe.handshake}, {probe.protocol_version})", evidence=facts.probe_ref)
    if facts.reading is Reading.gated:
        return share(1, "reachable: it answered behind an authentication gate; the protocol behind the gate is not measured",
                     evidence=facts.probe_ref)
    if (why := facts.unconfirmed_failure) is not None:
        return unmeasured(why)
    failed = f"{facts.failures.failed} attempts over {facts.failures.span.total_seconds() / 3600:.0f} h; " if not facts.server.is_local else ""
    return share(0, f"probe outcome {probe.outcome.value}: {failed}{(probe.detail or '')[:160]}", evidence=facts.probe_ref,
                 how_to_gain="make the server start and answer the handshake")


def reach_status(facts: Facts, composite: float | None) -> dict:
    """What the board's probe column says of a remote server whose failures to answer do not stand yet."""
    return {"reach": facts.failures.wording} if facts.never_reached or facts.unconfirmed_failure and facts.failures.failed else {}


@rule("protocol_compliance", 20)
def schema_validity(facts: Facts) -> Outcome:
    """Share of listed tools whose inputSchema (and outputSchema) are valid object JSON Schemas; without live probe data,
    the share of the tools extracted from source (inferred, decayed with the analysis)."""
    tools = facts.tools
    if tools is None and (signal := inferred(facts, "schema_validity")) is not None:
        factor, reason = _decay(facts, f"{label(signal)}: {signal['valid']}/{signal['total']} extracted tools have valid object schemas")
        invalid = "; ".join(signal.get("invalid") or [])
        return percent(signal["value"], reason, factor=factor, evidence=facts.analysis_ref,
                       how_to_gain=f"fix: {invalid[:200]}" if invalid else None)
    if tools is None:
        return unmeasured("no runtime tool list yet")
    if not tools:
        return unmeasured("no tools to validate")
    check = facts.check("schema_validity")
    invalid = _invalid_schemas(check.outcome, check.detail) if check and not check.passed else 0
    valid = (len(tools) - invalid) / len(tools)
    return share(valid, f"{len(tools) - invalid}/{len(tools)} tools have valid schemas", evidence=facts.probe_ref,
                 how_to_gain=None if valid == 1 else f"fix: {(check.detail if check else '')[:200]}")


def _invalid_schemas(outcome: str, detail: str | None) -> int:
    """How many tools the probe found with invalid schemas: its outcome counts them ("3 of 1000 invalid"); evidence
    stored before it did names one tool per "; "-separated part of a detail that may have been cut short."""
    count = outcome.split(" of ", 1)[0]
    return int(count) if count.isdigit() else len([part for part in (detail or "").split("; ") if part])


@rule("protocol_compliance", 20)
def error_handling(facts: Facts) -> Outcome:
    """Bad calls (unknown tool, missing required parameter, wrong parameter type) get a proper error
    (JSON-RPC error or isError result), not a crash or silence; without live probe data, the error handling
    inferred from source (exception handling, MCP error results, timeouts, graceful degradation)."""
    checks = [c for c in (facts.probe.checks if facts.probe else []) if c.name.startswith("error_") and c.passed is not None]
    if not checks and (signal := inferred(facts, "error_handling")) is not None:
        return _inferred_percent(facts, signal, "error handling", "handle errors in tool handlers: ")
    if not checks:
        return unmeasured("error handling not tested yet")
    passed = [c for c in checks if c.passed]
    passed_share = len(passed) / len(checks)
    summary = ", ".join(f"{c.name.removeprefix('error_')}: {c.outcome}" for c in checks)
    failed = [c.name.removeprefix("error_").replace("_", " ") for c in checks if not c.passed]
    return share(passed_share, summary, evidence=facts.probe_ref,
                 how_to_gain=None if not failed else f"answer these bad calls with a JSON-RPC error or an isError result: {', '.join(failed)}")


@rule("protocol_compliance", 20)
def fuzz_resilience(facts: Facts) -> Outcome:
    """Adversarial inputs (oversized, empty, Unicode edge cases, nulls, boundaries): proper_error 100, accepted 50, crash or timeout 0;
    without live probe data, the input validation inferred from source (schema validation, type checks, bounds, nulls, injection)."""
    cases = facts.probe.fuzz if facts.probe and facts.probe.reachable else None
    if cases is None and (signal := inferred(facts, "fuzz")) is not None:
        return _inferred_percent(facts, signal, "input validation", "validate tool inputs: ")
    if cases is None:
        return unmeasured("no fuzz cases run yet")
    if not cases:
        return unmeasured("no tool was safe to fuzz")
    value = sum(FUZZ_POINTS[c.outcome] for c in cases) / len(cases)
    crashes = [f"{c.tool}/{c.case}" for c in cases if c.outcome in ("crash", "timeout")]
    return percent(value, f"{len(cases)} fuzz cases, {len(crashes)} crashes or timeouts", evidence=facts.probe_ref,
                   how_to_gain=("validate inputs and return errors for: " + ", ".join(crashes[:5])) if crashes else None)


@rule("protocol_compliance", 20)
def invocation_smoke_test(facts: Facts) -> Outcome:
    """Share of safe (read-only) tools that answer schema-valid arguments within 10 s: a result, or, to arguments we made up
    where the schema gives no example or default, a domain error (the tool rightly refused input it cannot serve:
    deviation 65). A crash, a timeout, a protocol error, or an error to the arguments the schema itself gives, fails."""
    calls = facts.probe.invocations if facts.probe and facts.probe.reachable else None
    if calls is None:
        return unmeasured("no invocation smoke test run yet")
    if not calls:
        return unmeasured("no tool was safe to call (read-only by annotation and by name)")
    answered = [c for c in calls if c.answered]
    rejected = [c.tool for c in calls if c.outcome == "rejected_input"]
    reason = f"{len(answered)}/{len(calls)} safe tools answered"
    if rejected:
        reason += (f"; {len(rejected)} rightly refused arguments we made up ({', '.join(rejected[:5])}): "
                   "examples in their input schemas would let a caller build a valid call")
    return ratio(len(answered), len(calls), reason, evidence=facts.probe_ref, how_to_gain=_invocation_advice([c for c in calls if not c.answered]))


def _invocation_advice(failed: list) -> str | None:
    """What to change for the calls that failed; never to accept input a tool cannot serve."""
    erred = [c for c in failed if c.outcome in ("is_error", "jsonrpc_error") and c.arguments != "made_up"]
    given = [c.tool for c in erred if c.arguments == "schema"]
    unknown = [c.tool for c in erred if c.arguments is None]  # recorded before the probe kept where its arguments came from
    broken = [c.tool for c in failed if c.tool not in given + unknown]
    advice = []
    if given:
        advice.append("these tools answered the values their own input schema offers (examples, defaults, enum values) with an error: "
                      "offer values a call can use: " + ", ".join(given[:5]))
    if unknown:
        advice.append("these tools answered our call with an error: examples in their input schemas would let a caller build a valid call: "
                      + ", ".join(unknown[:5]))
    if broken:
        advice.append("answer every call, also one it cannot serve, with a result or an isError result, not a crash, a timeout or a protocol "
                      "error; an example for each parameter lets a caller build a valid call: " + ", ".join(broken[:5]))
    return "; ".join(advice) or None


@rule("protocol_compliance", bonus=10)
def auth_discovery_bonus(facts: Facts) -> Outcome:
    """+10 (capped at 100) when an auth-gated server implements OAuth protected-resource discovery (RFC 9728). No penalty without.
    Without live probe data, as inferred from source (protected-resource metadata, or bearer checks without it)."""
    http = facts.probe.http if facts.probe else None
    if http is None and (signal := inferred(facts, "auth_discovery")) is not None and signal.get("value") is not None:
        factor, reason = _decay(facts, f"{label(signal)}: " + ("protected-resource metadata" if signal["value"] else
                                                       "checks credentials without protected-resource metadata") + f" ({places(signal)})")
        return percent(100 if signal["value"] else 0, reason, factor=factor, evidence=facts.analysis_ref,
                       how_to_gain=None if signal["value"] else "publish /.well-known/oauth-protected-resource (RFC 9728) for +10")
    if http is None or not http.auth_required:
        return share(0, "no authentication required: no bonus, no penalty")
    if http.protected_resource_metadata:
        return share(1, "auth-gated with RFC 9728 protected-resource metadata", evidence=facts.probe_ref)
    return share(0, "auth-gated without protected-resource metadata", evidence=facts.probe_ref,
                 how_to_gain="publish /.well-known/oauth-protected-resource (RFC 9728) for +10")


def _inferred_percent(facts: Facts, signal: dict, what: str, advice: str) -> Outcome:
    found, missing = found_and_missing(signal)
    factor, reason = _decay(facts, f"{label(signal)}: {what} {signal['value']}/100 ({', '.join(found) or 'no pattern found'}; {places(signal)})")
    return percent(signal["value"], reason, factor=factor, evidence=facts.analysis_ref,
                   how_to_gain=(advice + ", ".join(missing)) if missing else None)


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


def without_p95(with_p95: float, without: float) -> Depends:
    """Seed 000: without p95 data its weight moves to uptime and p50."""
    return Depends(with_p95, lambda facts: with_p95 if has_p95(facts) else without)


@rule("reliability", without_p95(60, 70))
def uptime(facts: Facts) -> Outcome:
    """7-day uptime: share of successful fast probes (60%, or 70% without p95). Needs 10+ probes."""
    total = facts.fast.runs
    if total < MIN_FAST_PROBES:
        return unmeasured(f"{total} fast probes in 7 days; {MIN_FAST_PROBES} needed")
    succeeded = facts.fast.ok / total
    return share(succeeded, f"{100 * succeeded:.1f}% of {total} probes succeeded")


@rule("reliability", without_p95(25, 30))
def latency_p50(facts: Facts) -> Outcome:
    """Median connect time of successful probes on the latency curve (25%, or 30% without p95); from 5%-wide histogram buckets."""
    if facts.fast.runs < MIN_FAST_PROBES or not facts.fast.samples:
        return unmeasured("not enough successful fast probes")
    p50 = facts.fast.percentile(0.5)
    return ratio(latency_score(p50), 100, f"p50 {p50:.0f} ms")


@rule("reliability", 15)
def latency_p95(facts: Facts) -> Outcome:
    """95th-percentile connect time on the latency curve (15%); left out when there is no p95 data."""
    if facts.fast.runs < MIN_FAST_PROBES or not has_p95(facts):
        return unmeasured(f"p95 needs {MIN_P95_SAMPLES}+ successful probes")
    p95 = facts.fast.percentile(0.95)
    return ratio(latency_score(p95), 100, f"p95 {p95:.0f} ms")


# ---------------------------------------------------------------- Docs & Maintenance


@rule("docs_maintenance", 30)
def documentation(facts: Facts) -> Outcome:
    """README, CHANGELOG, examples, CONTRIBUTING, LICENSE, docs/, SECURITY, CODE_OF_CONDUCT, namespace match, installable package."""
    documented = metric(facts, "documentation_coverage")
    if documented is None:
        return unmeasured("no source analysis yet")
    missing = [k for k, present in documented["signals"].items() if not present]
    factor, reason = _decay(facts, f"documentation coverage {documented['value']}/100")
    return percent(documented["value"], reason, factor=factor, evidence=facts.analysis_ref,
                   how_to_gain=("add: " + ", ".join(missing)) if missing else None)


@rule("docs_maintenance", 30)
def maintenance_pulse(facts: Facts) -> Outcome:
    """Vitality, release discipline and community health from repository history."""
    if metric(facts, "maintenance_pulse") is None:
        return unmeasured("needs the history of its repository (pushes, commits, releases, stars) or of its published package "
                          "(versions and their dates); none could be read")
    pulse = metric(facts, "maintenance_pulse") or {}
    factor, reason = _decay(facts, f"maintenance pulse {pulse['value']:.0f}/100")
    return percent(pulse["value"], reason, factor=factor, evidence=facts.analysis_ref)


@rule("docs_maintenance", 15)
def dependency_health(facts: Facts) -> Outcome:
    """Dependency manifest +30, lock file +25, CI/CD +20, Renovate/Dependabot +25."""
    health = metric(facts, "dependency_health")
    if health is None:
        return unmeasured("no source analysis yet")
    missing = [k for k, present in health["signals"].items() if not present]
    factor, reason = _decay(facts, f"dependency health {health['value']}/100 (seen in the {health.get('scope', 'repository')})")
    return percent(health["value"], reason, factor=factor,
                   evidence=facts.analysis_ref, how_to_gain=("add: " + ", ".join(missing)) if missing else None)


@rule("docs_maintenance", 15)
def license_clarity(facts: Facts) -> Outcome:
    """Known SPDX license 100, identified non-standard 70, custom 40, none 0."""
    license_ = metric(facts, "license_clarity")
    if license_ is None:
        return unmeasured("no source analysis yet")
    factor, reason = _decay(facts, f"license {license_.get('license') or 'none'} ({license_.get('kind')})")
    return percent(license_["value"], reason, factor=factor, evidence=facts.analysis_ref,
                   how_to_gain=None if license_["value"] == 100 else "declare a standard SPDX license identifier and ship the LICENSE file")


@rule("docs_maintenance", 10)
def version_hygiene(facts: Facts) -> Outcome:
    """GitHub releases +30, semver tag ratio +35, release notes +15, pre-release use +10."""
    if metric(facts, "version_hygiene") is None:
        return unmeasured("needs the releases and tags of its repository, or its package's published versions")
    hygiene = metric(facts, "version_hygiene") or {}
    factor, reason = _decay(facts, f"version hygiene {hygiene['value']:.0f}/100")
    return percent(hygiene["value"], reason, factor=factor, evidence=facts.analysis_ref)


# ---------------------------------------------------------------- composite


def composite(facts: Facts, dimensions: list[DimensionScore]) -> float | None:
    """The category weights renormalised over the scored dimensions (two at least); the enhanced weights once
    schema interpretability is scored."""
    enhanced = any(d.name == "schema_interpretability" and d.status == "scored" for d in dimensions)
    weights = {d.name: (d.weight_enhanced if enhanced else d.weight) for d in DIMENSIONS}
    return weighted_composite(dimensions, weights, minimum=2)


SCOREBOARD = Rubric(
    info=RubricInfo(RUBRIC, "Scoreboard (headline)", "MCP server leaderboard",
                    "Ordered by visibility tier (how much we could measure), then by composite score.", RULES_VERSION, headline=True),
    dimensions=DIMENSIONS,
    rules=(*RULES.rules, *SECURITY_RULES.rules, *INTERPRETABILITY_RULES.rules),  # in the order of DIMENSIONS
    composite=composite,
    visibility=visibility,
    grades=GRADES,
    flags=tuple(FLAGS),
    badges=badges,
    extra=reach_status,
    decay=DECAY,
    tables=("dimensions", "rules", "grades", "flags", "decay"),
)
