"""Facts: everything the rules may read about one server, built from the stored evidence the store reads.

Gathering is the only step that touches the database; rules then run on Facts alone. Servers
are gathered in chunks (the store reads each with one query per table), so memory stays bounded
by the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Sequence

from sqlite_utils import Database

from pipeline import latency, store
from pipeline.judging import current_judgements
from pipeline.models import AnalysisResult, Invocation, Judgement, ProbeResult, Server
from pipeline.outcomes import Attempts, Reading, reached, reading, sandbox_caused, unconfirmed
from pipeline.text import squash

RELIABILITY_WINDOW = timedelta(days=7)  # seed 000: the 7-day figures feed the composite
OUTSIDE_IN_WINDOW = timedelta(days=30)  # seed 003: 30 days of runs
CHUNK = 400  # servers per read
NOT_MEASURED_WHY = {"rate_limited": "the server asked us to slow down (HTTP 429)", "opted_out": "the server asks not to be probed",
                   "refused": "our probe policy does not reach this address"}
SANDBOX_GAIN = ("make the server start in an isolated sandbox: no network, placeholder credentials for the variables it declares, a read-only "
                "install and a writable work directory (its page shows the sandbox's log)")


@dataclass
class Rollup:
    """Fast probes folded together: counts and a latency histogram of the successful ones."""

    runs: int = 0
    reachable: int = 0
    ok: int = 0
    hist: dict[str, int] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return latency.count(self.hist)

    def percentile(self, q: float) -> float | None:
        return latency.percentile(self.hist, q)

    def add(self, runs: int, reachable: int, ok: int, hist: dict[str, int]) -> None:
        self.runs += runs
        self.reachable += reachable
        self.ok += ok
        for key, n in hist.items():
            self.hist[key] = self.hist.get(key, 0) + n

    @classmethod
    def of(cls, runs: int, ok: int, latencies: list[float], reachable: int | None = None) -> "Rollup":
        return cls(runs=runs, reachable=ok if reachable is None else reachable, ok=ok, hist=latency.from_samples(latencies))


@dataclass
class RunRow:
    """One probe run, as the history-based rules see it."""

    kind: str
    started_at: datetime
    outcome: str
    connect_ms: float | None
    tool_count: int | None
    invocations: list[Invocation] | None = None


@dataclass
class Snapshot:
    captured_at: datetime
    content_hash: str
    tools: list[dict[str, Any]] | None = None  # loaded only on either side of a change of hash


@dataclass
class Facts:
    server: Server
    now: datetime
    probe: ProbeResult | None = None
    probe_ref: str | None = None
    analysis: AnalysisResult | None = None
    analysis_ref: str | None = None
    fast: Rollup = field(default_factory=Rollup)  # fast probes of the last 7 days
    judgements: list[Judgement] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)  # deep and sandbox runs of the last 30 days, oldest first
    snapshots: list[Snapshot] = field(default_factory=list)  # every capture, oldest first
    auth_history: list[tuple[datetime, bool]] = field(default_factory=list)  # (when, auth required) per deep probe
    duplicate_description: bool = False  # the same description on 3+ servers (fleet-level fact)
    yesterday: dict[str, float | None] = field(default_factory=dict)  # rubric -> composite of yesterday's snapshot
    # Failed attempts since it last answered, from the stored runs, where its latest probe failed; None when they were not read
    attempts: Attempts | None = None
    memo: dict[str, Any] = field(default_factory=dict)  # derived values shared by several rules of one scoring pass

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.probe.tools if self.probe and self.probe.reachable else None

    @property
    def current_judgements(self) -> list[Judgement]:
        """The judgements that count: those of the tool texts the server shows now (pipeline.judging)."""
        if "judgements.current" not in self.memo:
            self.memo["judgements.current"] = current_judgements(self.judgements, self._current_texts())
        return self.memo["judgements.current"]

    @property
    def current_tool_names(self) -> set[str]:
        """The names of the tools whose current text the judges read (the list current_judgements matches against)."""
        return {str(t.get("name", "")) for t in self._current_texts() or []}

    def _current_texts(self) -> list[dict[str, Any]] | None:
        """The latest probe's tool list; with no probe at all, the tools read from source. A probe that listed nothing
        leaves no current text: what it once listed may have changed since."""
        if self.probe is not None:
            return self.tools
        if self.analysis is None or not self.analysis.ok or not self.analysis.tools:
            return None
        return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in self.analysis.tools]

    def check(self, name: str):
        if self.probe is None:
            return None
        return next((c for c in self.probe.checks if c.name == name), None)

    @property
    def reading(self) -> Reading | None:
        """What the latest probe says of the server (pipeline.outcomes); None when it was never probed."""
        return reading(self.probe.kind, self.probe.outcome.value) if self.probe else None

    @property
    def not_measured(self) -> str | None:
        """Why the latest probe says nothing of the server (a 429, an opt-out, our own policy, what our sandbox may have
        caused); None otherwise."""
        probe = self.probe
        if probe is None or self.reading is not Reading.not_measured:
            return None
        detail = (probe.detail or "")[:160]
        if sandbox_caused(probe.kind, probe.outcome.value):
            where = f" in {probe.sandbox}" if probe.sandbox else ""
            return f"not measured: the sandbox{where} could not run it ({probe.outcome.value}): {detail}"
        return f"not measured: {NOT_MEASURED_WHY[probe.outcome.value]}: {detail}"

    @property
    def not_measured_gain(self) -> str | None:
        """What would let the probe measure it: a start our sandbox can run; nothing the server need do otherwise."""
        return SANDBOX_GAIN if self.probe and sandbox_caused(self.probe.kind, self.probe.outcome.value) else None

    @property
    def unconfirmed_failure(self) -> str | None:
        """Why the latest probe's failure to reach a remote server is no verdict yet ("unreachable from here (1 attempt)");
        None when it did not fail, for a local server (its start is ours to repeat) and once the failures stand (deviation 61)."""
        if self.reading is not Reading.failed or self.server.is_local:
            return None
        if not self.failures.failed:
            return ("not a verdict: the latest deep probe failed, but the server answered a probe since" if self.failures.answered_at
                    else "not a verdict: the latest deep probe failed, more than 30 days ago")
        return unconfirmed(self.failures)

    @property
    def never_reached(self) -> str | None:
        """Why a remote server that has not answered any probe in the window is not rated yet (its failures do not stand);
        None otherwise."""
        if self.server.is_local or not self.failures.failed or self.failures.answered_at is not None:
            return None
        return unconfirmed(self.failures)

    @property
    def failures(self) -> Attempts:
        """The failed attempts since the server last answered: as the store counted them (deep and fast probes), or, where
        it did not, from the deep and sandbox runs at hand, or the latest probe alone (`scoreboard check` probes once)."""
        if self.attempts is not None:
            return self.attempts
        runs = [(r.started_at, r.kind, r.outcome) for r in self.runs]
        if not runs and self.probe is not None:
            runs = [(self.probe.started_at, self.probe.kind, self.probe.outcome.value)]
        answered = max((at for at, kind, outcome in runs if reached(kind, outcome)), default=None)
        failed = sorted(at for at, kind, outcome in runs if reading(kind, outcome) is Reading.failed and (answered is None or at > answered))
        return Attempts(len(failed), failed[0] if failed else None, failed[-1] if failed else None, answered)

    @property
    def description(self) -> str | None:
        if self.server.description:
            return self.server.description
        if self.analysis and self.analysis.description:
            return self.analysis.description
        info = (self.probe.server_info or {}) if self.probe else {}
        return info.get("description")

    @property
    def analysis_age_days(self) -> float | None:
        if self.analysis is None:
            return None
        return (self.now - self.analysis.analyzed_at).total_seconds() / 86400


def gather_many(
    db: Database, servers: Sequence[Server], now: datetime, chunk: int = CHUNK, duplicates: set[str] | None = None
) -> Iterator[Facts]:
    """Facts for each server, in order, reading the database one chunk of servers at a time."""
    duplicates = store.duplicate_descriptions(db) if duplicates is None else duplicates
    today = now.astimezone(timezone.utc).date()
    # Windows are whole UTC days: the 7-day figures are today and the six days before.
    day7 = (today - (RELIABILITY_WINDOW - timedelta(days=1))).isoformat()
    yesterday = (today - timedelta(days=1)).isoformat()
    for group, _ in store.in_chunks(servers, chunk):
        found = store.scoring_evidence(db, [s.id for s in group], fast_since_day=day7, runs_since=now - OUTSIDE_IN_WINDOW, history_day=yesterday)
        facts = {s.id: Facts(server=s, now=now) for s in group}
        for server_id, (row_id, probe) in found.probes.items():
            facts[server_id].probe, facts[server_id].probe_ref = probe, f"probe_runs:{row_id}"
        for server_id, (row_id, analysis) in found.analyses.items():
            facts[server_id].analysis, facts[server_id].analysis_ref = analysis, f"analyses:{row_id}"
        for server_id, _, runs, reachable, ok, hist in found.daily:
            facts[server_id].fast.add(runs, reachable, ok, hist)
        for server_id, kind, started, outcome, connect_ms, tool_count, invocations, auth in found.runs:
            fact = facts[server_id]
            fact.runs.append(RunRow(kind, started, outcome, connect_ms, tool_count, invocations))
            if outcome in ("ok", "auth_required"):
                fact.auth_history.append((started, bool(auth) or outcome == "auth_required"))
        for server_id, captures in found.snapshots.items():
            facts[server_id].snapshots = [Snapshot(*capture) for capture in captures]
        for judgement in found.judgements:
            facts[judgement.server_id].judgements.append(judgement)
        for server_id, rubric, composite in found.composites:
            facts[server_id].yesterday[rubric] = composite
        for server_id, attempts in found.attempts.items():
            facts[server_id].attempts = attempts
        for server in group:
            fact = facts[server.id]
            fact.duplicate_description = squash(fact.description) in duplicates
            yield fact
