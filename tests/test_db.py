"""The database opens, migrates, and refuses what is not a scoreboard database with a clear error."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.store import ScoreboardDatabaseError, open_db
from pipeline.store.migrations import migrations
from tests.support import REPO


def test_new_database_has_every_table(tmp_path):
    db = open_db(tmp_path / "new.db")
    assert {"servers", "source_records", "analyses", "probe_runs", "tool_lists", "judgements", "score_cards", "score_rules",
            "score_dimensions", "score_history", "alerts", "runs"} <= set(db.table_names())
    # cards in full, one row per rule outcome, and the changes of each server's tool list
    assert {"scores", "rule_outcomes", "tool_snapshots"} <= set(db.view_names())
    assert [m.name for m in migrations.applied(db)] == [m.name for m in migrations._migrations]


def test_reopening_applies_nothing_twice(tmp_path):
    path = tmp_path / "again.db"
    open_db(path)["runs"].insert({"stage": "x", "started_at": "t", "status": "ok", "engine_version": "v"})
    db = open_db(path)
    assert db["runs"].count == 1
    assert db.execute("select count(*) from _sqlite_migrations").fetchone()[0] == len(migrations._migrations)


def test_text_file_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("hello, this is not a database\n")
    with pytest.raises(ScoreboardDatabaseError, match="not a SQLite database"):
        open_db(path)
    assert path.read_text() == "hello, this is not a database\n"  # left untouched


def test_corrupt_database_is_refused(tmp_path):
    path = tmp_path / "corrupt.db"
    open_db(path)["runs"].insert({"stage": "x", "started_at": "t", "status": "ok", "engine_version": "v"})
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # smash the schema page, keep the header
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(ScoreboardDatabaseError, match=str(path.name)):
        open_db(path)


def test_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("create table invoices (id integer primary key, total real)")
    conn.commit()
    conn.close()
    with pytest.raises(ScoreboardDatabaseError, match="not a scoreboard database.*invoices"):
        open_db(path)
    assert "servers" not in {r[0] for r in sqlite3.connect(path).execute("select name from sqlite_master")}


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(ScoreboardDatabaseError, match="is a directory"):
        open_db(tmp_path)
    with pytest.raises(ScoreboardDatabaseError, match="no such database"):
        open_db(tmp_path / "absent.db", create=False)


def test_cli_explains_a_bad_database_without_a_traceback(tmp_path):
    path = tmp_path / "bad.db"
    path.write_bytes(b"PK\x03\x04 a zip file, not sqlite")
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(path), "score"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert "not a SQLite database" in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_damaged_evidence_row_is_named_and_nothing_is_rescored(tmp_path):
    from pipeline.discover import run_discover
    from pipeline.discover.local import LocalCatalogSource
    from tests.support import NOW, quiet

    path = tmp_path / "damaged.db"
    db = open_db(path)
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    db["probe_runs"].insert({"server_id": "mcp-server-time", "kind": "deep", "started_at": "2026-11-29T00:00:00+00:00", "duration_ms": 1,
                             "transport": "stdio", "outcome": "ok", "evidence": "{\"truncated", "engine_version": "x"})
    db.close()
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(path), "score"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "probe_runs row 1 (mcp-server-time): stored evidence cannot be read" in done.stderr
    reopened = open_db(path)
    assert reopened["scores"].count == 0
    run = next(reopened.query("select status, counts from runs where stage = 'score'"))
    assert run["status"] == "failed" and "probe_runs row 1" in run["counts"]
