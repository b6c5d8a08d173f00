"""Seed 000's readings of the evidence, shared by its rules, badges and flags."""

from __future__ import annotations

import re
from typing import Any

from pipeline.credentials import credential_kind
from pipeline.models import EnvVar
from pipeline.outcomes import Reading, reading
from pipeline.score.facts import Facts

MIN_FAST_PROBES = 10  # seed 000: no reliability score under 10 probes
MIN_P95_SAMPLES = 20  # ours: a p95 from fewer successful probes is not a p95
# Descriptions project generators leave behind. Matched whole (case and trailing punctuation
# ignored), so a real description that merely starts "MCP server for …" is never penalised.
TEMPLATE_DESCRIPTIONS = re.compile(
    r"^(an? )?(simple |new |basic )?(model context protocol|mcp) server( for(\s*(\.\.\.|…))?)?$"
    r"|^(an? )?(simple |new |basic )?(model context protocol|mcp) server (for|to) \w+$"
    r"|^add your description here$|^todo\b.*|^description$|^my mcp server$",
    re.I,
)


def is_template_description(description: str | None) -> bool:
    return bool(description) and bool(TEMPLATE_DESCRIPTIONS.match(description.strip().rstrip(".!").strip()))


def metric(facts: Facts, name: str) -> dict[str, Any] | None:
    """One static-analysis metric, when the analysis succeeded."""
    if facts.analysis is None or not facts.analysis.ok:
        return None
    return facts.analysis.metrics.get(name)


def repository(facts: Facts) -> dict:
    """What the repository host said of the repository (status, archived, pushed_at, releases), also when the
    analysis failed for it (a 404 is the host's answer, and the Dead Repository flag's evidence)."""
    if facts.analysis is None or facts.analysis.repository is None or facts.analysis.repository.host != "github":
        return {}
    return facts.analysis.repository.model_dump(mode="json")


def env_vars(facts: Facts) -> tuple[list[EnvVar], str]:
    """The variables the server requires and where that comes from: the catalog's list, else the ones its source reads
    without a default or its README's client configuration sets ("source analysis"); "catalog" with none when neither says."""
    if facts.server.env_vars:
        return facts.server.env_vars, "catalog"
    found = (metric(facts, "env_vars") or []) if facts.analysis is not None else []
    parsed = [EnvVar.model_validate(v) for v in found if isinstance(v, dict) and isinstance(v.get("name"), str)]
    return (parsed, "source analysis") if parsed else ([], "catalog")


def secrets_known(facts: Facts) -> str | None:
    """Where we know which secrets the server needs from, or None when nothing says (the catalog's empty list is no
    evidence: most sources list no variables at all). A source that lists its variables; the embedded catalog, which
    names every variable its servers need; a source analysis, which reads the variables the code requires; a probe that
    reached the server with no credential of ours (a start with no mock credential, an endpoint that asked for none)."""
    if facts.server.env_vars:
        return "catalog"
    if "local" in facts.server.sources:
        return "embedded catalog"
    if metric(facts, "env_vars") is not None:
        return "source analysis"
    probe = facts.probe
    if probe is not None and probe.reachable and not any(credential_kind(name) for name in probe.mocked_env or []):
        return "probe"
    return None


def transport_known(facts: Facts) -> str | None:
    """Where the catalog's transport comes from, or None when it is only the default (stdio for a server no source gives an
    endpoint or a launch): a remote endpoint a source lists, a known launch, or a probe that reached it over that transport."""
    server, probe = facts.server, facts.probe
    if server.remote_url:
        return "remote endpoint"
    if server.launch is not None:
        return "launch"
    if probe is not None and probe.transport == server.transport and reading(probe.kind, probe.outcome.value) in (Reading.answered, Reading.gated):
        return "probe"
    return None


def secret_names(facts: Facts) -> list[str]:
    """Required variables that hold a secret: marked so by their source, or named like a credential (DATABASE_URL, *_TOKEN)."""
    return [v.name for v in env_vars(facts)[0] if v.secret or credential_kind(v.name)]


def has_package(facts: Facts) -> bool:
    """Published to a registry: a launch spec from a package, or a package discovery found (npm, PyPI, OCI, ...)."""
    return facts.server.launch is not None or bool(facts.server.packages)


def has_p95(facts: Facts) -> bool:
    return facts.fast.samples >= MIN_P95_SAMPLES
