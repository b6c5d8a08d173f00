"""Facts: everything the rules may read about one server, gathered from stored evidence.

Gathering is the only step that touches the database; rules then run on Facts alone. Servers
are gathered in chunks with one query per table per chunk, so rescoring the whole fleet costs a
few hundred queries rather than several per server, and memory stays bounded by the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator, Sequence

from pydantic import TypeAdapter
from pydantic_core import from_json
from sqlite_utils import Database

from pipeline import latency
from pipeline.db import ScoreboardDatabaseError, iso, parse_iso
from pipeline.models import AnalysisResult, Invocation, Judgement, ProbeResult, Server

RELIABILITY_WINDOW = timedelta(days=7)  # seed 000: the 7-day figures feed the composite
OUTSIDE_IN_WINDOW = timedelta(days=30)  # seed 003: 30 days of runs
CHUNK = 400
_INVOCATIONS = TypeAdapter(list[Invocation])  # one Rust-side parse per run, not one model per call


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
    fast30: Rollup = field(default_factory=Rollup)  # fast probes of the last 30 days
    judgements: list[Judgement] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)  # deep and sandbox runs of the last 30 days, oldest first
    latest_fast: RunRow | None = None
    snapshots: list[Snapshot] = field(default_factory=list)  # every capture, oldest first
    auth_history: list[tuple[datetime, bool]] = field(default_factory=list)  # (when, auth required) per deep probe
    duplicate_description: bool = False  # the same description on 3+ servers (fleet-level fact)
    yesterday: dict[str, float | None] = field(default_factory=dict)  # rubric -> composite of yesterday's snapshot
    memo: dict[str, Any] = field(default_factory=dict)  # derived values shared by several rules of one scoring pass

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.probe.tools if self.probe and self.probe.reachable else None

    def check(self, name: str):
        if self.probe is None:
            return None
        return next((c for c in self.probe.checks if c.name == name), None)

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


def _chunks(items: Sequence[Server], size: int) -> Iterator[Sequence[Server]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _in(ids: Iterable[str]) -> tuple[str, list[str]]:
    values = list(ids)
    return ",".join("?" for _ in values), values


def gather(db: Database, server: Server, now: datetime) -> Facts:
    return next(gather_many(db, [server], now))


def gather_many(
    db: Database, servers: Sequence[Server], now: datetime, chunk: int = CHUNK, duplicates: set[str] | None = None
) -> Iterator[Facts]:
    """Facts for each server, in order, reading the database one chunk of servers at a time."""
    duplicates = duplicate_descriptions(db) if duplicates is None else duplicates
    today = now.astimezone(timezone.utc).date()
    yesterday = (today - timedelta(days=1)).isoformat()
    for group in _chunks(servers, chunk):
        marks, ids = _in(s.id for s in group)
        facts = {s.id: Facts(server=s, now=now) for s in group}
        for row in _latest(db, "probe_runs", "evidence", "kind in ('deep', 'sandbox')", marks, ids):
            fact = facts[row["server_id"]]
            fact.probe = _stored(ProbeResult, row["evidence"], f"probe_runs row {row['id']} ({row['server_id']})")
            fact.probe_ref = f"probe_runs:{row['id']}"
        for row in _latest(db, "analyses", "result", "1", marks, ids):
            fact = facts[row["server_id"]]
            fact.analysis = _stored(AnalysisResult, row["result"], f"analyses row {row['id']} ({row['server_id']})")
            fact.analysis_ref = f"analyses:{row['id']}"
        # Windows are whole UTC days: the 7-day figures are today and the six days before.
        day7 = (today - (RELIABILITY_WINDOW - timedelta(days=1))).isoformat()
        day30 = (today - (OUTSIDE_IN_WINDOW - timedelta(days=1))).isoformat()
        for row in db.query(
            f"select server_id, day, runs, reachable, ok, latency_hist from probe_daily where kind = 'fast' and server_id in ({marks}) and day >= ?",
            [*ids, day30],
        ):
            fact = facts[row["server_id"]]
            hist = from_json(row["latency_hist"])
            fact.fast30.add(row["runs"], row["reachable"], row["ok"], hist)
            if row["day"] >= day7:
                fact.fast.add(row["runs"], row["reachable"], row["ok"], hist)
        for row in _latest(db, "probe_runs", "started_at, outcome, connect_ms", "kind = 'fast'", marks, ids):
            facts[row["server_id"]].latest_fast = RunRow("fast", parse_iso(row["started_at"]), row["outcome"], row["connect_ms"], None)
        for row in db.query(
            f"select server_id, kind, started_at, outcome, connect_ms, tool_count, json_extract(evidence, '$.invocations') invocations, "
            f"json_extract(evidence, '$.http.auth_required') auth from probe_runs "
            f"where server_id in ({marks}) and kind != 'fast' and started_at >= ? order by started_at, id",
            [*ids, iso(now - OUTSIDE_IN_WINDOW)],
        ):
            fact = facts[row["server_id"]]
            started = parse_iso(row["started_at"])
            invocations = _INVOCATIONS.validate_json(row["invocations"]) if row["invocations"] else None
            fact.runs.append(RunRow(row["kind"], started, row["outcome"], row["connect_ms"], row["tool_count"], invocations))
            if row["outcome"] in ("ok", "auth_required"):
                fact.auth_history.append((started, bool(row["auth"]) or row["outcome"] == "auth_required"))
        # Tool lists are parsed only around a change of hash: a surface that never changed needs none.
        history: dict[str, list[tuple[int, str, str]]] = {}
        for row in db.query(
            f"select server_id, id, captured_at, content_hash from tool_snapshots where server_id in ({marks}) order by captured_at, id", ids
        ):
            history.setdefault(row["server_id"], []).append((row["id"], row["captured_at"], row["content_hash"]))
        wanted: set[int] = set()
        for rows in history.values():
            for (id_a, _, hash_a), (id_b, _, hash_b) in zip(rows, rows[1:]):
                if hash_a != hash_b:
                    wanted.update((id_a, id_b))
        parsed: dict[int, list[dict[str, Any]]] = {}
        wanted_ids = sorted(wanted)
        for start in range(0, len(wanted_ids), 500):
            part = wanted_ids[start : start + 500]
            for row in db.query(f"select id, tools from tool_snapshots where id in ({','.join('?' for _ in part)})", part):
                parsed[row["id"]] = from_json(row["tools"])
        for server_id, rows in history.items():
            facts[server_id].snapshots = [Snapshot(parse_iso(at), digest, parsed.get(id_)) for id_, at, digest in rows]
        for row in db.query(f"select * from judgements where server_id in ({marks}) order by tool_name, model", ids):
            facts[row["server_id"]].judgements.append(Judgement.model_validate({k: v for k, v in row.items() if k != "id"}))
        for row in db.query(f"select server_id, rubric, composite from score_history where day = ? and server_id in ({marks})", [yesterday, *ids]):
            facts[row["server_id"]].yesterday[row["rubric"]] = row["composite"]
        for server in group:
            fact = facts[server.id]
            fact.duplicate_description = _normalise(fact.description) in duplicates
            yield fact


def _stored(model, text: str, where: str):
    """Read a stored model, or say exactly which row of the database is damaged."""
    try:
        return model.model_validate_json(text)
    except ValueError as exc:
        raise ScoreboardDatabaseError(f"{where}: stored evidence cannot be read ({str(exc).splitlines()[0][:200]})") from exc


def _latest(db: Database, table: str, columns: str, where: str, marks: str, ids: list[str]):
    """The newest row (highest id) per server of `table` matching `where`, for the servers in `ids`."""
    return db.query(
        f"select t.server_id, t.id, {', '.join('t.' + c.strip() for c in columns.split(','))} from {table} t join "
        f"(select server_id, max(id) id from {table} where {where} and server_id in ({marks}) group by server_id) latest on t.id = latest.id",
        ids,
    )


def _normalise(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def duplicate_descriptions(db: Database, threshold: int = 3) -> set[str]:
    """Descriptions shared by `threshold`+ active servers (seed 000's Duplicate Description flag)."""
    counts: dict[str, int] = {}
    for row in db.query("select description from servers where is_active = 1 and description is not null and description != ''"):
        key = _normalise(row["description"])
        counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= threshold}
