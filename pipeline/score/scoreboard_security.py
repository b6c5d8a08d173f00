"""The `scoreboard` rubric's Security Hygiene dimension (seed 000): what running the server asks of its user,
from the catalog alone (secrets, transport, credentials, distribution), and the behavioural source analysis.
"""

from __future__ import annotations

from pipeline.credentials import credential_kind
from pipeline.score.engine import Outcome, RuleSet, on_scale, percent, share, unmeasured
from pipeline.score.facts import Facts
from pipeline.score.signals import has_package, metric, secret_names, secrets_known, transport_known

SECURITY_RULES = RuleSet()
rule = SECURITY_RULES.rule
# Seed 000 states these rules in points: the top of each table is the rule's maximum.
SECRET_POINTS = (20, 16, 11, 6, 6)  # by the number of secrets required; 0 from five on
TRANSPORT_POINTS = {"stdio": 15, "sse": 9, "streamable-http": 6}
CREDENTIAL_POINTS = {"none": 15, "api tokens": 10, "sensitive": 5}
NO_SECRETS_EVIDENCE = "unknown: no source lists the variables it needs, its source was not analysed, and no probe reached it"
SECRETS_GAIN = "list the environment variables the server needs in a registry entry, or publish its source so it can be analysed"
DISTRIBUTION_POINTS = {(True, True): 15, (False, True): 12, (True, False): 8, (False, False): 3}  # (package, repository)


@rule("security_hygiene", max(SECRET_POINTS))
def secret_env_vars(facts: Facts) -> Outcome:
    """How many secrets are required: 0 → 20, 1 → 16, 2 → 11, 3–4 → 6, 5+ → 0; not measured while nothing says which
    variables the server needs (no source lists them, no source analysis, no probe reached it)."""
    if not secrets_known(facts):
        return unmeasured(NO_SECRETS_EVIDENCE, SECRETS_GAIN)
    names = secret_names(facts)
    count = len(names)
    listed = f": {', '.join(names[:8])}" if names else ""
    return on_scale(SECRET_POINTS[count] if count < len(SECRET_POINTS) else 0,
                    f"{count} secret environment variables required{listed} (from the {secrets_known(facts)})")


@rule("security_hygiene", max(TRANSPORT_POINTS.values()))
def transport_risk(facts: Facts) -> Outcome:
    """STDIO-only (local) 15, SSE 9, remote (Streamable HTTP) 6; not measured while stdio is only the catalog's default (no
    source gives an endpoint or a launch, and no probe reached the server)."""
    if (known := transport_known(facts)) is None:
        return unmeasured("transport unknown: no source gives an endpoint or a way to start the server, and no probe reached it",
                          "list the server in a registry with its package (how to start it) or its remote endpoint")
    return on_scale(TRANSPORT_POINTS[facts.server.transport], f"transport {facts.server.transport} (from its {known})")


@rule("security_hygiene", max(CREDENTIAL_POINTS.values()))
def credential_sensitivity(facts: Facts) -> Outcome:
    """No credentials 15; API tokens only 10; database passwords or cloud keys 5; not measured while nothing says which
    variables the server needs."""
    if not secrets_known(facts):
        return unmeasured(NO_SECRETS_EVIDENCE, SECRETS_GAIN)
    secrets = secret_names(facts)
    origin = f" (from the {secrets_known(facts)})"
    if not secrets:
        return on_scale(CREDENTIAL_POINTS["none"], "no credentials required" + origin)
    sensitive = [name for name in secrets if credential_kind(name) == "sensitive"]
    if sensitive:
        return on_scale(CREDENTIAL_POINTS["sensitive"], f"sensitive credentials: {', '.join(sensitive[:8])}{origin}",
                        how_to_gain="accept a scoped API token instead of database passwords, connection strings or cloud keys")
    return on_scale(CREDENTIAL_POINTS["api tokens"], f"API tokens: {', '.join(secrets[:8])}{origin}")


@rule("security_hygiene", max(DISTRIBUTION_POINTS.values()))
def distribution_clarity(facts: Facts) -> Outcome:
    """Published package + source repo 15, repo only 12, package only 8, neither 3."""
    package = has_package(facts)
    repo = bool(facts.server.repository)
    return on_scale(DISTRIBUTION_POINTS[package, repo], f"package {'yes' if package else 'no'}, source repository {'yes' if repo else 'no'}",
                    how_to_gain=None if package and repo else "publish both a package and its source repository")


@rule("security_hygiene", 35)
def behavioral_security(facts: Facts) -> Outcome:
    """Source scanned for injection, exfiltration, hard-coded secrets, dangerous ops, scope creep: 0–100 × 35; neutral 50/100 without source."""
    behavioral = metric(facts, "behavioral")
    if not behavioral or behavioral.get("value") is None:
        return share(0.5, "no source was scanned for behaviour: neutral 50/100",
                     how_to_gain="publish the source (a repository or a package archive) so its behaviour can be scanned")
    counts = behavioral.get("findings") or {}
    named = [f"{n} {severity} {kind.replace('_', ' ')}" for kind, by in sorted(counts.items()) for severity, n in sorted(by.items()) if n]
    reason = f"behaviour {behavioral['value']}/100 over {behavioral.get('files', '?')} files: " + ("; ".join(named) or "no findings")
    top = behavioral.get("top") or []
    gain = None if not named else "remove or justify what the findings point at: " + "; ".join(top[:3])
    return percent(behavioral["value"], reason[:400], how_to_gain=gain, evidence=facts.analysis_ref)
