"""What one probe's outcome says of a server, and when failures to reach it stand as a verdict.

One reading of every outcome, used by every rubric, the store's roll-ups and the site, so no two places disagree on
whether a run measured the server:

- answered: the handshake completed.
- gated: it answered behind an authentication gate (HTTP 401/403). The server is reachable; the protocol behind the gate
  is not measured.
- failed: a failure of the server's own (unreachable, a timeout, a protocol or HTTP error, a crash, an install that
  failed outside our sandbox).
- not measured: the run says nothing of the server. A 429 (it asked us to slow down), an opt-out, a refusal by our own
  policy (an address the configuration does not let us reach), and what our sandbox may have caused (methodology,
  deviation 44): install and start failures in the sandbox, and the five sandbox classes wherever they occur.

A remote server that failed to answer is unreachable only once the failures stand: MIN_FAILED_ATTEMPTS failed attempts
(deep and fast probes) since it last answered, the first and the last at least VERDICT_SPAN apart. Until then it is
"unreachable from here (1 attempt)": not rated, never graded on the attempt (methodology, deviation 61).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

ANSWERED = frozenset({"ok"})
GATED = frozenset({"auth_required"})
NOT_MEASURED = frozenset({"rate_limited", "opted_out", "refused"})
# Outcomes our sandbox may have caused (mock values, no network, our limits, installs without their scripts): the five
# sandbox classes always; the older start failures when a sandbox run ended in them. What happens after the start (the
# handshake, the session) is the server's.
SANDBOX_CLASSES = frozenset({"no_entry_point", "crashed_on_start", "needs_external_service", "resource_limit", "blocked"})
SANDBOX_START = frozenset({"install_failed", "start_failed", "timeout", "unreachable"})
MIN_FAILED_ATTEMPTS = 3
VERDICT_SPAN = timedelta(hours=24)


class Reading(str, Enum):
    answered = "answered"
    gated = "gated"
    failed = "failed"
    not_measured = "not_measured"


def sandbox_caused(kind: str, outcome: str) -> bool:
    """Whether a run of this kind that ended in this outcome may have been our sandbox's doing (see SANDBOX_CLASSES)."""
    return outcome in SANDBOX_CLASSES or (kind == "sandbox" and outcome in SANDBOX_START)


def reading(kind: str, outcome: str) -> Reading:
    """What a run of this kind ("deep", "fast", "sandbox") that ended in this outcome says of the server."""
    if outcome in ANSWERED:
        return Reading.answered
    if outcome in GATED:
        return Reading.gated
    if outcome in NOT_MEASURED or sandbox_caused(kind, outcome):
        return Reading.not_measured
    return Reading.failed


def measured(kind: str, outcome: str) -> bool:
    """Whether the run says something of the server: it answered, was gated, or failed by its own doing."""
    return reading(kind, outcome) is not Reading.not_measured


def reached(kind: str, outcome: str) -> bool:
    """Whether the server answered at all: the handshake, or an authentication gate."""
    return reading(kind, outcome) in (Reading.answered, Reading.gated)


@dataclass(frozen=True)
class Attempts:
    """A server's failed attempts (deep and fast probes, the failures of its own) since it last answered, in the window."""

    failed: int = 0
    first: datetime | None = None
    last: datetime | None = None
    answered_at: datetime | None = None  # when it last answered (handshake or gate), None when never in the window

    @property
    def span(self) -> timedelta:
        return self.last - self.first if self.first and self.last else timedelta(0)

    @property
    def stands(self) -> bool:
        """Whether the failures are a verdict: enough of them, far enough apart."""
        return self.failed >= MIN_FAILED_ATTEMPTS and self.span >= VERDICT_SPAN

    @property
    def wording(self) -> str:
        """How the site shows a server whose failures do not stand yet: "unreachable from here (1 attempt)"."""
        count = f"{self.failed} attempt{'s' if self.failed != 1 else ''}"
        if self.failed > 1:
            hours = self.span.total_seconds() / 3600
            count += f" over {hours:.0f} h" if hours >= 1 else f" over {self.span.total_seconds() / 60:.0f} min"
        since = f" since it last answered on {self.answered_at:%Y-%m-%d}" if self.answered_at else ""
        return f"unreachable from here ({count}{since})"


def unconfirmed(attempts: Attempts) -> str | None:
    """Why a failure to reach a remote server is not a verdict yet ("unreachable from here (1 attempt): ..."); None once
    the failures stand."""
    if attempts.stands:
        return None
    hours = VERDICT_SPAN.total_seconds() / 3600
    return f"{attempts.wording}: not rated until {MIN_FAILED_ATTEMPTS} failed attempts over at least {hours:.0f} hours"
