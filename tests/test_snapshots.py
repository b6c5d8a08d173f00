"""`scoreboard snapshot restore` and `publish` against a local store, through the CLI: every failure exits non-zero,
says what and where, and leaves --db and the store's snapshots as they were."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import zstandard
from sqlite_utils import Database

from pipeline import store
from pipeline.fleet.snapshot_format import DATA_SUFFIX, MANIFEST_SUFFIX, METADATA_SUFFIX, engine_migrations
from pipeline.store.migrations import migrations
from tests.snapshot_support import copy_db, damaged_copy, forge, scoreboard, scoreboard_process, scored_fleet

EARLIER = datetime(2026, 11, 30, 3, 17, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return scored_fleet(tmp_path_factory.mktemp("fleet") / "fleet.db")


@pytest.fixture
def local_db(tmp_path: Path) -> Path:
    """A database already at --db, which a failed restore must leave byte for byte as it was."""
    path = tmp_path / "work" / "scoreboard.db"
    path.parent.mkdir()
    db = store.open_db(path)
    db["runs"].insert({"stage": "probe", "started_at": "2026-11-01T00:00:00+00:00", "status": "ok", "engine_version": "0.1.0"})
    db.close()
    return path


def counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"select count(*) from {t}").fetchone()[0] for t in ("servers", "scores", "analyses", "probe_daily")}
    finally:
        conn.close()


def test_publish_then_restore_gives_the_same_database(fleet, tmp_path):
    work = copy_db(fleet, tmp_path / "published.db")
    shelf = tmp_path / "store"
    done = scoreboard_process("snapshot", "publish", "--to", str(shelf), "--db", str(work))
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in shelf.iterdir())
    assert len(files) == 3 and files[0].endswith(DATA_SUFFIX) and files[1].endswith(MANIFEST_SUFFIX) and files[2].endswith(METADATA_SUFFIX)
    assert files[0].startswith(f"scoreboard-{datetime.now(timezone.utc).date().isoformat()}T") and "-engine-0.1.0" in files[0]
    manifest = json.loads((shelf / files[1]).read_text())
    assert manifest["schema_level"] == len(engine_migrations()) and manifest["counts"]["active_servers"] == 60
    assert manifest["size"] == (shelf / files[0]).stat().st_size and manifest["size"] < manifest["db_size"] / 3

    restored = tmp_path / "fresh" / "scoreboard.db"
    done = scoreboard_process("snapshot", "restore", "--from", str(shelf), "--db", str(restored))
    assert done.returncode == 0, done.stderr
    assert counts(restored) == counts(work)
    assert "sha256 verified" in done.stderr and "integrity_check ok" in done.stderr
    db = store.open_db(restored)
    row = next(db.query("select args from runs where stage = 'restore'"))
    assert json.loads(row["args"])["snapshot"] == files[0].removesuffix(DATA_SUFFIX)
    assert not list(restored.parent.glob(".scoreboard.db.*")), "the scratch directory is removed"
    done = scoreboard("snapshot", "check", "--db", str(restored))
    assert done.returncode == 0 and "check passed" in done.stdout, done.stderr


def test_an_empty_or_missing_store_fails_loudly(local_db, tmp_path):
    before = local_db.read_bytes()
    (tmp_path / "empty").mkdir()
    for where, run in ((tmp_path / "empty", scoreboard_process), (tmp_path / "never-made", scoreboard)):
        done = run("snapshot", "restore", "--from", str(where), "--db", str(local_db))
        assert done.returncode != 0
        assert f"no snapshot to restore in {where}" in done.stderr and "--first-run" in done.stderr and "Traceback" not in done.stderr
        assert local_db.read_bytes() == before


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _not_ours(tmp_path: Path) -> Path:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("create table notes (id integer primary key, body text)")
    conn.commit()
    conn.close()
    return path


def _newer(fleet: Path, tmp_path: Path) -> Path:
    path = copy_db(fleet, tmp_path / "newer.db")
    conn = sqlite3.connect(path)
    conn.execute("insert into _sqlite_migrations (migration_set, name, applied_at) values ('mcp-scoreboard', 'm999_from_the_future', '2027')")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("damage,expected", [
    ("flipped byte", "is not the file that was published"),
    ("truncated", "is not the file that was published"),
    ("garbage manifest", "is not a snapshot manifest"),
    ("manifest for another file", "describes"),
    ("damaged zstd frame", "is corrupt: zstd cannot decompress it"),
    ("another sqlite database", "not a scoreboard database"),
    ("newer schema", "its schema is newer than this engine"),
    ("damaged pages", "integrity_check failed"),
    ("not sqlite", "not a SQLite database"),
])
def test_a_corrupt_snapshot_fails_and_leaves_db_untouched(fleet, local_db, tmp_path, damage, expected):
    shelf = tmp_path / "store"
    forge(shelf, fleet, EARLIER - timedelta(days=1))  # an older, good one: never silently taken instead
    source = {"another sqlite database": lambda: _not_ours(tmp_path), "newer schema": lambda: _newer(fleet, tmp_path),
              "damaged pages": lambda: damaged_copy(fleet, tmp_path / "damaged.db", "score_cards")}.get(damage, lambda: fleet)()
    if damage == "not sqlite":
        source = tmp_path / "text.db"
        source.write_bytes(b"hello, this is not a database\n" * 100)
    name = forge(shelf, source, EARLIER)
    data, manifest = shelf / (name + DATA_SUFFIX), shelf / (name + MANIFEST_SUFFIX)
    if damage == "flipped byte":
        _flip(data)
    elif damage == "truncated":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    elif damage == "garbage manifest":
        manifest.write_text('{"format": 1, "snapshot": "x"}')
    elif damage == "manifest for another file":
        manifest.write_text(manifest.read_text().replace(f'"file":"{name}', '"file":"scoreboard-elsewhere'))
    elif damage == "damaged zstd frame":  # a manifest that matches the damaged file: zstd's own checks must catch it
        _flip(data)
        fields = json.loads(manifest.read_text())
        fields.update(sha256=hashlib.sha256(data.read_bytes()).hexdigest(), size=data.stat().st_size)
        manifest.write_text(json.dumps(fields))
    before = local_db.read_bytes()
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(local_db))
    assert done.returncode != 0, done.stdout
    assert expected in done.stderr and str(shelf) in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert local_db.read_bytes() == before
    assert sorted(p.name for p in local_db.parent.iterdir()) == ["scoreboard.db"], "no scratch file is left beside --db"


def test_an_older_schema_is_restored_and_migrated(tmp_path):
    older = tmp_path / "older.db"
    db = Database(sqlite3.connect(older))
    migrations.apply(db, stop_before=engine_migrations()[-1])
    db.close()
    shelf = tmp_path / "store"
    forge(shelf, older, EARLIER)
    target = tmp_path / "scoreboard.db"
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(target))
    assert done.returncode == 0, done.stderr
    assert "migrating 1 levels" in done.stderr
    conn = sqlite3.connect(target)
    assert [r[0] for r in conn.execute("select name from _sqlite_migrations order by rowid")] == list(engine_migrations())
    conn.close()


def test_first_run_is_explicit_and_refused_over_history(fleet, tmp_path):
    shelf, target = tmp_path / "store", tmp_path / "db" / "scoreboard.db"
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--first-run", "--db", str(target))
    assert done.returncode == 0 and "first_run 1" in done.stdout, done.stderr
    assert store.open_db(target, create=False)["servers"].count == 0
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--first-run", "--db", str(target))
    assert done.returncode != 0 and f"{target} exists" in done.stderr

    forge(shelf, fleet, EARLIER)
    target.unlink()
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--first-run", "--db", str(target))
    assert done.returncode != 0 and "--first-run refused" in done.stderr and "holds 1 snapshots" in done.stderr
    assert not target.exists()


def test_a_first_run_publishes_into_an_empty_store_only(tmp_path):
    shelf, target = tmp_path / "store", tmp_path / "scoreboard.db"
    assert scoreboard("snapshot", "restore", "--from", str(shelf), "--first-run", "--db", str(target)).returncode == 0
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(target))
    assert done.returncode == 0, done.stderr
    again = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(target))
    assert again.returncode == 0, again.stderr  # it descends from what it published


def test_two_runs_from_one_snapshot_cannot_both_publish(fleet, tmp_path):
    shelf = tmp_path / "store"
    forge(shelf, fleet, EARLIER)
    first, second = tmp_path / "a" / "scoreboard.db", tmp_path / "b" / "scoreboard.db"
    for target in (first, second):
        assert scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(target)).returncode == 0
    assert scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(first)).returncode == 0
    held = sorted(p.name for p in shelf.iterdir())
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(second))
    assert done.returncode != 0 and "another run published in between" in done.stderr
    assert sorted(p.name for p in shelf.iterdir()) == held


def test_a_database_never_restored_is_not_published_over_history(fleet, tmp_path):
    shelf = tmp_path / "store"
    forge(shelf, fleet, EARLIER)
    held = sorted(p.name for p in shelf.iterdir())
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(copy_db(fleet, tmp_path / "local.db")))
    assert done.returncode != 0 and "was never restored from" in done.stderr
    assert sorted(p.name for p in shelf.iterdir()) == held


def test_publish_refuses_an_unsound_database_and_keeps_the_store(fleet, tmp_path):
    shelf = tmp_path / "store"
    forge(shelf, fleet, EARLIER)
    target = tmp_path / "scoreboard.db"
    assert scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(target)).returncode == 0
    db = store.open_db(target)
    run_id = store.start_run(db, "probe", {}, EARLIER + timedelta(hours=1))
    store.fail_run(db, run_id, "OSError: No space left on device", EARLIER + timedelta(hours=2))
    db.execute("delete from score_cards where server_id in (select id from servers limit 3)")
    db.conn.commit()
    db.close()
    held = {p.name: p.read_bytes() for p in shelf.iterdir()}
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(target))
    assert done.returncode != 0
    assert "the probe run" in done.stderr and "No space left on device" in done.stderr and "no score card" in done.stderr
    assert {p.name: p.read_bytes() for p in shelf.iterdir()} == held


def test_publish_prunes_by_the_policy_after_the_upload(fleet, tmp_path):
    shelf = tmp_path / "store"
    now = datetime.now(timezone.utc)
    old = [forge(shelf, fleet, now - timedelta(days=d, hours=h)) for d in (400, 200, 199, 40, 39, 2) for h in (0, 1)]
    (shelf / "README.txt").write_text("not a snapshot: left alone")
    cut_short = now - timedelta(days=3)
    orphan = forge(shelf, fleet, cut_short)
    (shelf / (orphan + MANIFEST_SUFFIX)).unlink()
    target = tmp_path / "scoreboard.db"
    assert scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(target)).returncode == 0
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(target))
    assert done.returncode == 0, done.stderr
    names = {p.name for p in shelf.iterdir()}
    kept = {n.removesuffix(MANIFEST_SUFFIX) for n in names if n.endswith(MANIFEST_SUFFIX)}
    from pipeline.fleet.retention import kept as policy_kept
    from pipeline.fleet.snapshot_format import parse_name

    stamps = {parse_name(n + MANIFEST_SUFFIX)[1]: n for n in old}
    newest = next(n for n in kept if n not in old)
    expected = {stamps[s] for s in policy_kept(list(stamps), now)} | {newest}
    assert kept == expected
    assert orphan + DATA_SUFFIX not in names and "README.txt" in names
    assert all((shelf / (k + DATA_SUFFIX)).exists() for k in kept)
    assert "pruned" in done.stdout


def test_a_zstd_file_is_what_any_zstd_reads(fleet, tmp_path):
    """The snapshot is a plain zstd frame: `zstd -d` or any library reads it, no option needed."""
    name = forge(tmp_path, fleet, EARLIER)
    with (tmp_path / (name + DATA_SUFFIX)).open("rb") as fh:
        params = zstandard.get_frame_parameters(fh.read(18))
    assert params.has_checksum and params.content_size == fleet.stat().st_size and params.window_size <= 8 << 20
