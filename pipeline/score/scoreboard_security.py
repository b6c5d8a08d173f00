"""The `scoreboard` rubric's Security Hygiene dimension (seed 000): what running the server asks of its user,
from the catalog alone (secrets, transport, credentials, distribution), and the behavioural source analysis.
"""

from __future__ import annotations

import re

from pipeline.score.engine import Outcome, RuleSet, on_scale, share
from pipeline.score.facts import Facts
from pipeline.score.signals import secret_names

SECURITY_RULES = RuleSet()
rule = SECURITY_RULES.rule
SENSITIVE_CREDENTIAL = re.compile(r"PASSWORD|PASSWD|DATABASE_URL|DB_URL|CONNECTION_STRING|AWS_SECRET|PRIVATE_KEY"
                                  r"|GOOGLE_APPLICATION_CREDENTIALS|AZURE_CLIENT_SECRET|SERVICE_ACCOUNT", re.I)
# Seed 000 states these rules in points: the top of each table is the rule's maximum.
SECRET_POINTS = (20, 16, 11, 6, 6)  # by the number of secrets required; 0 from five on
TRANSPORT_POINTS = {"stdio": 15, "sse": 9, "streamable-http": 6}
CREDENTIAL_POINTS = {"none": 15, "api tokens": 10, "sensitive": 5}
DISTRIBUTION_POINTS = {(True, True): 15, (False, True): 12, (True, False): 8, (False, False): 3}  # (package, repository)


@rule("security_hygiene", max(SECRET_POINTS))
def secret_env_vars(facts: Facts) -> Outcome:
    """How many secrets are required: 0 → 20, 1 → 16, 2 → 11, 3–4 → 6, 5+ → 0."""
    count = len(secret_names(facts))
    return on_scale(SECRET_POINTS[count] if count < len(SECRET_POINTS) else 0, f"{count} secret environment variables required")


@rule("security_hygiene", max(TRANSPORT_POINTS.values()))
def transport_risk(facts: Facts) -> Outcome:
    """STDIO-only (local) 15, SSE 9, remote (Streamable HTTP) 6."""
    return on_scale(TRANSPORT_POINTS[facts.server.transport], f"transport {facts.server.transport}")


@rule("security_hygiene", max(CREDENTIAL_POINTS.values()))
def credential_sensitivity(facts: Facts) -> Outcome:
    """No credentials 15; API tokens only 10; database passwords or cloud keys 5."""
    secrets = secret_names(facts)
    if not secrets:
        return on_scale(CREDENTIAL_POINTS["none"], "no credentials required")
    sensitive = [name for name in secrets if SENSITIVE_CREDENTIAL.search(name)]
    if sensitive:
        return on_scale(CREDENTIAL_POINTS["sensitive"], f"sensitive credentials: {', '.join(sensitive)}")
    return on_scale(CREDENTIAL_POINTS["api tokens"], f"API tokens: {', '.join(secrets)}")


@rule("security_hygiene", max(DISTRIBUTION_POINTS.values()))
def distribution_clarity(facts: Facts) -> Outcome:
    """Published package + source repo 15, repo only 12, package only 8, neither 3."""
    package = facts.server.launch is not None
    repo = bool(facts.server.repository)
    return on_scale(DISTRIBUTION_POINTS[package, repo], f"package {'yes' if package else 'no'}, source repository {'yes' if repo else 'no'}",
                    how_to_gain=None if package and repo else "publish both a package and its source repository")


@rule("security_hygiene", 35)
def behavioral_security(facts: Facts) -> Outcome:
    """LLM-analysed source behaviour (injection, exfiltration, hardcoded credentials, dangerous ops, scope creep); neutral 50/100 without it."""
    return share(0.5, "no behavioural source analysis yet: neutral 50/100")
