"""`scoreboard snapshot pack` and `snapshot publish --packed` (deviation 109): the job that built the database packs it, a job
that runs no stage verifies and publishes it. Every refusal says why and leaves the store byte for byte as it was."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import zstandard

from pipeline import store
from pipeline.fleet.snapshot_format import DATA_SUFFIX, MANIFEST_SUFFIX, METADATA_SUFFIX, unpack
from tests.snapshot_support import forge, scoreboard, scored_fleet
from tests.support import datasette_in_process, datasette_problems

EARLIER = datetime(2026, 11, 30, 3, 17, tzinfo=timezone.utc)
TABLES = ("servers", "scores", "score_cards", "analyses", "probe_runs", "probe_daily", "score_history", "judgements")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return scored_fleet(tmp_path_factory.mktemp("fleet") / "fleet.db")


@pytest.fixture
def restored(fleet, tmp_path) -> tuple[Path, Path, str]:
    """A store holding one snapshot of the fleet, and the database a run restored from it: (store, database, snapshot)."""
    shelf, target = tmp_path / "store", tmp_path / "job" / "scoreboard.db"
    name = forge(shelf, fleet, EARLIER)
    assert scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(target)).returncode == 0
    return shelf, target, name


def held(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def packed(db: Path, out: Path, *more: str) -> tuple[Path, Path]:
    done = scoreboard("snapshot", "pack", "--out", str(out), "--db", str(db), *more)
    assert done.returncode == 0, done.stderr
    assert "check passed" in done.stdout and "pack done" in done.stdout
    data, manifest = sorted(out.glob("*" + DATA_SUFFIX)), sorted(out.glob("*" + MANIFEST_SUFFIX))
    assert len(data) == len(manifest) == 1
    described = manifest[0].name.removesuffix(MANIFEST_SUFFIX) + METADATA_SUFFIX
    assert sorted(p.name for p in out.iterdir()) == sorted([data[0].name, manifest[0].name, described])
    return data[0], manifest[0]


def contents(path: Path) -> dict[str, object]:
    conn = sqlite3.connect(path)
    try:
        found: dict[str, object] = {t: conn.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES}
        found["cards"] = conn.execute("select * from scores order by server_id, rubric").fetchall()
        return found
    finally:
        conn.close()


def test_pack_then_publish_packed_then_restore_gives_the_same_database(restored, tmp_path):
    shelf, db, parent = restored
    data, manifest_path = packed(db, tmp_path / "packed", "--level", "3")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["parent"] == parent and manifest["snapshot"] > parent and manifest["file"] == data.name
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed"))
    assert done.returncode == 0, done.stderr
    assert "against its manifest" in done.stderr and "publish done" in done.stdout
    assert held(shelf)[data.name] == held(tmp_path / "packed")[data.name]
    again = tmp_path / "next-run" / "scoreboard.db"
    done = scoreboard("snapshot", "restore", "--from", str(shelf), "--db", str(again))
    assert done.returncode == 0, done.stderr
    assert manifest["snapshot"] in done.stderr
    source = contents(db)
    assert contents(again) == source and source["cards"] and source["servers"] == 60


def test_a_packed_snapshot_opens_in_datasette_with_its_metadata(restored, tmp_path):
    """`zstd -d FILE.db.zst`, then `datasette FILE.db --metadata FILE.metadata.json`: documented, with its canned queries."""
    _, db, _ = restored
    data, manifest_path = packed(db, tmp_path / "packed", "--level", "1")
    name = data.name.removesuffix(DATA_SUFFIX)
    unpack(data, tmp_path / f"{name}.db")  # what `zstd -d` names it
    described = json.loads((tmp_path / "packed" / (name + METADATA_SUFFIX)).read_text())
    assert json.loads(manifest_path.read_text())["metadata"] == name + METADATA_SUFFIX
    opened, pages = datasette_in_process(tmp_path / f"{name}.db", described, ["servers", "top_servers", "failing_rule"])
    assert opened == name and list(described["databases"]) == [name]
    assert "The catalog: one row per server" in pages["servers"].text
    for page in pages.values():
        assert datasette_problems(page.status_code, page.text) == []
    assert "Top servers" in pages["top_servers"].text and "Servers failing a rule" in pages["failing_rule"].text


def test_a_packed_snapshot_and_a_published_database_are_the_same_snapshot(restored, tmp_path):
    """One pack function behind both paths: the manifest of `publish --to` and of `pack` differ only in name, time and hashes."""
    shelf, db, _ = restored
    _, manifest_path = packed(db, tmp_path / "packed")
    from_pack = json.loads(manifest_path.read_text())
    assert scoreboard("snapshot", "publish", "--to", str(shelf), "--db", str(db)).returncode == 0
    newest = sorted(shelf.glob("*" + MANIFEST_SUFFIX))[-1]
    from_publish = json.loads(newest.read_text())
    varying = {"snapshot", "taken_at", "file", "size", "sha256", "db_sha256", "metadata", "metadata_sha256"}  # metadata: keyed to the name
    assert {k: v for k, v in from_pack.items() if k not in varying} == {k: v for k, v in from_publish.items() if k not in varying}


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, expected", [
    ("one byte of the file", "is not the file that was packed"),
    ("the manifest's sha256", "is not the file that was packed"),
    ("one byte, manifest rehashed", "decompresses to a database that is not the one packed|is corrupt: zstd cannot decompress it"),
    ("a manifest for another file", "describes"),
    ("a manifest naming a path", "describes"),
    ("no file", "is missing"),
    ("the metadata edited", "is not the metadata that was packed"),
    ("no metadata", "the metadata its manifest names, is missing"),
])
def test_a_damaged_packed_snapshot_is_refused_and_the_store_kept(restored, tmp_path, damage, expected):
    shelf, db, _ = restored
    data, manifest_path = packed(db, tmp_path / "packed")
    manifest = json.loads(manifest_path.read_text())
    if damage == "one byte of the file":
        flip(data)
    elif damage == "the manifest's sha256":
        manifest["sha256"] = hashlib.sha256(b"another file").hexdigest()
    elif damage == "one byte, manifest rehashed":  # the manifest matches the damaged file: zstd's checksum and the database's sha256 catch it
        flip(data)
        manifest.update(sha256=hashlib.sha256(data.read_bytes()).hexdigest(), size=data.stat().st_size)
    elif damage == "a manifest for another file":
        manifest["file"] = "scoreboard-2026-01-01T000000Z-engine-0.1.0" + DATA_SUFFIX
    elif damage == "a manifest naming a path":
        manifest.update(snapshot="../" + manifest["snapshot"], file="../" + manifest["file"])
    elif damage == "no file":
        data.unlink()
    elif damage == "the metadata edited":
        described = tmp_path / "packed" / manifest["metadata"]
        described.write_text(described.read_text().replace("Top servers", "Top servers (edited)"))
    elif damage == "no metadata":
        (tmp_path / "packed" / manifest["metadata"]).unlink()
    manifest_path.write_text(json.dumps(manifest))
    before = held(shelf)
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed"))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert any(e in done.stderr for e in expected.split("|")), done.stderr
    assert held(shelf) == before


def test_a_packed_snapshot_whose_parent_is_no_longer_the_newest_is_refused(restored, fleet, tmp_path):
    shelf, db, parent = restored
    packed(db, tmp_path / "packed")
    forge(shelf, fleet, EARLIER + timedelta(minutes=5))  # another run published in between
    before = held(shelf)
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed"))
    assert done.returncode != 0
    assert "another run published in between" in done.stderr and f"descends from {parent}" in done.stderr
    assert held(shelf) == before
    assert scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed")).returncode != 0


def test_a_packed_snapshot_is_published_once(restored, tmp_path):
    shelf, db, _ = restored
    packed(db, tmp_path / "packed")
    assert scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed")).returncode == 0
    before = held(shelf)
    done = scoreboard("snapshot", "publish", "--to", str(shelf), "--packed", str(tmp_path / "packed"))
    assert done.returncode != 0 and "already" in done.stderr and held(shelf) == before


def test_pack_refuses_what_snapshot_check_refuses_with_its_words_and_writes_nothing(restored, tmp_path):
    _, db, _ = restored
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("delete from score_cards where server_id in (select id from servers limit 3)")
    conn.close()
    check = scoreboard("snapshot", "check", "--db", str(db))
    out = tmp_path / "packed"
    done = scoreboard("snapshot", "pack", "--out", str(out), "--db", str(db))
    assert check.returncode == done.returncode == 1
    assert f"check refused {db}: 1 reasons" in done.stderr and "no score card" in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith(("check refused", "  - "))] == check.stderr.splitlines()
    assert not out.exists() or not list(out.iterdir())


def test_pack_wants_an_empty_directory_and_a_level_zstd_has(restored, tmp_path):
    _, db, _ = restored
    out = tmp_path / "packed"
    out.mkdir()
    (out / "left-over").write_text("x")
    done = scoreboard("snapshot", "pack", "--out", str(out), "--db", str(db))
    assert done.returncode != 0 and "not empty" in done.stderr
    assert scoreboard("snapshot", "pack", "--out", str(tmp_path / "other"), "--db", str(db), "--level", "30").returncode == 2


def test_the_packed_file_is_zstd_at_the_level_asked(restored, tmp_path):
    """A faster level gives a larger file; both are plain zstd frames with a checksum, as restore reads them."""
    _, db, _ = restored
    fast, _ = packed(db, tmp_path / "fast", "--level", "1")
    small, _ = packed(db, tmp_path / "small", "--level", "12")
    assert fast.stat().st_size > small.stat().st_size
    with fast.open("rb") as fh:
        assert zstandard.get_frame_parameters(fh.read(18)).has_checksum
    assert store.open_db(db, create=False)["servers"].count == 60  # --db itself is only read
