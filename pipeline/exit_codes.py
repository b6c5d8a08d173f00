"""How `probe TARGET` and `check` end: the exit codes, kept apart from the prober so the CLI can list them in --help without
importing it (the MCP SDK alone is most of a command's start)."""

from __future__ import annotations

from pipeline.models import ProbeOutcome, ProbeResult

# How `probe TARGET` and `check` end when the probe could not meet the server: a code per class of outcome, so CI can
# tell a server that would not start from one it could not reach, and a gate from a fault.
OUTCOME_EXITS: list[tuple[int, str, tuple[ProbeOutcome, ...]]] = [
    (3, "could not be started", (ProbeOutcome.install_failed, ProbeOutcome.start_failed, ProbeOutcome.no_entry_point,
                                 ProbeOutcome.crashed_on_start)),
    (4, "could not be reached, or did not answer", (ProbeOutcome.unreachable, ProbeOutcome.timeout, ProbeOutcome.refused)),
    (5, "could not be negotiated with, or broke the session", (ProbeOutcome.protocol_error, ProbeOutcome.http_error, ProbeOutcome.crashed)),
    (6, "requires authorization", (ProbeOutcome.auth_required,)),
    (7, "is rate limiting requests", (ProbeOutcome.rate_limited,)),
    (8, "asks not to be probed", (ProbeOutcome.opted_out,)),
    (9, "needs a database, an API or a setting the sandbox does not give it", (ProbeOutcome.needs_external_service,)),
    (10, "was stopped by the sandbox: at a resource limit, or doing something it refuses", (ProbeOutcome.resource_limit, ProbeOutcome.blocked)),
]
EXIT_BELOW_MIN_SCORE = 1


def exit_codes(gate: bool) -> list[tuple[int, str]]:
    """Every exit code of `check` (`gate`: with its --min-score) or `probe TARGET` and what it means, in order (for --help
    and the README)."""
    gated = [(0, "the server was met (and, with --min-score, scored at least that)"),
             (EXIT_BELOW_MIN_SCORE, "with --min-score: the rubric's score is below it, or missing")]
    return [*(gated if gate else [(0, "the server was met")]),
            (2, "usage error"),
            *((code, f"the server {meaning} ({', '.join(o.value for o in outcomes)})") for code, meaning, outcomes in OUTCOME_EXITS),
            (130, "interrupted")]


def exit_for(probe: ProbeResult) -> tuple[int, str] | None:
    """The exit code, and why, of a probe that could not meet the server (None when it did)."""
    for code, meaning, outcomes in OUTCOME_EXITS:
        if probe.outcome in outcomes:
            return code, f"the server {meaning}: {probe.outcome.value}"
    return None
