"""Seed 000's badges: each earned only where its evidence exists, shown in group order.

Local Only and STDIO Only need a known launch or a probe that reached the server (stdio is only the catalog's default
for a server no source gives an endpoint); the secrets badges need a source that lists the variables, a source analysis
or a probe that reached the server without credentials (signals.secrets_known); Reachable includes an answer behind an
authentication gate; Schema Valid needs tools to validate.
"""

from __future__ import annotations

from typing import Callable

from pipeline.outcomes import Reading
from pipeline.score.facts import Facts, Rollup
from pipeline.score.signals import MIN_FAST_PROBES, has_package, metric, repository, secret_names, secrets_known, transport_known

BADGE_GROUPS = {
    "Schema": ["README", "Changelog", "Examples", "Contributing Guide", "SECURITY.md", "Namespace Match", "Installable"],
    "Protocol": ["Reachable", "Schema Valid", "Tool Count", "Error Handling Quality", "Auth Discovery"],
    "Reliability": ["99%+ Uptime", "95%+ Uptime", "Degraded", "Fast (<200ms)", "Slow (>500ms)", "Local Only"],
    "Maintenance": ["Active Development", "Stale", "Abandoned", "Regular Releases", "CI/CD", "Lock File", "Semver"],
    "Security": ["No Secrets Required", "Few Secrets", "Many Secrets", "STDIO Only", "Published Package"],
}
DOCUMENTATION_SIGNALS = {"readme": "README", "changelog": "Changelog", "examples": "Examples", "contributing": "Contributing Guide",
                         "security": "SECURITY.md", "namespace_match": "Namespace Match", "installable": "Installable"}
DEPENDENCY_SIGNALS = {"ci": "CI/CD", "lock_file": "Lock File"}
UPTIME = ((0.99, "99%+ Uptime"), (0.95, "95%+ Uptime"), (0.0, "Degraded"))  # from this share of successful probes


def _signals(facts: Facts, name: str, labels: dict[str, str]) -> list[str]:
    signals = (metric(facts, name) or {}).get("signals") or {}
    return [label for signal, label in labels.items() if signals.get(signal)]


def _documentation(facts: Facts) -> list[str]:
    return _signals(facts, "documentation_coverage", DOCUMENTATION_SIGNALS)


def _protocol(facts: Facts) -> list[str]:
    probe = facts.probe
    http = probe.http if probe else None
    found = ["Auth Discovery"] if http and http.auth_required and http.protected_resource_metadata else []
    if facts.reading is Reading.gated:
        return [*found, "Reachable"]
    if not (probe and probe.reachable):
        return found
    validity = facts.check("schema_validity")
    errors = [c for c in probe.checks if c.name.startswith("error_") and c.passed is not None]
    earned = {"Reachable": True, "Schema Valid": bool(validity and validity.passed and facts.tools), "Tool Count": bool(facts.tools),
              "Error Handling Quality": bool(errors) and all(c.passed for c in errors)}
    return found + [label for label, ok in earned.items() if ok]


def _speed(fast: Rollup) -> list[str]:
    if not fast.samples:
        return []
    p50 = fast.percentile(0.5)
    return ["Fast (<200ms)"] if p50 < 200 else ["Slow (>500ms)"] if p50 > 500 else []


def _reliability(facts: Facts) -> list[str]:
    if facts.server.is_local:
        return ["Local Only"] if transport_known(facts) else []
    fast = facts.fast
    if fast.runs < MIN_FAST_PROBES:
        return []
    succeeded = fast.ok / fast.runs
    return [next(label for floor, label in UPTIME if succeeded >= floor), *_speed(fast)]


def releases_last_year(facts: Facts) -> int:
    """Releases (GitHub releases, or versions published to the package registry) in the year before `now`."""
    facts_of_host = facts.analysis.repository if facts.analysis else None
    if facts_of_host is None or not facts_of_host.releases:
        return 0
    return sum(1 for r in facts_of_host.releases if r.published_at and 0 <= (facts.now - r.published_at).days <= 365)


def _activity(facts: Facts) -> list[str]:
    pushed = repository(facts).get("pushed_at")
    if not pushed:
        return []
    from pipeline.store import parse_iso

    age = (facts.now - parse_iso(pushed)).days
    return ["Active Development"] if age <= 30 else ["Abandoned"] if age > 730 else ["Stale"] if age > 365 else []


def _maintenance(facts: Facts) -> list[str]:
    found = _activity(facts) + _signals(facts, "dependency_health", DEPENDENCY_SIGNALS)
    if releases_last_year(facts) >= 4:
        found.append("Regular Releases")
    if (metric(facts, "version_hygiene") or {}).get("semver"):
        found.append("Semver")
    return found


def _security(facts: Facts) -> list[str]:
    found = []
    if secrets_known(facts):
        secrets = len(secret_names(facts))
        found.append("No Secrets Required" if secrets == 0 else "Few Secrets" if secrets <= 2 else "Many Secrets")
    if facts.server.transport == "stdio" and transport_known(facts):
        found.append("STDIO Only")
    if has_package(facts):
        found.append("Published Package")
    return found


EARNERS: tuple[Callable[[Facts], list[str]], ...] = (_documentation, _protocol, _reliability, _maintenance, _security)


def badges(facts: Facts) -> list[str]:
    """Seed 000's badges, in group order; each only where its evidence exists."""
    found = {label for earn in EARNERS for label in earn(facts)}
    return [label for group in BADGE_GROUPS.values() for label in group if label in found]
