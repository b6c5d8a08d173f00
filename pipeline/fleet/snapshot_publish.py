"""Pack and publish: a database becomes a dated snapshot in a store.

Packing copies the database (VACUUM INTO: consistent and compact), refuses the copy unless the soundness check passes,
compresses it with zstd and writes its Datasette metadata and then its manifest, parent included, beside it. Publishing
refuses unless the store's newest snapshot is the packed one's parent, so two runs that restored the same snapshot cannot
both publish and one silently drop the other's work; uploads the file, its metadata and then its manifest, and only then
prunes by the retention policy (deviation 93). A failed upload leaves the store's previous snapshots as they were.

Two paths share these steps. `snapshot publish --to STORE` packs --db into a scratch directory and publishes it at once.
A workflow packs in the job that built the database (`snapshot pack --out DIR`) and hands DIR to a job that publishes it
(`snapshot publish --packed DIR`, deviation 109): that job verifies the file against its manifest (sha256 of the file,
then zstd's checksum and the database's sha256 while decompressing, without writing the database) before the upload.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import zstandard
from pydantic import ValidationError

from pipeline import ENGINE_VERSION, store
from pipeline.datasette_metadata import database_name, metadata
from pipeline.fleet import retention, soundness
from pipeline.fleet.snapshot_format import (
    DATA_SUFFIX,
    MANIFEST_SUFFIX,
    METADATA_SUFFIX,
    ZSTD_LEVEL,
    Manifest,
    chunks,
    file_sha256,
    inspect_database,
    pack,
    packed_database_sha256,
    parse_name,
    stem,
)
from pipeline.fleet.snapshot_store import SnapshotStore, StoreError
from pipeline.fleet.snapshots import Listed, Log, SnapshotError, fetch_manifest, lineage, listing, published, record_run, store_names, workdir
from pipeline.models import StageReport
from pipeline.progress import Progress


class Unsound(SnapshotError):
    """The soundness check refused the database: its verdict, every reason listed."""

    def __init__(self, verdict: soundness.Verdict) -> None:
        self.verdict = verdict
        super().__init__("publish refused: the database is not sound:\n" + "\n".join(f"  - {r}" for r in verdict.reasons))


@dataclass
class Packed:
    manifest: Manifest
    verdict: soundness.Verdict
    seconds: float


def pack_snapshot(db_path: Path, out: Path, *, parent: str | None, baseline: dict[str, int] | None, baseline_from: str, now: datetime,
                  rubrics: list[str], level: int = ZSTD_LEVEL, record: dict | None = None, log: Log = print) -> Packed:
    """Write the snapshot of `db_path` (its `.db.zst` and manifest) into `out`, or raise Unsound / SnapshotError leaving no file
    of it there. The name sorts after `parent`'s; the copy records the publish run (`record`: more of its args)."""
    started = time.monotonic()
    parent_at = parse_name(parent + DATA_SUFFIX)[1] if parent else None
    # Names are to the second, and each must sort after its parent: a publish in the parent's second is named one second on.
    name = stem(max(now, parent_at + timedelta(seconds=1)) if parent_at else now, ENGINE_VERSION)
    data_name, manifest_name, metadata_name = name + DATA_SUFFIX, name + MANIFEST_SUFFIX, name + METADATA_SUFFIX
    out.mkdir(parents=True, exist_ok=True)
    copy = out / f".{name}.db"
    try:
        clock = time.monotonic()
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            conn.execute("vacuum into ?", [str(copy)])  # one read transaction: a consistent copy, without free pages
        except sqlite3.DatabaseError as exc:
            # Say why as the check does (a damaged file's integrity_check), when it can.
            verdict = soundness.check(db_path, baseline, baseline_from, rubrics)
            if not verdict.sound:
                raise Unsound(verdict) from exc
            raise SnapshotError(f"{db_path}: cannot be copied for publishing: {exc}") from exc
        finally:
            conn.close()
        log(f"[publish] copied {db_path} ({copy.stat().st_size / 1e6:.1f} MB); {time.monotonic() - clock:.1f}s")
        clock = time.monotonic()
        verdict = soundness.check(copy, baseline, baseline_from, rubrics)
        verdict.reasons = [r.replace(str(copy), str(db_path)) for r in verdict.reasons]
        if not verdict.sound:
            raise Unsound(verdict)
        log(f"[publish] soundness check passed; {time.monotonic() - clock:.1f}s")
        args = {**(record or {}), "snapshot": name, "parent": parent, "counts": verdict.counts}
        record_run(copy, "publish", args, {"servers": verdict.counts.get("active_servers", 0)}, now, started)
        clock = time.monotonic()
        sha, size, db_sha, db_size = pack(copy, out / data_name, level, progress=Progress("publish", chunks(copy)))
        facts = inspect_database(copy, integrity=False)
        log(f"[publish] packed {db_size / 1e6:.1f} MB into {size / 1e6:.1f} MB (zstd level {level}); {time.monotonic() - clock:.1f}s")
        # `zstd -d` makes the file's name …db.zst into …db, which Datasette names by its stem: the snapshot's name.
        described = json.dumps(metadata(database_name(name + ".db")), indent=2, ensure_ascii=False) + "\n"
        (out / metadata_name).write_text(described, encoding="utf-8")
        manifest = Manifest(snapshot=name, taken_at=store.iso(now), engine_version=ENGINE_VERSION, schema_level=len(facts.migrations),
                            migrations=facts.migrations, parent=parent, file=data_name, size=size, sha256=sha, db_size=db_size,
                            db_sha256=db_sha, counts=facts.counts, metadata=metadata_name, metadata_sha256=file_sha256(out / metadata_name)[0])
        (out / manifest_name).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    except BaseException:
        for path in (out / data_name, out / metadata_name, out / manifest_name):
            path.unlink(missing_ok=True)
        raise
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
    return Packed(manifest=manifest, verdict=verdict, seconds=time.monotonic() - started)


def read_packed(directory: Path, log: Log = print) -> Manifest:
    """The manifest of the one snapshot packed in `directory`, once its file is verified against it; SnapshotError otherwise."""
    manifests = sorted(directory.glob("*" + MANIFEST_SUFFIX)) if directory.is_dir() else []
    if len(manifests) != 1:
        raise SnapshotError(f"{directory}: expected one packed snapshot (a {MANIFEST_SUFFIX} and its {DATA_SUFFIX}), found "
                            f"{len(manifests)} manifests")
    try:
        manifest = Manifest.model_validate_json(manifests[0].read_bytes())
    except ValidationError as exc:
        raise SnapshotError(f"{manifests[0]} is not a snapshot manifest: {exc.errors()[0]['msg']} at "
                            f"{'.'.join(map(str, exc.errors()[0]['loc']))}") from exc
    named = parse_name(manifest.file)
    # The names become the store's file names: only a snapshot's (no path, no other file of the store).
    if named is None or named[0] != manifest.snapshot or manifests[0].name != manifest.snapshot + MANIFEST_SUFFIX:
        raise SnapshotError(f"{manifests[0]} describes {manifest.file}, not the snapshot its name says")
    data = directory / manifest.file
    if not data.is_file():
        raise SnapshotError(f"{directory}: {manifest.file}, which its manifest describes, is missing")
    clock = time.monotonic()
    digest, size = file_sha256(data)
    if (digest, size) != (manifest.sha256, manifest.size):
        raise SnapshotError(f"{data} is not the file that was packed: sha256 {digest[:16]}…, {size:,} bytes; its manifest says "
                            f"{manifest.sha256[:16]}…, {manifest.size:,} bytes (a damaged artifact or a replaced file)")
    try:
        db_digest, db_size = packed_database_sha256(data)
    except zstandard.ZstdError as exc:
        raise SnapshotError(f"{data} is corrupt: zstd cannot decompress it: {exc}") from exc
    if (db_digest, db_size) != (manifest.db_sha256, manifest.db_size):
        raise SnapshotError(f"{data} decompresses to a database that is not the one packed (sha256 {db_digest[:16]}…, {db_size:,} bytes)")
    if manifest.metadata is not None:
        described = directory / manifest.metadata
        if manifest.metadata != manifest.snapshot + METADATA_SUFFIX or not described.is_file():
            raise SnapshotError(f"{directory}: {manifest.snapshot + METADATA_SUFFIX}, the metadata its manifest names, is missing")
        if file_sha256(described)[0] != manifest.metadata_sha256:
            raise SnapshotError(f"{described} is not the metadata that was packed (its sha256 differs from its manifest's)")
    log(f"[publish] verified {manifest.file} ({size / 1e6:.1f} MB; the database {db_size / 1e6:.1f} MB) against its manifest; "
        f"{time.monotonic() - clock:.1f}s")
    return manifest


def check_descent(store_: SnapshotStore, subject: str, known: bool, parent: str | None, snapshots: list[Listed]) -> None:
    """Refuse unless `subject` descends from the store's newest snapshot (`known`: ever restored or published)."""
    if not snapshots:
        return  # nothing to lose: the first publish, or a store emptied by hand
    newest = snapshots[-1].stem
    if parent == newest:
        return
    if not known:
        raise SnapshotError(f"publish refused: {subject} was never restored from {store_.where}, whose newest snapshot is {newest}; "
                            "publishing it would put a database without that history on top. Restore, run the stages, then publish")
    if parent is None:
        raise SnapshotError(f"publish refused: {subject} started empty (--first-run), but {store_.where} now holds {newest}")
    raise SnapshotError(f"publish refused: {store_.where}'s newest snapshot is {newest}, but {subject} descends from {parent}: another "
                        "run published in between, and publishing this would drop its work. Restore again and rerun the stages")


def publish(store_: SnapshotStore, db_path: Path, *, now: datetime, rubrics: list[str], policy: retention.RetentionPolicy = retention.POLICY,
            level: int = ZSTD_LEVEL, log: Log = print) -> StageReport:
    """Pack --db and publish it at once (`snapshot publish --to STORE`)."""
    started = time.monotonic()
    if not db_path.is_file():
        raise SnapshotError(f"{db_path}: no such database to publish")
    snapshots = published(listing(store_names(store_)))
    check_descent(store_, str(db_path), *lineage(db_path), snapshots)
    parent = snapshots[-1] if snapshots else None
    with workdir(db_path) as work:
        baseline = fetch_manifest(store_, parent, work) if parent else None
        packed = pack_snapshot(db_path, work, parent=parent.stem if parent else None, baseline=baseline.counts if baseline else None,
                               baseline_from=f"the snapshot {parent.stem}" if parent else "", now=now, rubrics=rubrics, level=level,
                               record={"to": store_.where}, log=log)
        manifest = packed.manifest
        upload(store_, work, manifest, snapshots, log)
    # Not through open_db: its quick_check of a 3 GB database costs a minute, and the copy of it has just passed integrity_check.
    args = {"to": store_.where, "snapshot": manifest.snapshot, "parent": manifest.parent, "counts": packed.verdict.counts}
    record_run(db_path, "publish", args, {"servers": packed.verdict.counts.get("active_servers", 0)}, now, started)
    return _pruned(store_, manifest, now, policy, started, log)


def publish_packed(store_: SnapshotStore, directory: Path, *, now: datetime, policy: retention.RetentionPolicy = retention.POLICY,
                   log: Log = print) -> StageReport:
    """Publish the snapshot `snapshot pack` wrote into `directory` (`snapshot publish --packed DIR`), verified first."""
    started = time.monotonic()
    manifest = read_packed(directory, log)
    snapshots = published(listing(store_names(store_)))
    if snapshots and snapshots[-1].stem == manifest.snapshot:
        raise SnapshotError(f"publish refused: {store_.where} holds {manifest.snapshot} already (published before)")
    check_descent(store_, f"the packed snapshot {manifest.snapshot}", True, manifest.parent, snapshots)
    upload(store_, directory, manifest, snapshots, log)
    return _pruned(store_, manifest, now, policy, started, log)


def _pruned(store_: SnapshotStore, manifest: Manifest, now: datetime, policy: retention.RetentionPolicy, started: float, log: Log) -> StageReport:
    kept, pruned, failed = prune(store_, now, policy, newest=manifest.snapshot, log=log)
    counts = {"bytes": manifest.size, "db_bytes": manifest.db_size, "kept": kept, "pruned": pruned}
    if failed:
        counts["prune_failed"] = failed
    return StageReport(stage="publish", counts=counts, seconds=time.monotonic() - started)


def upload(store_: SnapshotStore, directory: Path, manifest: Manifest, before: list[Listed], log: Log = print) -> None:
    """The file, its metadata, then its manifest; on any failure, what was uploaded of this snapshot is removed (best effort)
    and the previous snapshots stay as they are."""
    clock = time.monotonic()
    names = [manifest.file, *([manifest.metadata] if manifest.metadata else []), manifest.snapshot + MANIFEST_SUFFIX]
    previous = f"; {store_.where} keeps its previous snapshots (newest {before[-1].stem})" if before else ""
    current = published(listing(store_names(store_)))
    if (current[-1].stem if current else None) != (before[-1].stem if before else None):
        raise SnapshotError(f"publish refused: {store_.where} changed while this snapshot was prepared (newest now "
                            f"{current[-1].stem if current else 'none'}): another run published")
    for name in names:
        try:
            store_.write(name, directory / name)
        except StoreError as exc:
            for written in names:
                try:
                    store_.delete(written)
                except StoreError:
                    pass  # a file without its manifest is not a snapshot; the next publish prunes it
            raise SnapshotError(f"upload failed: {exc}{previous}") from exc
    landed = listing(store_names(store_)).get(manifest.snapshot)
    if landed is None or not landed.complete or (manifest.metadata and landed.metadata is None):
        raise SnapshotError(f"{store_.where} does not list {', '.join(names)} after the upload")
    log(f"[publish] uploaded {manifest.file}, its metadata and its manifest to {store_.where}; {time.monotonic() - clock:.1f}s")


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
        for name in (snapshot.manifest, snapshot.data, snapshot.metadata):
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
