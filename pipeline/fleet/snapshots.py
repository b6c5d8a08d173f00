"""Restore: the database between runs lives as dated snapshots in a store, never in the git history.

Restore fetches the newest snapshot, verifies it (the manifest's sha256, zstd's own checksum, the database's sha256,
integrity_check, that it is a scoreboard database this engine can read), migrates an older schema and only then replaces
--db, in one rename: any failure leaves --db as it was and says what failed where. No snapshot is an error; starting
empty is `--first-run`, refused when the store holds a snapshot (deviation 94). Packing and publishing are
pipeline.fleet.snapshot_publish; what the two share (the store's listing, a database's lineage) is here.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import zstandard
from pydantic import ValidationError
from sqlite_utils import Database

from pipeline import store
from pipeline.fleet.snapshot_format import (
    CHUNK,
    Manifest,
    file_sha256,
    inspect_database,
    parse_name,
    unpack,
)
from pipeline.fleet.snapshot_store import SnapshotStore, StoreError
from pipeline.models import StageReport
from pipeline.progress import Progress

Log = Callable[[str], None]


class SnapshotError(Exception):
    """Restore or publish failed, or was refused: the message says what, and where."""


@dataclass
class Listed:
    stem: str
    taken_at: datetime
    data: str | None = None
    manifest: str | None = None
    metadata: str | None = None  # not needed to restore: a snapshot is complete without it

    @property
    def complete(self) -> bool:
        return self.data is not None and self.manifest is not None


def listing(names: list[str]) -> dict[str, Listed]:
    """The store's snapshot files by snapshot (other files are left alone)."""
    found: dict[str, Listed] = {}
    for name in names:
        parsed = parse_name(name)
        if parsed is None:
            continue
        key, taken, which = parsed
        setattr(found.setdefault(key, Listed(key, taken)), which, name)
    return found


def published(listed: dict[str, Listed]) -> list[Listed]:
    """Complete snapshots, oldest first."""
    return sorted((s for s in listed.values() if s.complete), key=lambda s: (s.taken_at, s.stem))


def store_names(store_: SnapshotStore) -> list[str]:
    try:
        return store_.names()
    except StoreError as exc:
        raise SnapshotError(f"cannot list the snapshots in {store_.where}: {exc}") from exc


def _read(store_: SnapshotStore, name: str, target: Path) -> None:
    try:
        store_.read(name, target)
    except StoreError as exc:
        raise SnapshotError(f"cannot download {name} from {store_.where}: {exc}") from exc


@contextmanager
def workdir(db_path: Path) -> Iterator[Path]:
    """A scratch directory beside --db (one file system, so the final rename is atomic), removed whatever happens."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix=f".{db_path.name}.", dir=db_path.parent))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def newest_counts(store_: SnapshotStore) -> tuple[dict[str, int] | None, str]:
    """The row counts of the store's newest snapshot, from its manifest, and its name; SnapshotError when there is none."""
    snapshots = published(listing(store_names(store_)))
    if not snapshots:
        raise SnapshotError(f"no snapshot in {store_.where} to compare with")
    with tempfile.TemporaryDirectory() as work:
        return fetch_manifest(store_, snapshots[-1], Path(work)).counts, f"the snapshot {snapshots[-1].stem}"


# ---------------------------------------------------------------------------- restore


def restore(store_: SnapshotStore, db_path: Path, *, now: datetime, first_run: bool = False, snapshot: str | None = None,
            log: Log = print) -> StageReport:
    started = time.monotonic()
    names = store_names(store_)
    snapshots = published(listing(names))
    if first_run:
        return _first_run(store_, db_path, snapshots, names, now, started)
    if not snapshots:
        held = f"it holds {len(names)} other files" if names else "it is empty"
        raise SnapshotError(f"no snapshot to restore in {store_.where} ({held}); a first run, and only a first run, passes --first-run")
    if snapshot is None:
        chosen = snapshots[-1]
    else:
        wanted = parse_name(snapshot)[0] if parse_name(snapshot) else snapshot
        chosen = next((s for s in snapshots if s.stem == wanted), None)
        if chosen is None:
            raise SnapshotError(f"no snapshot {snapshot} in {store_.where} (newest: {snapshots[-1].stem})")
    with workdir(db_path) as work:
        manifest = fetch_manifest(store_, chosen, work)
        packed = work / chosen.data
        clock = time.monotonic()
        _read(store_, chosen.data, packed)
        digest, size = file_sha256(packed)
        where = f"{chosen.data} from {store_.where}"
        if (digest, size) != (manifest.sha256, manifest.size):
            raise SnapshotError(f"{where} is not the file that was published: sha256 {digest[:16]}…, {size:,} bytes; its manifest "
                                f"says {manifest.sha256[:16]}…, {manifest.size:,} bytes (a damaged download or a replaced asset)")
        log(f"[restore] downloaded {chosen.data} ({size / 1e6:.1f} MB) from {store_.where}, sha256 verified; {time.monotonic() - clock:.1f}s")
        clock = time.monotonic()
        restored = work / "restored.db"
        try:
            db_digest, db_size = unpack(packed, restored, progress=Progress("restore", max(1, -(-manifest.db_size // CHUNK))))
        except zstandard.ZstdError as exc:
            raise SnapshotError(f"{where} is corrupt: zstd cannot decompress it: {exc}") from exc
        packed.unlink()
        if (db_digest, db_size) != (manifest.db_sha256, manifest.db_size):
            raise SnapshotError(f"{where} decompresses to a database that is not the one published (sha256 {db_digest[:16]}…)")
        facts = inspect_database(restored)
        if facts.problems:
            raise SnapshotError(f"{where} is not a database this engine can restore: " + "; ".join(p.replace(str(restored), "the database")
                                                                                                 for p in facts.problems))
        log(f"[restore] unpacked {db_size / 1e6:.1f} MB, integrity_check ok, schema level {len(facts.migrations)}"
            f"{f' (migrating {len(facts.missing_migrations)} levels)' if facts.missing_migrations else ''}; {time.monotonic() - clock:.1f}s")
        store.open_db(restored).close()  # an older schema is migrated here, before it replaces anything
        counts = {"bytes": size, "db_bytes": db_size, "servers": facts.counts.get("active_servers", 0)}
        args = {"from": store_.where, "snapshot": chosen.stem, "sha256": manifest.sha256, "engine_version": manifest.engine_version,
                "counts": manifest.counts, "first_run": False}
        record_run(restored, "restore", args, counts, now, started)
        _install(restored, db_path)
    report = StageReport(stage="restore", counts=counts, seconds=time.monotonic() - started)
    log(f"[restore] {db_path} is {chosen.stem}, taken {manifest.taken_at} by engine {manifest.engine_version}")
    return report


def _first_run(store_: SnapshotStore, db_path: Path, snapshots: list[Listed], names: list[str], now: datetime, started: float) -> StageReport:
    if snapshots:
        raise SnapshotError(f"--first-run refused: {store_.where} holds {len(snapshots)} snapshots (newest {snapshots[-1].stem}); "
                            "starting empty would drop that history. Drop --first-run to restore the newest")
    if any(parse_name(n) for n in names):
        raise SnapshotError(f"--first-run refused: {store_.where} holds snapshot files without their manifests "
                            f"({', '.join(n for n in names if parse_name(n))[:300]}): an interrupted publish to look at, not an empty store")
    if db_path.exists():
        raise SnapshotError(f"--first-run refused: {db_path} exists; a first run starts a new database (move it away first)")
    with workdir(db_path) as work:
        fresh = work / "first-run.db"
        store.open_db(fresh).close()
        record_run(fresh, "restore", {"from": store_.where, "snapshot": None, "first_run": True}, {"servers": 0}, now, started)
        _install(fresh, db_path)
    return StageReport(stage="restore", counts={"first_run": 1}, seconds=time.monotonic() - started)


def fetch_manifest(store_: SnapshotStore, chosen: Listed, work: Path) -> Manifest:
    path = work / chosen.manifest
    _read(store_, chosen.manifest, path)
    try:
        manifest = Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise SnapshotError(f"{chosen.manifest} in {store_.where} is not a snapshot manifest: {exc.errors()[0]['msg']} "
                            f"at {'.'.join(map(str, exc.errors()[0]['loc']))}") from exc
    if manifest.snapshot != chosen.stem or manifest.file != chosen.data:
        raise SnapshotError(f"{chosen.manifest} in {store_.where} describes {manifest.file}, not {chosen.data}")
    return manifest


def record_run(path: Path, stage: str, args: dict, counts: dict[str, int], now: datetime, started: float) -> None:
    """The runs row of a restore or a publish, in the database it concerns (so it travels with it)."""
    db = Database(sqlite3.connect(path))
    try:
        run_id = store.start_run(db, stage, args, now)
        store.finish_run(db, run_id, StageReport(stage=stage, counts=counts, seconds=time.monotonic() - started), now)
    finally:
        db.close()


def _install(source: Path, db_path: Path) -> None:
    """Put the verified database at --db in one rename; the old database's WAL files go first, as they are not the new one's."""
    for suffix in ("-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            raise SnapshotError(f"{source}{suffix} left behind: the restored database was not closed cleanly")
    with source.open("rb+") as fh:
        os.fsync(fh.fileno())
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    os.replace(source, db_path)
    directory = os.open(db_path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


# ---------------------------------------------------------------------------- lineage


def lineage(db_path: Path) -> tuple[bool, str | None]:
    """(ever restored or published, the snapshot it descends from: None after a first run)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        row = conn.execute("select args from runs where stage in ('restore', 'publish') and status = 'ok' order by id desc limit 1").fetchone()
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"{db_path}: cannot read its runs: {exc}") from exc
    finally:
        conn.close()
    return (False, None) if row is None else (True, json.loads(row[0]).get("snapshot"))
