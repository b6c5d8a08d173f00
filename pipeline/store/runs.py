"""Stage runs: started, finished, failed, or found abandoned by the next run of the stage."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline.clean import clean, clean_text
from pipeline.models import StageReport
from pipeline.store.encoding import dumps, iso, parse_iso


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
                "finished_at": iso(now),
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
    """The last run, and the last successful run, of each stage and transport (`--transport` in its arguments), newest first.

    Each row is a `runs` row with its counts parsed, `transport` (None when the run was not limited to one) and `last`
    (1 for the last run of its stage and transport, 0 for an earlier run that is its last success).
    """
    rows = db.query(
        "select * from (select r.*, json_extract(r.args, '$.transport') transport, json_extract(r.args, '$.shard') shard, "
        "row_number() over (partition by stage, json_extract(r.args, '$.transport') order by started_at desc, id desc) place, "
        "row_number() over (partition by stage, json_extract(r.args, '$.transport'), status = 'ok' order by started_at desc, id desc) "
        "place_ok from runs r) where place = 1 or (status = 'ok' and place_ok = 1) order by started_at desc, id desc"
    )
    return [{**row, "counts": json.loads(row["counts"] or "{}"), "last": int(row["place"] == 1)} for row in rows]


def first_run_at(db: Database) -> datetime | None:
    """When the database's history of runs begins (the start of its first run of any stage)."""
    first = db.execute("select min(started_at) from runs").fetchone()[0]
    return parse_iso(first) if first else None
