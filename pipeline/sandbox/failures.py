"""Why a sandboxed start failed, classified from what it left behind (pure).

Inputs are the install result, the exit status, the stderr tail, the limit the backend says was hit and what it says
it refused. The order says which evidence wins: the installer first (nothing ran), then a missing entry point, a limit
the backend saw stop the server, a refusal the backend observed, then the server's own words (a limit it ran into, a
service it could not reach, something the sandbox would not let it do), then how it ended: exited before the
handshake (crashed_on_start) or never answered (timeout).

The patterns are real servers' messages (Node's `ECONNREFUSED`/`ENOTFOUND`/`EACCES` errors, Python's `socket.gaierror`,
`psycopg2.OperationalError`, `PermissionError`, missing-variable checks of the kind `BRAVE_API_KEY environment variable
is required`); a line that matches is kept in the detail, so a reader sees the evidence, not only our verdict. Which
classes say nothing of the server (not measured) is pipeline.outcomes' to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.models import ProbeOutcome, ProbeResult
from pipeline.sandbox import FailureKind, LimitName

TAIL = 2000  # characters of the log tail kept with a failure
LINE = 300  # characters of the telling line kept in the detail


@dataclass(frozen=True)
class StartAttempt:
    """What one sandboxed install and start left behind."""

    install_error: str | None = None  # the installer failed: its reason
    entry_point: bool = True  # False: installed, but no command to start was found
    exit_code: int | None = None  # it exited by itself before the handshake (negative: the signal that ended it)
    answered: bool = False  # it completed the handshake
    timed_out: bool = False  # it never answered within the time allowed
    stderr_tail: str | None = None
    limit_hit: LimitName | None = None  # the backend stopped it at this limit
    blocked: str | None = None  # what the backend saw it refuse


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    detail: str
    tail: str | None = None  # the log tail, bounded

    @property
    def outcome(self) -> ProbeOutcome:
        return ProbeOutcome(self.kind)


def _patterns(*pairs: tuple[str, str]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern, re.I), reason) for pattern, reason in pairs)


# (pattern, the limit it means): what a server prints when it runs into a limit the backend did not report
LIMIT_PATTERNS: tuple[tuple[re.Pattern[str], LimitName], ...] = tuple((re.compile(p, re.I), limit) for p, limit in (
    (r"JavaScript heap out of memory|Reached heap limit|\bMemoryError\b|Cannot allocate memory|\bENOMEM\b|out of memory", "memory"),
    (r"\bspawn EAGAIN\b|fork: Resource temporarily unavailable|BlockingIOError: \[Errno 11\]|can't start new thread|"
     r"pthread_create.*(EAGAIN|Resource temporarily unavailable)|uv_thread_create", "pids"),
    (r"\bENOSPC\b|No space left on device|Disk quota exceeded|\bEDQUOT\b|File too large|\bEFBIG\b", "disk"),
))
EXTERNAL_PATTERNS = _patterns(
    (r"\bENOTFOUND\b|\bEAI_AGAIN\b|getaddrinfo|Name or service not known|Temporary failure in name resolution|"
     r"NameResolutionError|nodename nor servname|Could not resolve host|\bENETUNREACH\b|Network is unreachable|"
     r"No address associated with hostname", "it needs the network, which the sandbox does not have"),
    (r"\bECONNREFUSED\b|Connection refused|Connect call failed|\[Errno 111\]|Error 111 connecting|"
     r"ServerSelectionTimeoutError|MongoServerSelectionError|MongoNetworkError|Can't connect to (MySQL|MariaDB) server|"
     r"could not connect to server|Is the server running|SequelizeConnection\w*Error|ECONNRESET.*(5432|3306|27017|6379)",
     "it needs a service (a database, an API) that does not run in the sandbox"),
    (r"password authentication failed|Access denied for user|ER_ACCESS_DENIED_ERROR|Authentication failed\.? *(for|against)|"
     r"invalid[ _-]?api[ _-]?key|incorrect api key|api key (is )?(invalid|not valid)|Bad credentials|\binvalid_auth\b|"
     r"\bnot_authed\b|invalid (access |auth |bearer )?token|\b401 Unauthorized\b|(status( code)?|error code|HTTP/\d(\.\d)?)\W{0,3}40[13]\b|"
     r"AuthenticationError|Unauthorized: ", "the upstream service refused our mock credentials"),
    (r"(environment variable|env var)\S*[^\n]{0,80}\b(is )?(required|missing|not set|not found|must be (set|provided)|not defined|undefined)|"
     r"(missing|required|set the|no|please set|please provide)[^\n]{0,40}(environment variable|env var)|"
     r"(?-i:\b[A-Z][A-Z0-9_]*_(KEY|TOKEN|SECRET|URL|URI|PASSWORD|ID)\b)[^\n]{0,60}\b(is )?(required|missing|not set|must be (set|provided))|"
     r"\b(missing|required|no|unset)\b[^\n]{0,40}(?-i:\b[A-Z][A-Z0-9_]*_(KEY|TOKEN|SECRET|URL|URI|PASSWORD)\b)|"
     r"(?-i:KeyError: '[A-Z][A-Z0-9_]+')|validation errors? for \w*(Settings|Config)|"
     r"\b(api[ _-]?key|access[ _-]?token|credentials?)\b[^\n]{0,30}"
     r"\b(is required|are required|not provided|missing|not set|not configured|not found)",
     "it wants configuration we cannot give it (a credential or a setting of its own)"),
)
BLOCKED_PATTERNS = _patterns(
    (r"\bEACCES\b|Permission denied|PermissionError", "the sandbox denied it access"),
    (r"\bEPERM\b|Operation not permitted", "the sandbox did not permit the operation"),
    (r"\bEROFS\b|Read-only file system", "it tried to write where the sandbox is read-only"),
)
NO_ENTRY_PATTERNS = re.compile(r"execvp?\b[^\n]*No such file or directory|cannot execute [^\n]*No such file or directory|"
                               r"installed no command|no entry point|command not found|could not determine executable to run|"
                               r"has no (bin|console script)", re.I)


def classify(attempt: StartAttempt) -> Failure | None:
    """The failure class of a start, with its evidence; None when the server answered."""
    tail = _tail(attempt.stderr_tail)
    if attempt.install_error is not None:
        if NO_ENTRY_PATTERNS.search(attempt.install_error):
            return Failure("no_entry_point", f"no command to start: {_line(attempt.install_error)}", tail)
        return Failure("install_failed", f"install failed: {attempt.install_error[-TAIL:]}", tail)
    if not attempt.entry_point:
        return Failure("no_entry_point", "installed, but the package names no command to start (no npm bin, no console script)", tail)
    if attempt.answered:
        return None
    if attempt.limit_hit is not None:
        return Failure("resource_limit", f"stopped at the sandbox's {attempt.limit_hit} limit", tail)
    if attempt.blocked:
        return Failure("blocked", f"the sandbox refused it: {_line(attempt.blocked)}", tail)
    text = tail or ""
    for pattern, limit in LIMIT_PATTERNS:
        if found := _matching_line(pattern, text):
            return Failure("resource_limit", f"ran into the sandbox's {limit} limit: {found}", tail)
    if NO_ENTRY_PATTERNS.search(text):
        return Failure("no_entry_point", f"its command could not be started: {_matching_line(NO_ENTRY_PATTERNS, text)}", tail)
    for patterns, kind in ((EXTERNAL_PATTERNS, "needs_external_service"), (BLOCKED_PATTERNS, "blocked")):
        for pattern, reason in patterns:
            if found := _matching_line(pattern, text):
                return Failure(kind, f"{reason}: {found}", tail)  # type: ignore[arg-type]
    if attempt.exit_code is not None:
        how = f"was killed by signal {-attempt.exit_code}" if attempt.exit_code < 0 else f"exited with code {attempt.exit_code}"
        last = _last_line(text)
        return Failure("crashed_on_start", f"it {how} before the handshake" + (f": {last}" if last else ""), tail)
    if attempt.timed_out:
        return Failure("timeout", "it never answered the handshake" + (f"; last words: {_last_line(text)}" if text.strip() else ""), tail)
    return Failure("crashed_on_start", "it closed its pipes before the handshake" + (f": {_last_line(text)}" if text.strip() else ""), tail)


# How a probe records a start that never reached the handshake, before it is classified.
UNCLASSIFIED = frozenset({ProbeOutcome.start_failed, ProbeOutcome.crashed, ProbeOutcome.timeout, ProbeOutcome.unreachable})


def classify_start(result: ProbeResult, limit_hit: LimitName | None = None, blocked: str | None = None) -> None:
    """A sandbox run that ended before the handshake gets its failure class, detail and log tail (in place); a run that
    reached the handshake, or was classified already, is left as it is."""
    if result.handshake is not None or result.outcome not in UNCLASSIFIED:
        return
    said = result.stderr_tail or result.detail  # a start that failed in the sandbox says why in its detail
    timed_out = result.outcome == ProbeOutcome.timeout or "did not listen" in (result.detail or "")
    failure = classify(StartAttempt(exit_code=result.exit_code, timed_out=timed_out, stderr_tail=said, limit_hit=limit_hit, blocked=blocked))
    if failure is not None:
        result.outcome, result.detail, result.stderr_tail = failure.outcome, failure.detail, failure.tail


def _tail(text: str | None) -> str | None:
    if not text or not text.strip():
        return None
    return text[-TAIL:]


def _matching_line(pattern: re.Pattern[str], text: str) -> str | None:
    for line in text.splitlines():
        if pattern.search(line):
            return _line(line)
    return None


def _line(text: str) -> str:
    return " ".join(text.split())[:LINE]


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return _line(lines[-1]) if lines else ""
