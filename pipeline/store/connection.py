"""Opening the database: refuse anything that is not a healthy scoreboard database, then migrate it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from pipeline.store.migrations import MIGRATION_SET, migrations

SQLITE_HEADER = b"SQLite format 3\x00"


class ScoreboardDatabaseError(Exception):
    """The database file is missing, not SQLite, corrupt, or not a scoreboard database."""


def open_db(path: Path | str, *, create: bool = True, integrity_check: bool = True) -> Database:
    """Open (and migrate) the scoreboard database at `path`, or explain clearly why not.

    Without `integrity_check`, SQLite's quick_check (seconds for a fleet's database) is left to whoever opens the file
    next: for a private copy that its one user opens, and checks, again.
    """
    path = Path(path)
    if not path.exists():
        if not create:
            raise ScoreboardDatabaseError(f"{path}: no such database (run `scoreboard run` to create it)")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise ScoreboardDatabaseError(f"{path}: is a directory, not a database file")
    elif path.stat().st_size > 0:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
        if header != SQLITE_HEADER:
            raise ScoreboardDatabaseError(f"{path}: not a SQLite database (the file does not start with the SQLite header)")
    try:
        conn = sqlite3.connect(str(path))
        conn.execute("PRAGMA busy_timeout = 10000")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()] if integrity_check else ["ok"]
        if problems != ["ok"]:
            conn.close()
            raise ScoreboardDatabaseError(f"{path}: the database is corrupt: {'; '.join(problems[:3])}")
        db = Database(conn)
        _check_is_ours(db, path)
        if db.journal_mode != "wal":
            db.enable_wal()
        conn.execute("PRAGMA foreign_keys = ON")
        # In WAL mode NORMAL keeps the database consistent through a crash or power loss (only the
        # last commits can be lost); FULL would add an fsync per commit and per checkpoint.
        conn.execute("PRAGMA synchronous = NORMAL")
        migrations.apply(db)
    except sqlite3.DatabaseError as exc:
        raise ScoreboardDatabaseError(f"{path}: cannot be read as a SQLite database: {exc}") from exc
    return db


def _check_is_ours(db: Database, path: Path) -> None:
    tables = set(db.table_names())
    if not tables:
        return
    ours = "_sqlite_migrations" in tables and db.execute(
        "select count(*) from _sqlite_migrations where migration_set = ?", [MIGRATION_SET]
    ).fetchone()[0]
    if not ours:
        listed = ", ".join(sorted(tables)[:5])
        raise ScoreboardDatabaseError(
            f"{path}: a SQLite database, but not a scoreboard database (it holds tables: {listed}); "
            "refusing to write to it"
        )

def database_path(db: Database) -> str:
    return db.execute("pragma database_list").fetchone()[2]


def snapshot(source: str | Path, target: Path) -> None:
    """A consistent copy of the whole database (`backup`), written under a temporary name and renamed, so a reader never
    sees half a file."""
    partial = target.with_name(target.name + ".partial")
    backup(source, partial)
    os.replace(partial, target)


def backup(source: str | Path, target: Path) -> None:
    """A consistent copy of the whole database at `target`, made anew; nothing is left there when it fails.

    SQLite's online backup on connections of its own, so it can run beside the build (the copy releases the GIL); left
    in rollback-journal mode, so the download opens anywhere, read-only or in the browser. A journal left beside
    `target` by a copy killed earlier goes first: SQLite would take it for the new file's hot journal and roll it back.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    for leftover in (target, Path(f"{target}-journal")):
        leftover.unlink(missing_ok=True)
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(target)
        try:
            reader.backup(copy)
            copy.execute("pragma journal_mode = delete")
        finally:
            copy.close()
    except BaseException:
        target.unlink(missing_ok=True)  # a source that is not a database leaves nothing behind
        raise
    finally:
        reader.close()


def applied_migrations(conn: sqlite3.Connection | Database) -> list[str]:
    """The names of our migrations a database has applied, in order (none when it has no migrations table)."""
    if not conn.execute("select 1 from sqlite_master where type = 'table' and name = '_sqlite_migrations'").fetchone():
        return []
    return [row[0] for row in conn.execute("select name from _sqlite_migrations where migration_set = ? order by rowid", [MIGRATION_SET])]
