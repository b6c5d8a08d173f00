"""Seed 000's fifteen red flags: severity, condition, and the five score caps.

Each flag is a pure function of Facts returning why it fires, or None. A flag whose evidence is
missing does not fire: an unanalysed repository is "not measured", not "dead".
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Callable

from pipeline.credentials import credential_kind, is_configuration
from pipeline.drift import drift_between, extraction_complete
from pipeline.judging import AMBIGUITY_SPREAD, corroborated_directives, judge_spread
from pipeline.score.engine import Flag
from pipeline.score.facts import Facts
from pipeline.score.markers import critical_injection
from pipeline.score.scoreboard_visibility import NO_SOURCE_CAP, no_source
from pipeline.score.signals import env_vars, is_template_description, repository

FLAGS: list[Flag] = []


def flag(name: str, label: str, severity: str, condition: str, cap: float | None = None):
    def register(fn: Callable[[Facts], str | None]) -> Callable[[Facts], str | None]:
        FLAGS.append(Flag(name, label, severity, cap, condition, fn))
        return fn

    return register


STAGING_URL = re.compile(r"://(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[::1\])[:/]"
                         r"|staging|\bstg[.-]|[.-]dev\.|://dev\.|\.local[:/]|ngrok|\.test[:/]", re.I)


def sensitive_env_vars(facts: Facts) -> list[str]:
    return [v.name for v in env_vars(facts)[0] if v.secret or credential_kind(v.name)]


def config_demand(facts: Facts) -> list[str]:
    """Every required variable but plain configuration (PORT, HOST, LOG_LEVEL, *_DIR, a service's *_URL); a database
    URL or connection string is a credential, never filtered out."""
    return [v.name for v in env_vars(facts)[0] if not is_configuration(v.name)]


@flag("dead_repository", "Dead Repository", "critical", "GitHub repo returns 404 or has been deleted", cap=0)
def dead_repository(facts: Facts) -> str | None:
    return "the repository returned 404" if repository(facts).get("status") == "not_found" else None


@flag("archived_repository", "Archived Repository", "critical", "Repo is archived and no longer maintained", cap=40)
def archived_repository(facts: Facts) -> str | None:
    return "the repository is archived" if repository(facts).get("archived") else None


@flag("no_source_code", "No Source Code", "warning",
      "No repository URL or source link found (a published package is a source link; a source with no code in it is none), "
      "capped at the mid-range (deviation 57)", cap=NO_SOURCE_CAP)
def no_source_code(facts: Facts) -> str | None:
    return no_source(facts)


@flag("sensitive_credentials", "Sensitive Credentials", "warning", "3+ sensitive environment variables required")
def sensitive_credentials(facts: Facts) -> str | None:
    names = sensitive_env_vars(facts)
    return f"{len(names)} sensitive variables: {', '.join(names)}" if len(names) >= 3 else None


@flag("high_config_demand", "High Config Demand", "warning",
      "5+ potentially-sensitive environment variables (PORT, HOST, LOG_LEVEL and similar filtered out)")
def high_config_demand(facts: Facts) -> str | None:
    names = config_demand(facts)
    return f"{len(names)} configuration variables: {', '.join(names)}" if len(names) >= 5 else None


@flag("stale_project", "Stale Project", "warning", "No commits in over 12 months")
def stale_project(facts: Facts) -> str | None:
    pushed = repository(facts).get("pushed_at")
    if not pushed:
        return None
    from pipeline.store import parse_iso

    age = facts.now - parse_iso(pushed)
    return f"last commit {age.days} days ago" if age > timedelta(days=365) else None


@flag("staging_endpoint", "Staging Endpoint", "warning", "Remote URL contains localhost or staging patterns", cap=55)
def staging_endpoint(facts: Facts) -> str | None:
    url = facts.server.remote_url or ""
    return f"remote URL {url[:120]} looks like a staging or local endpoint" if url and STAGING_URL.search(url) else None


@flag("template_description", "Template Description", "warning", "Description is a default placeholder (−15 to Schema Quality)")
def template_description_flag(facts: Facts) -> str | None:
    return "the description is a placeholder" if is_template_description(facts.description) else None


@flag("duplicate_description", "Duplicate Description", "warning", "Same description shared by 3+ servers")
def duplicate_description(facts: Facts) -> str | None:
    return "the same description is used by 3 or more servers" if facts.duplicate_description else None


@flag("schema_drift", "Schema Drift", "warning", "Source code and runtime probe expose different sets of tools")
def schema_drift(facts: Facts) -> str | None:
    drift = tool_drift(facts)
    if drift is None or not (drift["missing_at_runtime"] or drift["extra_at_runtime"]):
        return None
    missing = f"missing at runtime: {', '.join(drift['missing_at_runtime']) or '–'}"
    if not drift["complete"]:
        return f"{missing} (the source was read in part: tools listed only at runtime are not counted)"
    return f"{missing}; extra at runtime: {', '.join(drift['extra_at_runtime']) or '–'}"


@flag("ambiguous_schemas", "Ambiguous Schemas", "warning", "2+ tools where AI models disagree significantly (spread > 25)")
def ambiguous_schemas(facts: Facts) -> str | None:
    tools = ambiguous_tools(facts)
    return f"{len(tools)} ambiguous tools: {', '.join(tools)}" if len(tools) >= 2 else None


@flag("outdated_spec", "Outdated Spec", "warning", "Server implements the original MCP spec version (2024-11-05)")
def outdated_spec(facts: Facts) -> str | None:
    negotiated = facts.probe.protocol_version if facts.probe and facts.probe.reachable else None
    static = facts.analysis.spec_version if facts.analysis else None
    version = negotiated or static
    return "implements the 2024-11-05 spec" if version == "2024-11-05" else None


@flag("stale_analysis", "Stale Analysis", "warning", "Static analysis data is over 60 days old")
def stale_analysis(facts: Facts) -> str | None:
    age = facts.analysis_age_days
    return f"static analysis is {age:.0f} days old" if age is not None and age > 60 else None


@flag("prompt_injection", "Prompt Injection", "critical", "Tool descriptions contain patterns consistent with prompt injection", cap=30)
def prompt_injection(facts: Facts) -> str | None:
    """Critical markers only (a strong one, or two that corroborate each other) in the runtime tool list, or, with no
    runtime list, in the tools extracted from source; or a tool text that 2+ LLM judges, most of those that read it,
    report as instructing the model reading it (deviation 119)."""
    found = [f"{where}: {', '.join(markers)}" for where, markers in critical_injection(facts)]
    found += [f"{tool}: judged directive by {', '.join(models)}" for tool, models in corroborated_directives(facts.current_judgements).items()]
    return "; ".join(found)[:300] if found else None


@flag("exfiltration_risk", "Exfiltration Risk", "critical", "Source code analysis detected patterns that could exfiltrate user data", cap=25)
def exfiltration_risk(facts: Facts) -> str | None:
    """The behavioural scan's corroborated exfiltration only (a credential read reaching a send); review hits never fire it."""
    behavioral = (facts.analysis.metrics.get("behavioral") or {}) if facts.analysis and facts.analysis.ok else {}
    return behavioral.get("exfiltration") or None


def tool_drift(facts: Facts) -> dict[str, list[str]] | None:
    if facts.analysis is None or not facts.analysis.ok:
        return None
    metrics = facts.analysis.metrics
    return drift_between(metrics.get("extracted_tools"), facts.tools, extraction_complete(metrics))


def ambiguous_tools(facts: Facts) -> list[str]:
    """Tools whose current text was judged by 2+ real models with any dimension spread by more than 25 points."""
    by_tool: dict[str, list] = {}
    for j in facts.current_judgements:
        by_tool.setdefault(j.tool_name, []).append(j)
    return [tool for tool, judged in sorted(by_tool.items()) if (judge_spread(judged) or 0) > AMBIGUITY_SPREAD]
