"""`scoreboard merge`: fold shard databases into the main database, all of them in one transaction, each at most once.

Every shard is read and checked before anything is written; one bad shard (unreadable, corrupt, not a shard, another
schema or engine, a second claim on the same shard of a stage run) refuses the whole invocation and the main database
is left as it was. Integer ids are local to a database: a shard's new rows get new ids here, and the rows that hold
them (a probe's stage run) follow. Rows with a natural key (a unique index, or a primary key that is not
a row id) are upserted on it; a day's probe rollup adds the shard's share (deviation 84). The ids of merged shards
are kept in `shard_merges`, so a shard given again is skipped.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from sqlite_utils import Database

from pipeline import ENGINE_VERSION, store
from pipeline.fleet.tables import ADDITIVE, Table, parents_first, quoted, tables
from pipeline.models import StageReport
from pipeline.progress import Progress
from pipeline.store.connection import SQLITE_HEADER, applied_migrations


class MergeRefused(Exception):
    """Nothing was merged: the message names every shard that was refused, and why."""


@dataclass
class ShardFile:
    path: Path
    conn: sqlite3.Connection
    manifest: dict[str, Any]

    @property
    def claim(self) -> tuple[str, str, str]:
        return self.manifest["stage"], self.manifest["base"]["fingerprint"], self.manifest["shard"]


@dataclass
class MergeReport:
    merged: int = 0
    skipped: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary_line(self) -> str:
        rows = ", ".join(f"{table} {count}" for table, count in sorted(self.rows.items())) or "no rows"
        return f"merge done: shards {self.merged} merged, {len(self.skipped)} already merged; rows {rows}; {self.seconds:.1f}s"


def read_shard(path: Path) -> ShardFile:
    """Open a shard database read-only and read its manifest, or refuse it with a reason that names the file."""
    if not path.is_file():
        raise MergeRefused(f"{path}: no such shard database file")
    with path.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise MergeRefused(f"{path}: not a shard database (not even a SQLite file)")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        problems = [r[0] for r in conn.execute("pragma quick_check").fetchall()]
        if problems != ["ok"]:
            raise MergeRefused(f"{path}: the shard database is corrupt: {'; '.join(problems[:3])}")
        names = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        if not {"shard_manifest", "shard_rows"} <= names:
            raise MergeRefused(f"{path}: a SQLite database, but not a shard database (it has no shard manifest)")
        rows = conn.execute("select * from shard_manifest").fetchall()
        if len(rows) != 1:
            raise MergeRefused(f"{path}: its shard manifest holds {len(rows)} rows, not one")
        manifest = dict(zip([d[0] for d in conn.execute("select * from shard_manifest").description], rows[0]))
        for key in ("migrations", "base", "rows"):
            manifest[key] = json.loads(manifest[key])
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MergeRefused(f"{path}: cannot be read as a shard database: {exc}") from exc
    except (MergeRefused, ValueError, KeyError) as exc:
        conn.close()
        raise exc if isinstance(exc, MergeRefused) else MergeRefused(f"{path}: its shard manifest cannot be read: {exc}") from exc
    return ShardFile(path, conn, manifest)


def merge_shards(db: Database, paths: Sequence[Path], now: datetime, progress: Progress | None = None, complete: bool = False) -> MergeReport:
    """Fold the shards in; with `complete`, only when every shard 1..N of each stage run is given or was merged before."""
    started = time.monotonic()
    report = MergeReport()
    opened: list[ShardFile] = []
    problems: list[str] = []
    try:
        for path in paths:
            try:
                opened.append(read_shard(Path(path)))
            except MergeRefused as refusal:
                problems.append(str(refusal))
        todo = _to_merge(db, opened, problems, report)
        if complete:
            problems += _missing(db, opened)
        if problems:
            raise MergeRefused("\n".join(problems) + "\nnothing was merged; the database is unchanged")
        if not todo:  # every shard was merged before: the database does not change, not even by a runs row
            report.seconds = time.monotonic() - started
            return report
        progress = progress or Progress("merge", len(todo))
        with db.atomic():
            for shard in todo:
                try:
                    rows = _apply(db, shard)
                except (sqlite3.DatabaseError, ValueError) as exc:
                    raise MergeRefused(f"{shard.path}: {exc}\nnothing was merged; the database is unchanged") from exc
                m = shard.manifest
                db["shard_merges"].insert({"shard_id": m["shard_id"], "stage": m["stage"], "shard": m["shard"], "base": m["base"]["fingerprint"],
                                           "engine_version": m["engine_version"], "created_at": m["created_at"], "merged_at": store.iso(now),
                                           "rows": store.dumps(rows)})
                for table, count in rows.items():
                    report.rows[table] = report.rows.get(table, 0) + count
                report.merged += 1
                progress.step(str(shard.path), f"shard {m['shard']} of {m['stage']}: {sum(rows.values())} rows")
            report.seconds = time.monotonic() - started
            run_id = store.start_run(db, "merge", {"shards": [str(s.path) for s in todo]}, now)
            store.finish_run(db, run_id, StageReport(stage="merge", counts={"shards": report.merged, "already_merged": len(report.skipped),
                                                                             **report.rows}, seconds=report.seconds), now)
    finally:
        for shard in opened:
            shard.conn.close()
    return report


def _to_merge(db: Database, opened: list[ShardFile], problems: list[str], report: MergeReport) -> list[ShardFile]:
    """The shards to fold in, in order; problems gets every refusal, report.skipped every shard merged before."""
    migrations = applied_migrations(db)
    by_id: dict[str, Path] = {}
    claims: dict[tuple[str, str, str], Path] = {}
    counts: dict[tuple[str, str], set[int]] = {}
    todo: list[ShardFile] = []
    for shard in opened:
        m = shard.manifest
        if m["engine_version"] != ENGINE_VERSION:
            problems.append(f"{shard.path}: made by engine {m['engine_version']}, this is engine {ENGINE_VERSION}")
            continue
        if m["migrations"] != migrations:
            problems.append(f"{shard.path}: made at schema level {len(m['migrations'])} ({(m['migrations'] or ['none'])[-1]}), "
                            f"this database is at {len(migrations)} ({migrations[-1]})")
            continue
        if m["shard_id"] in by_id:
            report.skipped.append(f"{shard.path}: the same shard as {by_id[m['shard_id']]}")
            continue
        by_id[m["shard_id"]] = shard.path
        done = db.execute("select merged_at from shard_merges where shard_id = ?", [m["shard_id"]]).fetchone()
        if done:
            report.skipped.append(f"{shard.path}: already merged at {done[0]}")
            continue
        stage, base, label = shard.claim
        if shard.claim in claims:
            problems.append(f"{shard.path}: claims shard {label} of the same {stage} run as {claims[shard.claim]}")
            continue
        claims[shard.claim] = shard.path
        earlier = db.execute("select shard_id, merged_at from shard_merges where stage = ? and base = ? and shard = ?",
                             [stage, base, label]).fetchone()
        if earlier:
            problems.append(f"{shard.path}: shard {label} of this {stage} run was already merged from another shard database "
                            f"(shard id {earlier[0]}, at {earlier[1]})")
            continue
        counts.setdefault((stage, base), set()).add(m["shard_count"])
        todo.append(shard)
    for (stage, base), ns in counts.items():
        merged = {int(r[0].split("/")[1]) for r in db.execute("select shard from shard_merges where stage = ? and base = ?", [stage, base])}
        if len(ns | merged) > 1:
            problems.append(f"shards of one {stage} run split it {' and '.join(str(n) for n in sorted(ns | merged))} ways: "
                            f"{', '.join(str(s.path) for s in todo if s.claim[:2] == (stage, base))}")
    return todo


def _missing(db: Database, opened: list[ShardFile]) -> list[str]:
    """Each stage run whose shards, given here or merged before, leave some of 1..N out: a shard job that failed."""
    runs: dict[tuple[str, str, int], set[int]] = {}
    for shard in opened:
        m = shard.manifest
        runs.setdefault((m["stage"], m["base"]["fingerprint"], m["shard_count"]), set()).add(m["shard_index"])
    found = []
    for (stage, base, n), present in sorted(runs.items()):
        present |= {int(r[0].split("/")[0]) for r in db.execute("select shard from shard_merges where stage = ? and base = ?", [stage, base])}
        missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in present]
        if missing:
            found.append(f"the {stage} run in {n} shards (base {base}) is incomplete: shard {', '.join(missing)} missing")
    return found


def _apply(db: Database, shard: ShardFile) -> dict[str, int]:
    """Fold one shard's rows into the main database (inside the caller's transaction); rows applied per table."""
    ours = tables(db.conn)
    present = {r[0] for r in shard.conn.execute("select distinct tbl from shard_rows")}
    unknown = present - set(ours)
    if unknown:
        raise ValueError(f"rows for tables this database does not have: {', '.join(sorted(unknown))}")
    referenced = {parent for table in ours.values() for parent in table.parents.values()}
    ids: dict[str, dict[int, int]] = {}
    rows: dict[str, int] = {}
    order = parents_first(ours, present)
    for name in order:
        rows[name] = _apply_table(db.conn, shard.conn, ours[name], ids, keep_ids=name in referenced, deletes=False)
    for name in reversed(order):  # a row goes after the rows that hold its id (a pruned probe after its snapshots)
        rows[name] += _apply_table(db.conn, shard.conn, ours[name], ids, keep_ids=False, deletes=True)
    return {name: count for name, count in rows.items() if count}


def _apply_table(main: sqlite3.Connection, shard: sqlite3.Connection, table: Table, ids: dict[str, dict[int, int]], keep_ids: bool,
                 deletes: bool) -> int:
    """The shard's rows of one table: its deletions, or else its insertions and changes."""
    cols = table.columns
    name = quoted(table.name)
    mapped = ids.setdefault(table.name, {})
    count = 0
    batch: list[list[Any]] = []
    upsert = _upsert_sql(table)
    for row in shard.execute(f"select r.op, r.old, {', '.join('t.' + quoted(c) for c in cols)} from shard_rows r "
                             f"left join {name} t on t.rowid = r.rid where r.tbl = ? and (r.op = 'delete') = ? order by r.rid",
                             [table.name, deletes]):
        op, old, values = row[0], json.loads(row[1]) if row[1] else None, dict(zip(cols, row[2:]))
        count += 1
        for column, parent in table.parents.items():
            values[column] = ids.get(parent, {}).get(values[column], values[column])
        if op == "delete":
            main.execute(f"delete from {name} where {_where(table)}", [old[c] for c in _key(table)])
            continue
        if op == "update":
            _update(main, table, values, old)
            continue
        shard_id = values.pop("id") if table.surrogate else None
        if table.name in ADDITIVE or keep_ids:
            mapped_id = _insert_one(main, table, values)
            if shard_id is not None:
                mapped[shard_id] = mapped_id
        else:
            batch.append([values[c] for c in cols if c in values])
    if batch:
        main.executemany(upsert, batch)
    return count


def _insert_one(main: sqlite3.Connection, table: Table, values: dict[str, Any]) -> int | None:
    existing = _existing(main, table, values) if table.natural else None
    if existing is None:
        cursor = main.execute(f"insert into {quoted(table.name)} ({', '.join(quoted(c) for c in values)}) values ({', '.join('?' for _ in values)})",
                              list(values.values()))
        return cursor.lastrowid
    if table.name in ADDITIVE:
        values = {**values, **_added(table.name, existing, values, None)}
    changes = {c: v for c, v in values.items() if c not in table.natural}
    _set(main, table, changes, [existing[c] for c in _key(table)])
    return existing.get("id")


def _update(main: sqlite3.Connection, table: Table, values: dict[str, Any], old: dict[str, Any]) -> None:
    """A row the main database had when the shard started: the columns the stage changed (a rollup: its share) change here."""
    key = [old[c] for c in _key(table)]
    existing = main.execute(f"select * from {quoted(table.name)} where {_where(table)}", key).fetchone()
    if existing is None:
        raise ValueError(f"it changes a {table.name} row this database does not have ({', '.join(map(str, key))}): "
                         "the shard was made from another database")
    existing = dict(zip([d[0] for d in main.execute(f"select * from {quoted(table.name)} limit 0").description], existing))
    changes = {c: values[c] for c in table.columns if values[c] != old.get(c)}
    if table.name in ADDITIVE:
        changes.update(_added(table.name, existing, values, old))
    if changes:
        _set(main, table, changes, key)


def _added(name: str, existing: dict[str, Any], new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """Main's rollup plus the shard's share of it (the shard's row less what it started from)."""
    result: dict[str, Any] = {}
    for column, how in ADDITIVE[name].items():
        if how == "number":
            result[column] = (existing[column] or 0) + (new[column] or 0) - ((old or {}).get(column) or 0)
            continue
        total: dict[str, int] = {}
        for histogram, sign in ((existing[column], 1), (new[column], 1), ((old or {}).get(column), -1)):
            for bucket, n in json.loads(histogram or "{}").items():
                total[bucket] = total.get(bucket, 0) + sign * n
        result[column] = store.dumps({b: n for b, n in total.items() if n})
    return result


def _existing(main: sqlite3.Connection, table: Table, values: dict[str, Any]) -> dict[str, Any] | None:
    cursor = main.execute(f"select * from {quoted(table.name)} where {' and '.join(f'{quoted(c)} is ?' for c in table.natural)}",
                          [values[c] for c in table.natural])
    row = cursor.fetchone()
    return dict(zip([d[0] for d in cursor.description], row)) if row else None


def _key(table: Table) -> list[str]:
    return table.key or table.natural


def _where(table: Table) -> str:
    return " and ".join(f"{quoted(c)} = ?" for c in _key(table))


def _set(main: sqlite3.Connection, table: Table, changes: dict[str, Any], key: list[Any]) -> None:
    main.execute(f"update {quoted(table.name)} set {', '.join(f'{quoted(c)} = ?' for c in changes)} where {_where(table)}", [*changes.values(), *key])


def _upsert_sql(table: Table) -> str:
    """Insert a new row, or update the row with its natural key (a re-judged tool); a row without one is always new."""
    cols = [c for c in table.columns if not (table.surrogate and c == "id")]
    sql = f"insert into {quoted(table.name)} ({', '.join(quoted(c) for c in cols)}) values ({', '.join('?' for _ in cols)})"
    if not table.natural:
        return sql
    updates = [c for c in cols if c not in table.natural]
    return sql + f" on conflict ({', '.join(quoted(c) for c in table.natural)}) do " + (
        f"update set {', '.join(f'{quoted(c)} = excluded.{quoted(c)}' for c in updates)}" if updates else "nothing")
