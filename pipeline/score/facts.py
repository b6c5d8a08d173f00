"""Facts: everything the rules may read about one server, gathered from stored evidence.

Gathering is the only step that touches the database; rules then run on Facts alone. Servers
are gathered in chunks with one query per table per chunk, so rescoring the whole fleet costs a
few hundred queries rather than several per server, and memory stays bounded by the chunk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator, Sequence

from sqlite_utils import Database

from pipeline.db import iso, parse_iso
from pipeline.models import AnalysisResult, Invocation, Judgement, ProbeResult, Server

RELIABILITY_WINDOW = timedelta(days=7)  # seed 000: the 7-day figures feed the composite
OUTSIDE_IN_WINDOW = timedelta(days=30)  # seed 003: 30 days of runs
CHUNK = 400


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
    tools: list[dict[str, Any]] | None = None  # loaded only where the hash changed


@dataclass
class Facts:
    server: Server
    now: datetime
    probe: ProbeResult | None = None
    probe_ref: str | None = None
    analysis: AnalysisResult | None = None
    analysis_ref: str | None = None
    fast: dict[str, Any] = field(default_factory=lambda: {"total": 0, "ok": 0, "latencies_ms": []})
    judgements: list[Judgement] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)  # 30-day window, oldest first
    snapshots: list[Snapshot] = field(default_factory=list)  # every capture, oldest first
    auth_history: list[tuple[datetime, bool]] = field(default_factory=list)  # (when, auth required) per deep probe
    duplicate_description: bool = False  # the same description on 3+ servers (fleet-level fact)
    yesterday: dict[str, float | None] = field(default_factory=dict)  # rubric -> composite of yesterday's snapshot

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


def gather_many(db: Database, servers: Sequence[Server], now: datetime, chunk: int = CHUNK) -> Iterator[Facts]:
    """Facts for each server, in order, reading the database one chunk of servers at a time."""
    duplicates = duplicate_descriptions(db)
    today = now.astimezone(timezone.utc).date()
    yesterday = (today - timedelta(days=1)).isoformat()
    for group in _chunks(servers, chunk):
        marks, ids = _in(s.id for s in group)
        facts = {s.id: Facts(server=s, now=now) for s in group}
        for row in db.query(
            f"select p.server_id, p.id, p.evidence from probe_runs p join (select server_id, max(id) id from probe_runs "
            f"where kind in ('deep', 'sandbox') and server_id in ({marks}) group by server_id) latest on p.id = latest.id",
            ids,
        ):
            fact = facts[row["server_id"]]
            fact.probe = ProbeResult.model_validate_json(row["evidence"])
            fact.probe_ref = f"probe_runs:{row['id']}"
        for row in db.query(
            f"select a.server_id, a.id, a.result from analyses a join (select server_id, max(id) id from analyses "
            f"where server_id in ({marks}) group by server_id) latest on a.id = latest.id",
            ids,
        ):
            fact = facts[row["server_id"]]
            fact.analysis = AnalysisResult.model_validate_json(row["result"])
            fact.analysis_ref = f"analyses:{row['id']}"
        since7, since30 = iso(now - RELIABILITY_WINDOW), iso(now - OUTSIDE_IN_WINDOW)
        for row in db.query(
            f"select server_id, kind, started_at, outcome, connect_ms, tool_count, "
            f"case when kind != 'fast' then json_extract(evidence, '$.invocations') end invocations, "
            f"case when kind != 'fast' then json_extract(evidence, '$.http.auth_required') end auth "
            f"from probe_runs where server_id in ({marks}) and started_at >= ? order by started_at, id",
            [*ids, since30],
        ):
            fact = facts[row["server_id"]]
            started = parse_iso(row["started_at"])
            invocations = [Invocation.model_validate(i) for i in json.loads(row["invocations"])] if row["invocations"] else None
            fact.runs.append(RunRow(row["kind"], started, row["outcome"], row["connect_ms"], row["tool_count"], invocations))
            if row["kind"] == "fast" and row["started_at"] >= since7:
                fact.fast["total"] += 1
                if row["outcome"] == "ok":
                    fact.fast["ok"] += 1
                    if row["connect_ms"] is not None:
                        fact.fast["latencies_ms"].append(row["connect_ms"])
            if row["kind"] != "fast" and row["outcome"] in ("ok", "auth_required"):
                fact.auth_history.append((started, bool(row["auth"]) or row["outcome"] == "auth_required"))
        for fact in facts.values():
            fact.fast["latencies_ms"].sort()
        previous: dict[str, str] = {}
        for row in db.query(
            f"select server_id, captured_at, content_hash, tools from tool_snapshots where server_id in ({marks}) order by captured_at, id",
            ids,
        ):
            changed = previous.get(row["server_id"]) != row["content_hash"]
            previous[row["server_id"]] = row["content_hash"]
            facts[row["server_id"]].snapshots.append(
                Snapshot(parse_iso(row["captured_at"]), row["content_hash"], json.loads(row["tools"]) if changed else None)
            )
        for row in db.query(f"select * from judgements where server_id in ({marks}) order by tool_name, model", ids):
            facts[row["server_id"]].judgements.append(Judgement.model_validate({k: v for k, v in row.items() if k != "id"}))
        for row in db.query(f"select server_id, rubric, composite from score_history where day = ? and server_id in ({marks})", [yesterday, *ids]):
            facts[row["server_id"]].yesterday[row["rubric"]] = row["composite"]
        for server in group:
            fact = facts[server.id]
            fact.duplicate_description = _normalise(fact.description) in duplicates
            yield fact


def _normalise(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def duplicate_descriptions(db: Database, threshold: int = 3) -> set[str]:
    """Descriptions shared by `threshold`+ active servers (seed 000's Duplicate Description flag)."""
    counts: dict[str, int] = {}
    for row in db.query("select description from servers where is_active = 1 and description is not null and description != ''"):
        key = _normalise(row["description"])
        counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= threshold}
