"""The soundness check before a database is published: every reason to refuse it, listed (methodology deviation 91).

Refused when the file is damaged (integrity_check), not a scoreboard database, or at a schema newer or older than this
engine's; when row counts collapsed against the previous published snapshot; when an active, measured server has no
score card under some rubric (listing-only servers have none by design, deviation 80); when a stage run since the
restore (or the last publish) failed, was abandoned or never finished. Reads only: the file is opened read-only and never migrated.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pydantic import BaseModel
from sqlite_utils import Database

from pipeline import store
from pipeline.fleet.snapshot_format import inspect_database
from pipeline.listing_only import listing_only

# A count below 90% of the previous snapshot's, by more than 5 rows, is a collapse (deviation 91). Raw probe runs are not
# compared: they are kept 48 hours and fall by design.
COLLAPSE_FLOOR = 0.9
COLLAPSE_SLACK = 5
COMPARED = ("active_servers", "scored_servers", "analyses", "probe_daily", "score_history")
UNFINISHED = ("failed", "abandoned", "running")


class Verdict(BaseModel):
    reasons: list[str]  # empty: sound
    notes: list[str]
    counts: dict[str, int]
    migrations: list[str]

    @property
    def sound(self) -> bool:
        return not self.reasons


def check(path: Path, baseline: dict[str, int] | None, baseline_from: str, rubrics: list[str]) -> Verdict:
    facts = inspect_database(path)
    if facts.problems:
        return Verdict(reasons=facts.problems, notes=[], counts=facts.counts, migrations=facts.migrations)
    reasons: list[str] = []
    notes: list[str] = []
    if facts.missing_migrations:
        reasons.append(f"its schema is older than this engine's: it lacks {', '.join(facts.missing_migrations)} (a database no stage of this "
                       "engine has opened)")
    if baseline is None:
        notes.append("no previous snapshot to compare row counts with (a first run, or a database that was never restored)")
    else:
        reasons += collapsed(facts.counts, baseline, baseline_from)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        db = Database(conn)
        reasons += missing_scores(db, rubrics)
        reasons += unfinished_runs(db)
    finally:
        conn.close()
    return Verdict(reasons=reasons, notes=notes, counts=facts.counts, migrations=facts.migrations)


def collapsed(counts: dict[str, int], baseline: dict[str, int], baseline_from: str) -> list[str]:
    found = []
    for key in COMPARED:
        before, now = baseline.get(key), counts.get(key)
        if not before or now is None:
            continue
        if now < before * COLLAPSE_FLOOR and before - now > COLLAPSE_SLACK:
            found.append(f"{key} fell from {before:,} to {now:,} ({now / before:.0%} of {baseline_from}; the floor is "
                         f"{COLLAPSE_FLOOR:.0%})")
    return found


def missing_scores(db: Database, rubrics: list[str]) -> list[str]:
    """Active servers with something to measure that lack a card under one of the rubrics."""
    carded: dict[str, set[str]] = {}
    for row in db.query("select server_id, rubric from scores"):
        carded.setdefault(row["server_id"], set()).add(row["rubric"])
    lacking = {s.id: sorted(set(rubrics) - carded.get(s.id, set())) for s in store.active_servers(db) if not listing_only(s)}
    lacking = {k: v for k, v in lacking.items() if v}
    if not lacking:
        return []
    shown = ", ".join(f"{k} ({', '.join(v)})" for k, v in sorted(lacking.items())[:5])
    return [f"{len(lacking):,} active measured servers have no score card under every rubric: {shown}{', …' if len(lacking) > 5 else ''} "
            "(run `scoreboard score`)"]


def unfinished_runs(db: Database) -> list[str]:
    """Stage runs since the database was restored or last published (or each stage's last run, if neither) that did not end well."""
    restored = next(db.query("select max(id) id from runs where stage in ('restore', 'publish') and status = 'ok'"))["id"]
    if restored is not None:
        rows = db.query("select * from runs where id > ? and stage not in ('restore', 'publish') order by id", [restored])
    else:
        rows = db.query("select * from runs where id in (select max(id) from runs group by stage) order by id")
    found = []
    for row in rows:
        if row["status"] in UNFINISHED:
            error = json.loads(row["counts"] or "{}").get("error") if row["status"] == "failed" else None
            found.append(f"the {row['stage']} run {row['id']} (started {row['started_at']}) {_status(row['status'])}"
                         + (f": {error}" if error else ""))
    return found


def _status(status: str) -> str:
    return {"failed": "failed", "abandoned": "was abandoned (killed before it could say how it ended)",
            "running": "never finished"}[status]


def descent_baseline(path: Path) -> tuple[dict[str, int] | None, str]:
    """The row counts of the snapshot this database descends from (recorded when it was restored or published), and its name."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("select args from runs where stage in ('restore', 'publish') and status = 'ok' order by id desc limit 1").fetchone()
    except sqlite3.DatabaseError:
        return None, "no snapshot"
    finally:
        conn.close()
    args = json.loads(row[0]) if row else {}
    if not args.get("snapshot"):
        return None, "no snapshot"
    return args.get("counts"), f"the snapshot {args['snapshot']} ({args.get('from') or args.get('to')})"
