"""Stage runs: started, finished, failed, or found abandoned by the next run of the stage."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline.clean import clean, clean_text
from pipeline.models import StageReport
from pipeline.store.encoding import dumps, iso, parse_iso

RUNS_HORIZON = timedelta(days=31)  # a stage's runs read back from its last one: the longest cadence (weekly) four times over
_TRANSPORT = "json_extract(args, '$.transport')"


def start_run(db: Database, stage: str, args: dict[str, Any], now: datetime) -> int:
    with db.atomic():
        # A run of this stage still marked running was killed before it could say so.
        db.execute("update runs set status = 'abandoned' where stage = ? and status = 'running'", [stage])
        table = db["runs"]
        table.insert(
            {
                "stage": stage,
                "started_at": iso(now),
                "status": "running",
                "engine_version": ENGINE_VERSION,
                "args": dumps(clean(args)),
            }
        )
        return int(table.last_pk)


def finish_run(db: Database, run_id: int, report: StageReport, now: datetime) -> None:
    with db.atomic():
        db["runs"].update(
            run_id,
            {
                "finished_at": iso(report.finished_at or now),
                "status": "interrupted" if report.interrupted else "ok",
                "counts": dumps(report.counts),
                "failures": report.failures,
                "seconds": round(report.seconds, 3),
            },
        )


def fail_run(db: Database, run_id: int, error: str, now: datetime) -> None:
    """A stage stopped on an error (a damaged database, a full disk): say so, with the error."""
    with db.atomic():
        db["runs"].update(run_id, {"finished_at": iso(now), "status": "failed", "counts": dumps({"error": clean_text(error, 2000)})})


def latest_runs(db: Database) -> list[dict[str, Any]]:
    """The last run, and the last successful run, of each stage and transport (`--transport` in its arguments).

    Each row is a `runs` row with its counts parsed, `transport` and `shard` (None when the run was not limited to one) and
    `last` (1 for the last run of its stage and transport, 0 for an earlier run that is its last success). A transport
    shows when it ran in the RUNS_HORIZON before its stage's last run: a year of runs is not read to find last week's.
    """
    chosen: dict[int, int] = {}  # run id -> whether it is the last of its stage and transport
    for (stage,) in db.execute("select distinct stage from runs").fetchall():
        newest = db.execute("select max(started_at) from runs where stage = ?", [stage]).fetchone()[0]
        since = iso(parse_iso(newest) - RUNS_HORIZON)
        last: dict[str | None, int] = {}
        last_ok: dict[str | None, int] = {}
        for run_id, transport, status in db.execute(f"select id, {_TRANSPORT}, status from runs where stage = ? and started_at >= ? "
                                                    "order by started_at desc, id desc", [stage, since]):
            last.setdefault(transport, run_id)
            if status == "ok":
                last_ok.setdefault(transport, run_id)
        for transport in set(last) - set(last_ok):  # its last success is older: found walking back from the horizon
            older = db.execute(f"select id from runs where stage = ? and started_at < ? and status = 'ok' and {_TRANSPORT} is ? "
                               "order by started_at desc, id desc limit 1", [stage, since, transport]).fetchone()
            if older:
                last_ok[transport] = older[0]
        chosen.update({run_id: 0 for run_id in last_ok.values()})
        chosen.update({run_id: 1 for run_id in last.values()})
    rows = db.execute(f"select r.*, {_TRANSPORT} transport, json_extract(r.args, '$.shard') shard from json_each(?) c join runs r on r.id = c.value "
                      "order by r.started_at desc, r.id desc", [dumps(sorted(chosen))])
    columns = [d[0] for d in rows.description]
    return [{**row, "counts": json.loads(row["counts"] or "{}"), "last": chosen[row["id"]]} for row in (dict(zip(columns, r)) for r in rows)]


def first_run_at(db: Database) -> datetime | None:
    """When the database's history of runs begins (the start of its first run of any stage)."""
    first = db.execute("select min(started_at) from runs").fetchone()[0]
    return parse_iso(first) if first else None
