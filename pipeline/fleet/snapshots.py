"""Restore and publish: the database between runs lives as dated snapshots in a store, never in the git history.

Restore fetches the newest snapshot, verifies it (the manifest's sha256, zstd's own checksum, the database's sha256,
integrity_check, that it is a scoreboard database this engine can read), migrates an older schema and only then replaces
--db, in one rename: any failure leaves --db as it was and says what failed where. No snapshot is an error; starting
empty is `--first-run`, refused when the store holds a snapshot (deviation 94).

Publish refuses unless the store's newest snapshot is the one this database descends from (restored or last
published from it), so two runs that restored the same snapshot cannot both publish and one silently drop the other's
work; copies the database (VACUUM INTO: consistent and compact), refuses it unless the soundness check passes, packs
it, uploads the file and then its manifest, and only then prunes by the retention policy (deviation 93). A failed
upload leaves the store's previous snapshots as they were.
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
from datetime import datetime, timedelta
from pathlib import Path

import zstandard
from pydantic import ValidationError
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, store
from pipeline.fleet import retention, soundness
from pipeline.fleet.snapshot_format import (
    DATA_SUFFIX,
    MANIFEST_SUFFIX,
    ZSTD_LEVEL,
    Manifest,
    file_sha256,
    inspect_database,
    pack,
    parse_name,
    stem,
    unpack,
)
from pipeline.fleet.snapshot_store import SnapshotStore, StoreError
from pipeline.models import StageReport

Log = Callable[[str], None]


class SnapshotError(Exception):
    """Restore or publish failed, or was refused: the message says what, and where."""


@dataclass
class Listed:
    stem: str
    taken_at: datetime
    data: str | None = None
    manifest: str | None = None

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
def _workdir(db_path: Path) -> Iterator[Path]:
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
    with _workdir(db_path) as work:
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
            db_digest, db_size = unpack(packed, restored)
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
        _record(restored, "restore", args, counts, now, started)
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
    with _workdir(db_path) as work:
        fresh = work / "first-run.db"
        store.open_db(fresh).close()
        _record(fresh, "restore", {"from": store_.where, "snapshot": None, "first_run": True}, {"servers": 0}, now, started)
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


def _record(path: Path, stage: str, args: dict, counts: dict[str, int], now: datetime, started: float) -> None:
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


# ---------------------------------------------------------------------------- publish


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


def _check_descent(store_: SnapshotStore, db_path: Path, snapshots: list[Listed]) -> None:
    if not snapshots:
        return  # nothing to lose: the first publish, or a store emptied by hand
    known, parent = lineage(db_path)
    newest = snapshots[-1].stem
    if parent == newest:
        return
    if not known:
        raise SnapshotError(f"publish refused: {db_path} was never restored from {store_.where}, whose newest snapshot is {newest}; "
                            "publishing it would put a database without that history on top. Restore, run the stages, then publish")
    if parent is None:
        raise SnapshotError(f"publish refused: {db_path} started empty (--first-run), but {store_.where} now holds {newest}")
    raise SnapshotError(f"publish refused: {store_.where}'s newest snapshot is {newest}, but {db_path} descends from {parent}: another "
                        "run published in between, and publishing this would drop its work. Restore again and rerun the stages")


def publish(store_: SnapshotStore, db_path: Path, *, now: datetime, rubrics: list[str], policy: retention.RetentionPolicy = retention.POLICY,
            level: int = ZSTD_LEVEL, log: Log = print) -> StageReport:
    started = time.monotonic()
    if not db_path.is_file():
        raise SnapshotError(f"{db_path}: no such database to publish")
    snapshots = published(listing(store_names(store_)))
    _check_descent(store_, db_path, snapshots)
    parent = snapshots[-1] if snapshots else None
    # Names are to the second, and each must sort after its parent: a publish in the parent's second is named one second on.
    name = stem(max(now, parent.taken_at + timedelta(seconds=1)) if parent else now, ENGINE_VERSION)
    data_name, manifest_name = name + DATA_SUFFIX, name + MANIFEST_SUFFIX
    with _workdir(db_path) as work:
        copy = work / f"{name}.db"
        clock = time.monotonic()
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            conn.execute("vacuum into ?", [str(copy)])  # one read transaction: a consistent copy, without free pages
        except sqlite3.DatabaseError as exc:
            raise SnapshotError(f"{db_path}: cannot be copied for publishing: {exc}") from exc
        finally:
            conn.close()
        log(f"[publish] copied {db_path} ({copy.stat().st_size / 1e6:.1f} MB); {time.monotonic() - clock:.1f}s")
        clock = time.monotonic()
        baseline = fetch_manifest(store_, parent, work) if parent else None
        verdict = soundness.check(copy, baseline.counts if baseline else None, f"the snapshot {parent.stem}" if parent else "", rubrics)
        if not verdict.sound:
            raise SnapshotError("publish refused: the database is not sound:\n" + "\n".join(f"  - {r}" for r in verdict.reasons))
        log(f"[publish] soundness check passed; {time.monotonic() - clock:.1f}s")
        args = {"to": store_.where, "snapshot": name, "parent": parent.stem if parent else None, "counts": verdict.counts}
        _record(copy, "publish", args, {"servers": verdict.counts.get("active_servers", 0)}, now, started)
        clock = time.monotonic()
        packed = work / data_name
        sha, size, db_sha, db_size = pack(copy, packed, level)
        facts = inspect_database(copy, integrity=False)
        copy.unlink()
        log(f"[publish] packed {db_size / 1e6:.1f} MB into {size / 1e6:.1f} MB (zstd level {level}); {time.monotonic() - clock:.1f}s")
        manifest = Manifest(snapshot=name, taken_at=store.iso(now), engine_version=ENGINE_VERSION, schema_level=len(facts.migrations),
                            migrations=facts.migrations, parent=args["parent"], file=data_name, size=size, sha256=sha, db_size=db_size,
                            db_sha256=db_sha, counts=facts.counts)
        (work / manifest_name).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        clock = time.monotonic()
        _upload(store_, work, data_name, manifest_name, snapshots)
        log(f"[publish] uploaded {data_name} and its manifest to {store_.where}; {time.monotonic() - clock:.1f}s")
    # Not through open_db: its quick_check of a 3 GB database costs a minute, and the copy of it has just passed integrity_check.
    _record(db_path, "publish", args, {"servers": verdict.counts.get("active_servers", 0)}, now, started)
    kept, pruned, failed = prune(store_, now, policy, newest=name, log=log)
    counts = {"bytes": size, "db_bytes": db_size, "kept": kept, "pruned": pruned}
    if failed:
        counts["prune_failed"] = failed
    return StageReport(stage="publish", counts=counts, seconds=time.monotonic() - started)


def _upload(store_: SnapshotStore, work: Path, data_name: str, manifest_name: str, before: list[Listed]) -> None:
    """The file, then its manifest; on any failure, what was uploaded of this snapshot is removed (best effort) and the
    previous snapshots stay as they are."""
    previous = f"; {store_.where} keeps its previous snapshots (newest {before[-1].stem})" if before else ""
    current = published(listing(store_names(store_)))
    if (current[-1].stem if current else None) != (before[-1].stem if before else None):
        raise SnapshotError(f"publish refused: {store_.where} changed while this snapshot was prepared (newest now "
                            f"{current[-1].stem if current else 'none'}): another run published")
    for name in (data_name, manifest_name):
        try:
            store_.write(name, work / name)
        except StoreError as exc:
            for written in (data_name, manifest_name):
                try:
                    store_.delete(written)
                except StoreError:
                    pass  # a file without its manifest is not a snapshot; the next publish prunes it
            raise SnapshotError(f"upload failed: {exc}{previous}") from exc
    landed = listing(store_names(store_)).get(data_name.removesuffix(DATA_SUFFIX))
    if landed is None or not landed.complete:
        raise SnapshotError(f"{store_.where} does not list {data_name} and its manifest after the upload")


def prune(store_: SnapshotStore, now: datetime, policy: retention.RetentionPolicy, *, newest: str, log: Log = print) -> tuple[int, int, int]:
    """Delete the snapshots the policy drops, and files of snapshots cut short before `newest`: (kept, deleted, failed).
    Manifest first, so a deletion cut short leaves a file without a manifest, never a manifest without its file."""
    listed = listing(store_names(store_))
    complete = published(listed)
    keep = retention.kept([s.taken_at for s in complete], now, policy)
    newest_at = listed[newest].taken_at
    dropped = [s for s in complete if s.taken_at not in keep and s.stem != newest]
    cut_short = [s for s in listed.values() if not s.complete and s.taken_at < newest_at]
    deleted = failed = 0
    for snapshot in dropped + cut_short:
        for name in (snapshot.manifest, snapshot.data):
            if name is None:
                continue
            try:
                store_.delete(name)
                deleted += 1
            except StoreError as exc:
                failed += 1
                log(f"[publish] warning: {exc} (the next publish tries again)")
    if deleted or failed:
        log(f"[publish] retention ({policy.describe()}): kept {len(complete) - len(dropped)} snapshots, deleted {deleted} files")
    return len(complete) - len(dropped), deleted, failed
