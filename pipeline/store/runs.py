"""Stage runs: started, finished, failed, or found abandoned by the next run of the stage."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline.clean import clean, clean_text
from pipeline.models import StageReport
from pipeline.store.encoding import dumps, iso


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
