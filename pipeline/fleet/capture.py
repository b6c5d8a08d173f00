"""A shard database: a stage runs on a private copy of the main database, and only what it added, changed or deleted is kept.

The main database (--db) is read once, by SQLite's online backup into the copy, and never written. Triggers installed in
the copy note every row the stage inserts, updates or deletes, and keep a changed row's values from before its first
change; once the stage ends, those rows (and the old values of changed ones) go into the shard database with a
manifest, and the copy is removed. The shard holds the same tables as the main database, so it reads like one.

In place (`--shard-in-place`, deviation 108), --db is a disposable restored copy (a workflow's shard job): the triggers go on
it directly and the stage writes it, which saves the copy and its check (about 25 s at 2.8 GB); the shard written is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import uuid
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from pipeline import ENGINE_VERSION, store
from pipeline.fleet.shards import Shard
from pipeline.fleet.tables import quoted, tables
from pipeline.store.connection import applied_migrations

MANIFEST = ("create table shard_manifest (shard_id text primary key, stage text not null, shard text not null, shard_index integer not null, "
            "shard_count integer not null, engine_version text not null, migrations text not null, base text not null, rows text not null, "
            "created_at text not null)")
ROWS = "create table shard_rows (tbl text not null, rid integer not null, op text not null, old text, primary key (tbl, rid, op))"


class ShardFailed(Exception):
    """The main database could not be copied, or the shard could not be written."""


@dataclass
class Captured:
    path: Path
    rows: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    copy_seconds: float = 0.0
    extract_seconds: float = 0.0
    in_place: bool = False

    def line(self, shard: Shard, stage: str) -> str:
        rows = ", ".join(f"{table} {count}" for table, count in sorted(self.rows.items())) or "no rows"
        setup = "captured in place (no copy)" if self.in_place else "copy of the main database"
        return (f"shard {shard} of {stage} written to {self.path} ({self.bytes / 1e6:.2f} MB): {rows}; "
                f"{setup} {self.copy_seconds:.1f}s, extraction {self.extract_seconds:.1f}s")


@contextmanager
def captured(main: Path, shard_db: Path, stage: str, shard: Shard, *, in_place: bool = False) -> Iterator[Captured]:
    """Yield the database the stage runs on (its path in `.path` until the end): a private copy of `main`, or `main` itself
    when `in_place`; write the shard when the body ends. A body that raises leaves no shard, so a failed shard job gives
    the merge nothing to fold in."""
    if shard_db.resolve() == main.resolve():
        raise ShardFailed(f"{shard_db}: the shard database must be another file than the main database")
    shard_db.parent.mkdir(parents=True, exist_ok=True)
    work = main if in_place else shard_db.with_name(shard_db.name + ".work")
    result = Captured(path=work, in_place=in_place)
    started = time.monotonic()
    base = _prepare(main, work)
    result.copy_seconds = time.monotonic() - started
    try:
        yield result
    except BaseException:
        _discard(work, in_place)
        raise
    _finish(work, shard_db, stage, shard, base, result)


def _finish(work: Path, shard_db: Path, stage: str, shard: Shard, base: dict, result: Captured) -> None:
    started = time.monotonic()
    try:
        result.rows = _extract(work, shard_db, stage, shard, base)
    finally:
        _discard(work, result.in_place)
    result.path, result.bytes = shard_db, shard_db.stat().st_size
    result.extract_seconds = time.monotonic() - started


def _discard(work: Path, in_place: bool) -> None:
    """The private copy is removed; a database captured in place loses the capture's triggers and tables, so a later write
    to it is not noted (it is thrown away by its job, but need not be)."""
    if not in_place:
        _remove(work)
        return
    with closing(sqlite3.connect(work, isolation_level=None)) as conn:
        found = conn.execute("select type, name from sqlite_master where type in ('trigger', 'table') "
                             "and name like '\\_shard\\_%' escape '\\' order by type = 'table'").fetchall()
        conn.execute("begin")
        for kind, name in found:
            conn.execute(f"drop {kind} if exists {quoted(name)}")
        conn.execute("commit")


def base_identity(conn: sqlite3.Connection) -> dict:
    """What identifies the database a shard started from: its migrations, its last run and every table's highest row id.
    Every stage run and every merge adds a `runs` row, so two shards share it only when they started from the same state."""
    names = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name")]
    last_run = conn.execute("select id, stage, started_at from runs order by id desc limit 1").fetchone() if "runs" in names else None
    migrations = applied_migrations(conn)
    highest = {name: conn.execute(f"select max(rowid) from {quoted(name)}").fetchone()[0] for name in names}
    identity = {"migrations": migrations, "last_run": list(last_run) if last_run else None, "highest_rowid": highest}
    fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]
    return {"fingerprint": fingerprint, "last_run": identity["last_run"], "highest_rowid": highest}


def _prepare(main: Path, work: Path) -> dict:
    """Back `main` up into `work` (read-only on main) unless they are one file (in place), migrate `work`, install the
    capture's triggers in it, and return the identity of the state the stage starts from."""
    if not main.is_file():
        raise ShardFailed(f"{main}: no such database file (a shard stage reads an existing main database)")
    in_place = work == main
    try:
        if not in_place:
            _remove(work)
            store.snapshot(main, work)  # SQLite's online backup, read-only on main
        with closing(sqlite3.connect(work)) as copied:
            base = base_identity(copied)  # the copy's, so exactly the state the stage starts from
        db = store.open_db(work, create=False, integrity_check=False)  # the stage's own opening checks the copy
    except (sqlite3.DatabaseError, store.ScoreboardDatabaseError) as exc:
        if not in_place:
            _remove(work)
        said = str(exc) if in_place else str(exc).replace(str(work), "its copy")
        raise ShardFailed(f"{main}: cannot be used as the main database: {said}") from exc
    try:
        _install_triggers(db.conn)
    finally:
        db.close()
    return base


def _install_triggers(conn: sqlite3.Connection) -> None:
    conn.execute("begin")  # one transaction, its schema statements included (each would otherwise be a commit of its own)
    with conn:
        conn.execute("create table _shard_changes (tbl text not null, rid integer not null, new integer not null, primary key (tbl, rid))")
        for table in tables(conn).values():
            name, old, literal = quoted(table.name), quoted(f"_shard_old_{table.name}"), "'" + table.name.replace("'", "''") + "'"
            conn.execute(f"create table {old} as select rowid as _rid, * from {name} where 0")
            conn.execute(f"create unique index {quoted(f'_shard_old_{table.name}_rid')} on {old} (_rid)")
            # No statement here may meet a conflict: SQLite resolves a conflict in a trigger by the firing statement's policy, so
            # with `or ignore` here an upsert's second change to one row aborted the stage; each statement is guarded instead.
            # A new row is new even on the rowid of a row the stage deleted (SQLite reuses the highest rowid).
            conn.execute(f"create trigger {quoted(f'_shard_insert_{table.name}')} after insert on {name} begin "
                         f"delete from _shard_changes where tbl = {literal} and rid = new.rowid; "
                         f"insert into _shard_changes values ({literal}, new.rowid, 1); end")
            for event in ("update", "delete"):
                # The row as it was in the main database, kept at its first change (a row the stage added has none).
                conn.execute(f"create trigger {quoted(f'_shard_{event}_{table.name}')} before {event} on {name} begin "
                             f"insert into {old} select rowid, * from {name} where rowid = old.rowid and not exists "
                             f"(select 1 from _shard_changes where tbl = {literal} and rid = old.rowid); "
                             f"insert into _shard_changes select {literal}, old.rowid, 0 where not exists "
                             f"(select 1 from _shard_changes where tbl = {literal} and rid = old.rowid); end")


def _extract(work: Path, shard_db: Path, stage: str, shard: Shard, base: dict) -> dict[str, int]:
    """Write the shard: the copy's schema, its migrations, the rows the stage touched, shard_rows and the manifest."""
    partial = shard_db.with_name(shard_db.name + ".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial, isolation_level=None)  # one explicit transaction: the schema's statements too
    try:
        conn.execute("attach database ? as work", [str(work)])
        conn.execute("begin")
        for (sql,) in conn.execute("select sql from work.sqlite_master where sql is not null and type in ('table', 'index') "
                                   "and name not like '\\_shard\\_%' escape '\\' order by type = 'index', rowid").fetchall():
            conn.execute(sql)
        conn.execute(MANIFEST)
        conn.execute(ROWS)
        conn.execute("insert into _sqlite_migrations select * from work._sqlite_migrations")
        counts: dict[str, int] = {}
        for table in tables(conn, "work").values():
            touched = _extract_table(conn, table.name, table.columns)
            if touched:
                counts[table.name] = touched
        migrations = applied_migrations(conn)
        conn.execute("insert into shard_manifest values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            uuid.uuid4().hex, stage, str(shard), shard.index, shard.count, ENGINE_VERSION, json.dumps(migrations),
            json.dumps(base, sort_keys=True), json.dumps(counts, sort_keys=True), datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ])
        conn.execute("commit")
    finally:
        conn.close()
    os.replace(partial, shard_db)
    return counts


def _extract_table(conn: sqlite3.Connection, name: str, columns: list[str]) -> int:
    """One table's touched rows into the shard; returns how many the shard keeps (a row changed back to what it was is not)."""
    table, old, cols = quoted(name), quoted(f"_shard_old_{name}"), ", ".join(quoted(c) for c in columns)
    copy = f"insert into main.{table} (rowid, {cols}) select rowid, {cols} from work.{table} "
    conn.execute(copy + "where rowid in (select rid from work._shard_changes where tbl = ? and new = 1)", [name])
    conn.execute("insert into shard_rows select tbl, rid, 'insert', null from work._shard_changes c where tbl = ? and new = 1 "
                 f"and exists (select 1 from main.{table} t where t.rowid = c.rid)", [name])
    for row in conn.execute(f"select o._rid, c.new, {', '.join('o.' + quoted(c) for c in columns)} from work.{old} o "
                            "join work._shard_changes c on c.tbl = ? and c.rid = o._rid", [name]).fetchall():
        rid, reused, before = row[0], row[1], dict(zip(columns, row[2:]))
        now = None if reused else conn.execute(f"select {cols} from work.{table} where rowid = ?", [rid]).fetchone()
        if now is not None and dict(zip(columns, now)) == before:
            continue  # changed back: nothing to carry
        if now is not None:
            conn.execute(copy + "where rowid = ?", [rid])
        conn.execute("insert into shard_rows values (?, ?, ?, ?)", [name, rid, "delete" if now is None else "update", json.dumps(before)])
    return conn.execute("select count(*) from shard_rows where tbl = ?", [name]).fetchone()[0]


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
