"""`scoreboard snapshot check` (deviation 91): refuses, listing every reason, a database that should not be published."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from sqlite_utils import Database

from bench.synthetic import NOW
from pipeline import store
from pipeline.fleet import soundness
from pipeline.fleet.snapshot_format import engine_migrations, inspect_database
from pipeline.models import StageReport
from pipeline.score import registry
from pipeline.store.migrations import migrations
from tests.snapshot_support import copy_db, damaged_copy, forge, scoreboard, scoreboard_process, scored_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return scored_fleet(tmp_path_factory.mktemp("fleet") / "fleet.db")


@pytest.fixture
def restored(fleet, tmp_path) -> Path:
    """The fleet as a run has it: restored from a snapshot of itself (whose counts are the baseline)."""
    forge(tmp_path / "store", fleet, NOW - timedelta(days=1))
    target = tmp_path / "scoreboard.db"
    assert scoreboard("snapshot", "restore", "--from", str(tmp_path / "store"), "--db", str(target)).returncode == 0
    return target


def check(path: Path) -> soundness.Verdict:
    baseline, where = soundness.descent_baseline(path)
    return soundness.check(path, baseline, where, registry.names())


def edit(path: Path, *sql: str) -> None:
    conn = sqlite3.connect(path)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()


def test_a_sound_database_passes(restored):
    verdict = check(restored)
    assert verdict.sound, verdict.reasons
    done = scoreboard_process("snapshot", "check", "--db", str(restored))
    assert done.returncode == 0 and "check passed" in done.stdout and "active_servers 60" in done.stdout


def test_collapsed_counts_are_refused_each_named(restored):
    edit(restored, "delete from probe_daily where rowid % 4 != 0", "update servers set is_active = 0 where rowid % 3 = 0",
         "delete from score_history where rowid % 2 = 0")
    verdict = check(restored)
    text = "\n".join(verdict.reasons)
    assert "active_servers fell from 60 to 40" in text and "probe_daily fell from" in text and "score_history fell from" in text
    assert "the floor is 90%" in text and "analyses" not in text
    done = scoreboard("snapshot", "check", "--db", str(restored))
    assert done.returncode == 1 and "check refused" in done.stderr and "active_servers fell" in done.stderr


def test_a_small_drop_is_not_a_collapse(restored):
    edit(restored, "update servers set is_active = 0 where rowid <= 5")  # 5 of 60 delisted: 92%, and at most the slack
    assert not any("active_servers" in r for r in check(restored).reasons)


def test_against_a_manifest_a_file_or_a_store(restored, fleet, tmp_path):
    edit(restored, "delete from analyses where rowid % 2 = 0")
    shelf = tmp_path / "store"
    manifest = next(shelf.glob("*.manifest.json"))
    for against in (str(fleet), str(manifest), str(shelf)):
        done = scoreboard("snapshot", "check", "--db", str(restored), "--against", against)
        assert done.returncode == 1 and "analyses fell from" in done.stderr, (against, done.stderr)


def test_missing_score_cards_are_refused_but_not_for_listing_only_servers(restored):
    edit(restored, "delete from score_cards where server_id = 'synthetic-00003'",
         "delete from score_cards where server_id = 'synthetic-00004' and rubric = 'remote'")
    reasons = check(restored).reasons
    assert len(reasons) == 1 and "2 active measured servers have no score card" in reasons[0]
    assert "synthetic-00003" in reasons[0] and "synthetic-00004 (remote)" in reasons[0]
    # A listing-only server has no card by design (deviation 80): nothing to examine, nothing to score.
    edit(restored, "update servers set repository = null, launch = null, remote_url = null, packages = '[]', remotes = '[]' "
                   "where id in ('synthetic-00003', 'synthetic-00004')")
    assert check(restored).sound


def test_failed_abandoned_and_unfinished_runs_since_the_restore_are_refused(restored):
    db = store.open_db(restored)
    failed = store.start_run(db, "analyze", {}, NOW)
    store.fail_run(db, failed, "DatabaseError: database disk image is malformed", NOW)
    store.start_run(db, "monitor", {}, NOW)  # killed: never finished
    store.finish_run(db, store.start_run(db, "judge", {}, NOW), StageReport(stage="judge"), NOW)
    db.close()
    reasons = check(restored).reasons
    assert len(reasons) == 2
    assert "the analyze run" in reasons[0] and "failed: DatabaseError: database disk image is malformed" in reasons[0]
    assert "the monitor run" in reasons[1] and "never finished" in reasons[1]


def test_runs_before_the_restore_do_not_count(fleet, tmp_path):
    before = copy_db(fleet, tmp_path / "before.db")
    db = store.open_db(before)
    store.fail_run(db, store.start_run(db, "discover", {}, NOW), "HTTPError: 503", NOW)
    db.close()
    forge(tmp_path / "store", before, NOW)
    target = tmp_path / "scoreboard.db"
    assert scoreboard("snapshot", "restore", "--from", str(tmp_path / "store"), "--db", str(target)).returncode == 0
    assert check(target).sound
    # Never restored: each stage's last run counts.
    assert any("the discover run" in r for r in check(before).reasons)


def test_an_older_schema_is_refused(tmp_path):
    path = tmp_path / "older.db"
    db = Database(sqlite3.connect(path))
    migrations.apply(db, stop_before=engine_migrations()[-1])
    db.close()
    reasons = check(path).reasons
    assert len(reasons) == 1 and f"its schema is older than this engine's: it lacks {engine_migrations()[-1]}" in reasons[0]


def test_a_newer_schema_and_a_damaged_file_are_refused(fleet, tmp_path):
    newer = copy_db(fleet, tmp_path / "newer.db")
    edit(newer, "insert into _sqlite_migrations (migration_set, name, applied_at) values ('mcp-scoreboard', 'm999_next', '2027')")
    assert "its schema is newer than this engine" in check(newer).reasons[0]

    damaged = damaged_copy(fleet, tmp_path / "damaged.db", "probe_daily")
    reasons = check(damaged).reasons
    assert len(reasons) == 1 and "integrity_check failed" in reasons[0]
    done = scoreboard_process("snapshot", "check", "--db", str(damaged))
    assert done.returncode == 1 and "integrity_check failed" in done.stderr and "Traceback" not in done.stderr


def test_the_check_never_writes(restored):
    before = restored.read_bytes()
    check(restored)
    assert restored.read_bytes() == before and inspect_database(restored).problems == []


def test_after_a_publish_its_counts_and_later_runs_count(restored, tmp_path):
    assert scoreboard("snapshot", "publish", "--to", str(tmp_path / "store"), "--db", str(restored)).returncode == 0
    baseline, where = soundness.descent_baseline(restored)
    assert baseline["active_servers"] == 60 and "(" + str(tmp_path / "store") + ")" in where
    db = store.open_db(restored)
    store.fail_run(db, store.start_run(db, "score", {}, NOW), "MemoryError: ", NOW)
    db.close()
    edit(restored, "update servers set is_active = 0 where rowid % 2 = 0")
    reasons = check(restored).reasons
    assert len(reasons) == 2 and "active_servers fell from 60 to 30" in reasons[0] and "the score run" in reasons[1]
