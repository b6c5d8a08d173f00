"""What fleet operations read and write: when each stage last examined each server, priority rescore requests, and the
retention of raw fast-probe runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Iterable

from sqlite_utils import Database

from pipeline.store.encoding import in_chunks, iso, parse_iso
from pipeline.store.scoring import FAILED_SQL, REACHED_SQL


def mark_examined(db: Database, stage: str, server_ids: Iterable[str], now: datetime) -> None:
    """Say that `stage` examined these servers at `now`, whether or not it wrote evidence (an unchanged source writes none)."""
    rows = [{"server_id": sid, "stage": stage, "examined_at": iso(now)} for sid in server_ids]
    if rows:
        with db.atomic():
            db["examined"].upsert_all(rows, pk=("server_id", "stage"))


def last_examined(db: Database, stage: str) -> dict[str, datetime]:
    """When `stage` last examined each server it has examined."""
    return {sid: parse_iso(at) for sid, at in db.execute("select server_id, examined_at from examined where stage = ?", [stage]).fetchall()}


def last_analysed(db: Database) -> dict[str, datetime]:
    """When each server's stored analysis was made (the freshness sweep's age: an unchanged source keeps its old one)."""
    return {sid: parse_iso(at) for sid, at in db.execute("select server_id, max(analyzed_at) from analyses group by server_id").fetchall()}


def sandboxed_versions(db: Database) -> dict[str, str | None]:
    """The package version each server's latest sandbox probe ran."""
    return dict(db.execute(
        "select p.server_id, json_extract(p.evidence, '$.package_version') from probe_runs p join (select server_id, max(id) id "
        "from probe_runs where kind = 'sandbox' group by server_id) latest on p.id = latest.id").fetchall())


def last_rescore(db: Database, server_id: str) -> datetime | None:
    row = db.execute("select max(requested_at) from rescore_requests where server_id = ? and status = 'accepted'", [server_id]).fetchone()
    return parse_iso(row[0]) if row and row[0] else None


def record_rescore(db: Database, server_id: str, now: datetime, requested_by: str | None, status: str) -> None:
    with db.atomic():
        db["rescore_requests"].insert({"server_id": server_id, "requested_at": iso(now), "requested_by": requested_by, "status": status})


def prune_fast_runs(db: Database, before: datetime, only: Callable[[str], bool] | None = None) -> int:
    """Delete raw fast-probe runs started before `before` (of the servers `only` accepts, when given: a monitor shard prunes
    its shard's servers, so twenty shards do not each delete, and carry to the merge, the whole fleet's), in one
    transaction; their daily rollups (probe_daily) stay.

    What counts failed attempts (pipeline.outcomes) reads raw runs, so first the pruned failures since the server last
    answered are folded into `fast_failures` per day (count, first, last), and rows folded earlier that a newer answer
    made moot are dropped; each server's latest fast run and its last answered one are kept (deviation 88). No table holds
    a probe run's id, so deleting one checks nothing else."""
    candidates = db.execute("select id, server_id from probe_runs where kind = 'fast' and started_at < ?", [iso(before)]).fetchall()
    if only is not None:
        candidates = [(id_, server_id) for id_, server_id in candidates if only(server_id)]
    if not candidates:  # most monitor runs: nothing has aged past the window since the last one
        return 0
    doomed: list[int] = []
    with db.atomic():
        for servers, marks in in_chunks(sorted({server_id for _, server_id in candidates}), 250):
            answered = (f"select server_id, max(started_at) at from probe_runs where server_id in ({marks}) and {REACHED_SQL} "
                        "group by server_id")
            keep = {row[0] for row in db.execute(
                f"select max(id) from probe_runs where server_id in ({marks}) and kind = 'fast' and {REACHED_SQL} group by server_id "
                f"union select max(id) from probe_runs where server_id in ({marks}) and kind = 'fast' group by server_id", [*servers, *servers])}
            chosen = set(servers)
            part = [id_ for id_, server_id in candidates if server_id in chosen and id_ not in keep]
            doomed += part
            for ids, id_marks in in_chunks(part):
                folded = db.execute(
                    f"select p.server_id, substr(p.started_at, 1, 10) day, count(*), min(p.started_at), max(p.started_at) from probe_runs p "
                    f"left join ({answered}) a on a.server_id = p.server_id where p.id in ({id_marks}) and {FAILED_SQL} "
                    f"and (a.at is null or p.started_at > a.at) group by p.server_id, day", [*servers, *ids]).fetchall()
                for server_id, day, failed, first, last in folded:
                    db.execute("insert into fast_failures (server_id, day, failed, first_at, last_at) values (?, ?, ?, ?, ?) "
                               "on conflict (server_id, day) do update set failed = failed + excluded.failed, "
                               "first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)",
                               [server_id, day, failed, first, last])
                db.execute(f"delete from probe_runs where id in ({id_marks})", ids)
            db.execute(f"delete from fast_failures where rowid in (select f.rowid from fast_failures f join ({answered}) a "
                       "on a.server_id = f.server_id where f.last_at < a.at)", servers)
    return len(doomed)
