"""A published snapshot's files: their names, the manifest, packing the database and reading what a database file holds.

A snapshot is three files in a store: `scoreboard-<UTC time>-engine-<version>.db.zst`, the database compressed with zstd
(deviation 92); `….metadata.json`, its Datasette metadata (every table and column documented, the canned queries), keyed
to the name Datasette gives the file it decompresses to; and `….manifest.json`, written last: the other two's sha256 and
the data's size, the database's own sha256 and size, row counts and schema level. The manifest is the commit record: a
database file without one is an upload cut short. A snapshot published before the metadata was has none.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Literal

import zstandard
from pydantic import BaseModel
from sqlite_utils import Database

from pipeline.progress import Progress
from pipeline.store.connection import SQLITE_HEADER, applied_migrations
from pipeline.store.migrations import migrations

DATA_SUFFIX = ".db.zst"
MANIFEST_SUFFIX = ".manifest.json"
METADATA_SUFFIX = ".metadata.json"
KINDS = {DATA_SUFFIX: "data", MANIFEST_SUFFIX: "manifest", METADATA_SUFFIX: "metadata"}
STAMP = "%Y-%m-%dT%H%M%SZ"
NAME = re.compile(r"^scoreboard-(\d{4}-\d{2}-\d{2}T\d{6}Z)-engine-([0-9A-Za-z.+_-]+?)(\.db\.zst|\.manifest\.json|\.metadata\.json)$")
ENGINE_NOTE = "upgrade the engine, or restore an older snapshot with --snapshot"
ZSTD_LEVEL = 12  # deviation 92: measured by bench/snapshot_size.py
CHUNK = 1 << 20
# Row counts a manifest records; the soundness check compares some of them with the previous snapshot's (deviation 91).
COUNTS = {
    "servers": "select count(*) from servers",
    "active_servers": "select count(*) from servers where is_active = 1",
    "scored_servers": "select count(distinct server_id) from scores",
    "scores": "select count(*) from scores",
    "score_history": "select count(*) from score_history",
    "analyses": "select count(*) from analyses",
    "probe_runs": "select count(*) from probe_runs",
    "probe_daily": "select count(*) from probe_daily",
    "tool_snapshots": "select count(*) from tool_snapshots",
    "judgements": "select count(*) from judgements",
    "runs": "select count(*) from runs",
}


def stem(taken_at: datetime, engine: str) -> str:
    return f"scoreboard-{taken_at.astimezone(timezone.utc).strftime(STAMP)}-engine-{engine}"


def parse_name(name: str) -> tuple[str, datetime, str] | None:
    """(stem, time taken, which file: "data", "manifest" or "metadata") of a snapshot file's name; None for any other name."""
    match = NAME.match(name)
    if not match:
        return None
    taken = datetime.strptime(match.group(1), STAMP).replace(tzinfo=timezone.utc)
    return name[: -len(match.group(3))], taken, KINDS[match.group(3)]


class Manifest(BaseModel):
    format: Literal[1] = 1
    snapshot: str  # the stem: the name of the snapshot, without suffix
    taken_at: str
    engine_version: str
    schema_level: int  # how many of the engine's migrations the database holds
    migrations: list[str]
    parent: str | None  # the snapshot this database was restored from (None: a first run)
    file: str
    compression: Literal["zstd"] = "zstd"
    size: int
    sha256: str  # of the compressed file
    db_size: int
    db_sha256: str
    counts: dict[str, int]
    metadata: str | None = None  # the Datasette metadata's file (None: a snapshot published before there was one)
    metadata_sha256: str | None = None


# ---------------------------------------------------------------------------- packing


def chunks(path: Path) -> int:
    """How many CHUNKs (MiB) `path` is read in: the total of a pack's progress."""
    return -(-path.stat().st_size // CHUNK)


def pack(database: Path, target: Path, level: int = ZSTD_LEVEL, progress: Progress | None = None) -> tuple[str, int, str, int]:
    """Compress `database` into `target`: (sha256 of the file, its size, sha256 of the database, its size). `progress`
    (its total: `chunks(database)`) counts MiB read, so its rate is MiB a second."""
    compressor = zstandard.ZstdCompressor(level=level, threads=-1, write_checksum=True)
    raw, packed = hashlib.sha256(), _Hashing(target.open("wb"))
    with database.open("rb") as source, packed:
        with compressor.stream_writer(packed, size=database.stat().st_size, closefd=False) as writer:
            while chunk := source.read(CHUNK):
                raw.update(chunk)
                writer.write(chunk)
                if progress is not None:
                    progress.step("MiB read", f"{packed.size / 1e6:.1f} MB compressed so far")
    return packed.hash.hexdigest(), packed.size, raw.hexdigest(), database.stat().st_size


def unpack(source: Path, target: Path, progress: Progress | None = None) -> tuple[str, int]:
    """Decompress `source` into `target`: (sha256 of the database, its size). zstandard.ZstdError when it is damaged.
    `progress` (its total: the database's size in CHUNKs, from the manifest) counts MiB written."""
    out = _Hashing(target.open("wb"))
    with source.open("rb") as packed, out, zstandard.ZstdDecompressor().stream_reader(packed, read_size=CHUNK) as reader:
        while chunk := reader.read(CHUNK):
            out.write(chunk)
            if progress is not None:
                progress.step("MiB written", f"{out.size / 1e6:.1f} MB of the database")
    return out.hash.hexdigest(), out.size


def packed_database_sha256(source: Path) -> tuple[str, int]:
    """(sha256, size) of the database `source` decompresses to, streamed: nothing is written. zstandard.ZstdError when it is
    damaged (zstd checks its own checksum at the frame's end)."""
    digest, size = hashlib.sha256(), 0
    with source.open("rb") as packed, zstandard.ZstdDecompressor().stream_reader(packed, read_size=CHUNK) as reader:
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def file_sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


class _Hashing:
    """A binary file that hashes and counts what is written to it."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh, self.hash, self.size = fh, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()

    def __enter__(self) -> _Hashing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


# ---------------------------------------------------------------------------- what a database file holds


@functools.cache
def engine_migrations() -> tuple[str, ...]:
    """The migrations this engine applies, in order (read from a new in-memory database, as open_db would migrate one)."""
    db = Database(memory=True)
    migrations.apply(db)
    return tuple(m.name for m in migrations.applied(db))


class DatabaseFacts(BaseModel):
    problems: list[str]  # what makes it unreadable, not ours, damaged or newer than this engine; empty when sound
    migrations: list[str] = []
    missing_migrations: list[str] = []  # the engine's migrations it lacks: an older schema (open_db would add them)
    counts: dict[str, int] = {}


def inspect_database(path: Path, *, integrity: bool = True) -> DatabaseFacts:
    """Read, never write: is this file a sound scoreboard database this engine can read, at which schema level, with how many rows."""
    if not path.is_file():
        return DatabaseFacts(problems=[f"{path}: no such file"])
    with path.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            return DatabaseFacts(problems=[f"{path}: not a SQLite database (no SQLite header)"])
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if integrity:
            found = [row[0] for row in conn.execute("pragma integrity_check(20)")]
            if found != ["ok"]:
                return DatabaseFacts(problems=[f"{path}: integrity_check failed: {'; '.join(found[:5])}"])
        tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
        if "_sqlite_migrations" not in tables:
            return DatabaseFacts(problems=[f"{path}: a SQLite database, but not a scoreboard database (no migrations table)"])
        applied = applied_migrations(conn)
        if not applied:
            return DatabaseFacts(problems=[f"{path}: a SQLite database, but not a scoreboard database (none of its migrations)"])
        known = engine_migrations()
        newer = [name for name in applied if name not in known]
        problems = [f"{path}: its schema is newer than this engine ({ENGINE_NOTE}): it holds migrations {', '.join(newer)}"] if newer else []
        counts = {}
        for name, sql in COUNTS.items():
            try:
                counts[name] = conn.execute(sql).fetchone()[0]
            except sqlite3.OperationalError:
                continue  # a table this schema level does not have
        return DatabaseFacts(problems=problems, migrations=applied, missing_migrations=[m for m in known if m not in applied], counts=counts)
    except sqlite3.DatabaseError as exc:
        return DatabaseFacts(problems=[f"{path}: cannot be read as a SQLite database: {exc}"])
    finally:
        conn.close()

