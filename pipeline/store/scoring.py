"""What the score stage reads: a chunk of servers' stored evidence, one query per table, decoded.

The score stage builds its facts from this alone; rescoring the whole fleet costs a few hundred
queries rather than several per server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import from_json
from sqlite_utils import Database

from pipeline.models import AnalysisResult, Invocation, Judgement, ProbeResult
from pipeline.outcomes import ANSWERED, GATED, NOT_MEASURED, SANDBOX_CLASSES, SANDBOX_START, Attempts, Reading, reading
from pipeline.store.connection import ScoreboardDatabaseError
from pipeline.store.encoding import dumps, in_chunks, iso, parse_iso, placeholders
from pipeline.store.evidence import WITH_TOOLS, stored_probe
from pipeline.text import squash

_INVOCATIONS = TypeAdapter(list[Invocation])  # one Rust-side parse per run, not one model per call


@dataclass
class ScoringEvidence:
    """Stored evidence of some servers, per server id; times parsed, JSON decoded."""

    probes: dict[str, tuple[int, ProbeResult]] = field(default_factory=dict)  # latest deep or sandbox probe
    analyses: dict[str, tuple[int, AnalysisResult]] = field(default_factory=dict)  # latest analysis
    daily: list[tuple[str, str, int, int, int, dict[str, int]]] = field(default_factory=list)  # (server, day, runs, reachable, ok, hist), fast
    # (server, kind, started, outcome, connect ms, tool count, invocations, auth required) of deep and sandbox runs, oldest first
    runs: list[tuple[str, str, datetime, str, float | None, int | None, list[Invocation] | None, Any]] = field(default_factory=list)
    snapshots: dict[str, list[tuple[datetime, str, list[dict[str, Any]] | None]]] = field(default_factory=dict)  # oldest first
    judgements: list[Judgement] = field(default_factory=list)
    composites: list[tuple[str, str, float | None]] = field(default_factory=list)  # (server, rubric, composite) of one day's history
    attempts: dict[str, Attempts] = field(default_factory=dict)  # failed attempts since it last answered, where its latest probe failed


def scoring_evidence(db: Database, ids: list[str], *, fast_since_day: str, runs_since: datetime, history_day: str) -> ScoringEvidence:
    """The evidence of the servers `ids` (one `in (…)` clause's worth): latest probe and analysis, fast rollups from
    `fast_since_day`, other runs since `runs_since`, the changes of the tool surface, judgements, and the composites
    of `history_day`. Tool lists are parsed only where a surface changed: one that never did needs none."""
    marks = placeholders(ids)
    found = ScoringEvidence()
    for row in _latest(db, "probe_runs", "evidence", "q.kind in ('deep', 'sandbox')", "started_at", ids, joined=WITH_TOOLS):
        found.probes[row["server_id"]] = (row["id"], _stored(lambda text: stored_probe(text, row["tools"]), row["evidence"],
                                                             f"probe_runs row {row['id']} ({row['server_id']})"))
    for row in _latest(db, "analyses", "result", "1", "analyzed_at", ids):
        found.analyses[row["server_id"]] = (row["id"], _stored(AnalysisResult.model_validate_json, row["result"],
                                                               f"analyses row {row['id']} ({row['server_id']})"))
    found.daily = [
        (row[0], row[1], row[2], row[3], row[4], from_json(row[5]))
        for row in db.execute(
            f"select server_id, day, runs, reachable, ok, latency_hist from probe_daily where kind = 'fast' and server_id in ({marks}) and day >= ?",
            [*ids, fast_since_day],
        ).fetchall()
    ]
    for row in db.query(
        f"select server_id, kind, started_at, outcome, connect_ms, tool_count, json_extract(evidence, '$.invocations') invocations, "
        f"json_extract(evidence, '$.http.auth_required') auth from probe_runs "
        f"where server_id in ({marks}) and kind != 'fast' and started_at >= ? order by started_at, id",
        [*ids, iso(runs_since)],
    ):
        invocations = _INVOCATIONS.validate_json(row["invocations"]) if row["invocations"] else None
        found.runs.append((row["server_id"], row["kind"], parse_iso(row["started_at"]), row["outcome"], row["connect_ms"], row["tool_count"],
                           invocations, row["auth"]))
    found.snapshots = _snapshots(db, marks, ids)
    failing = [sid for sid, (_, probe) in found.probes.items() if reading(probe.kind, probe.outcome.value) is Reading.failed]
    failing += [row["server_id"] for row in _latest(db, "probe_runs", "outcome", "q.kind = 'fast'", "started_at", ids)
                if reading("fast", row["outcome"]) is Reading.failed and row["server_id"] not in failing]
    found.attempts = failed_attempts(db, failing, runs_since)
    for row in db.query(f"select * from judgements where server_id in ({marks}) order by tool_name, model", ids):
        found.judgements.append(Judgement.model_validate({k: v for k, v in row.items() if k != "id"}))
    found.composites = db.execute(
        f"select server_id, rubric, composite from score_history where day = ? and server_id in ({marks})", [history_day, *ids]
    ).fetchall()
    return found


def _listed(outcomes: frozenset[str]) -> str:
    return ", ".join(f"'{o}'" for o in sorted(outcomes))


# pipeline.outcomes' reading in SQL: the server answered (handshake or gate); it failed by its own doing.
REACHED_SQL = f"outcome in ({_listed(ANSWERED | GATED)})"
FAILED_SQL = (f"p.outcome not in ({_listed(ANSWERED | GATED | NOT_MEASURED | SANDBOX_CLASSES)}) "
               f"and not (p.kind = 'sandbox' and p.outcome in ({_listed(SANDBOX_START)}))")


def failed_attempts(db: Database, ids: list[str], since: datetime) -> dict[str, Attempts]:
    """Each server's failed attempts (deep, fast and sandbox probes) since `since` and after it last answered, with when
    it last answered; counted in SQL, so a server probed every five minutes costs no rows read into Python. Fast runs
    pruned after 48 hours count through their folded failures (store.fleet.prune_fast_runs)."""
    found: dict[str, Attempts] = {}
    for part, marks in in_chunks(ids, 250):  # each id is bound twice
        answered = dict(db.execute(f"select server_id, max(started_at) from probe_runs where server_id in ({marks}) and started_at >= ? "
                                   f"and {REACHED_SQL} group by server_id", [*part, iso(since)]).fetchall())
        for server_id in part:
            found[server_id] = Attempts(answered_at=parse_iso(answered[server_id]) if server_id in answered else None)
        last_answer = (f"(select server_id, max(started_at) at from probe_runs where server_id in ({marks}) and started_at >= ? "
                       f"and {REACHED_SQL} group by server_id) a")
        counted = db.execute(
            f"select p.server_id, count(*), min(p.started_at), max(p.started_at) from probe_runs p left join {last_answer} "
            f"on a.server_id = p.server_id where p.server_id in ({marks}) and p.started_at >= ? and {FAILED_SQL} "
            f"and (a.at is null or p.started_at > a.at) group by p.server_id",
            [*part, iso(since), *part, iso(since)],
        ).fetchall()
        for server_id, count, first, last in counted:
            found[server_id] = Attempts(count, parse_iso(first), parse_iso(last), found[server_id].answered_at)
        # Pruned fast failures since the last answer, folded per day (deviation 88): a day is in the window if its last is.
        folded = db.execute(
            f"select f.server_id, sum(f.failed), min(f.first_at), max(f.last_at) from fast_failures f left join {last_answer} "
            f"on a.server_id = f.server_id where f.server_id in ({marks}) and f.last_at >= ? and (a.at is null or f.first_at > a.at) "
            f"group by f.server_id",
            [*part, iso(since), *part, iso(since)],
        ).fetchall()
        for server_id, count, first, last in folded:
            known = found[server_id]
            found[server_id] = Attempts(known.failed + count, min(filter(None, (known.first, parse_iso(first)))),
                                        max(filter(None, (known.last, parse_iso(last)))), known.answered_at)
    return found


def _snapshots(db: Database, marks: str, ids: list[str]) -> dict[str, list[tuple[datetime, str, list[dict[str, Any]] | None]]]:
    """Each server's tool-surface changes (the tool_snapshots view), oldest first; a list parsed only when the server has
    more than one (a surface that never changed needs none)."""
    history: dict[str, list[tuple[str, str]]] = {}
    for row in db.query(
        f"select server_id, captured_at, content_hash from tool_snapshots where server_id in ({marks}) order by captured_at, probe_run_id", ids
    ):
        history.setdefault(row["server_id"], []).append((row["captured_at"], row["content_hash"]))
    wanted = sorted({(server_id, digest) for server_id, rows in history.items() if len(rows) > 1 for _, digest in rows})
    parsed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for part, _ in in_chunks(wanted):
        for row in db.execute("select l.server_id, l.content_hash, l.tools from json_each(?) w join tool_lists l "
                              "on l.server_id = w.value ->> 0 and l.content_hash = w.value ->> 1", [dumps(part)]):
            parsed[(row[0], row[1])] = from_json(row[2])
    return {server_id: [(parse_iso(at), digest, parsed.get((server_id, digest))) for at, digest in rows] for server_id, rows in history.items()}


def _stored(read, text: str, where: str):
    """Read a stored model, or say exactly which row of the database is damaged."""
    try:
        return read(text)
    except ValueError as exc:
        raise ScoreboardDatabaseError(f"{where}: stored evidence cannot be read ({str(exc).splitlines()[0][:200]})") from exc


def _latest(db: Database, table: str, columns: str, where: str, when: str, ids: list[str], joined: str = ""):
    """The newest row per server of `table` (as `p`) matching `where`, for the servers in `ids`: latest by its time `when`,
    then by id, as the pages read it (store.evidence.latest_probe), so a card and its page never name different evidence.
    `joined`: a join that adds the row's tool list (store.evidence.WITH_TOOLS)."""
    return db.query(
        f"select p.server_id, p.id, {', '.join('p.' + c.strip() for c in columns.split(','))}{', l.tools' if joined else ''} "
        f"from json_each(?) s join {table} p "
        f"on p.id = (select q.id from {table} q where q.server_id = s.value and {where} order by q.{when} desc, q.id desc limit 1) {joined}",
        [dumps(ids)],
    )


def duplicate_descriptions(db: Database, threshold: int = 3) -> set[str]:
    """Descriptions (squashed) shared by `threshold`+ active servers (seed 000's Duplicate Description flag)."""
    counts: dict[str, int] = {}
    for row in db.query("select description from servers where is_active = 1 and description is not null and description != ''"):
        key = squash(row["description"])
        counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= threshold}
