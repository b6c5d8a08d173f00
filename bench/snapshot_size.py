"""The published snapshot of a synthetic fleet after 30 days: sizes, and the time of each step of the shard and publish paths.

python bench/snapshot_size.py [--servers 25000] [--db PATH] [--keep PATH] [--fast-hours 48] [--levels 1,3,6,12] [--level 1]

The fleet of bench/synthetic.py (30 days of fast-probe rollups, one to three deep or sandbox runs a server), scored,
plus what 30 days of the job graph add: a score history row per server, rubric and day, and the raw fast-probe runs of
the last 48 hours (kept that long, then rolled up) of every remote server every 20 minutes. Then:
- zstd at each of --levels (every core) on the whole published copy: size, seconds to pack, seconds to verify (decompress
  and hash, as `snapshot publish --packed` does), and gzip 6 on a sample for comparison;
- the publish path as it was (`snapshot check`, the raw database as an artifact, zipped at upload-artifact's default
  level 6, then `snapshot publish`: VACUUM INTO, the check again, zstd 12), summed from its measured steps, against the
  path now (`snapshot pack` at --level, the packed files as an artifact stored as they are, `snapshot publish --packed`),
  run end to end through a local store, then restored;
- a shard job's setup of the capture: the private copy and the stage's quick_check of it, against `--shard-in-place`.
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import zlib
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zstandard  # noqa: E402

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, generate  # noqa: E402
from pipeline import ENGINE_VERSION, store  # noqa: E402
from pipeline.fleet import soundness  # noqa: E402
from pipeline.fleet.capture import captured  # noqa: E402
from pipeline.fleet.shards import Shard  # noqa: E402
from pipeline.fleet.snapshot_format import ZSTD_LEVEL, pack, packed_database_sha256  # noqa: E402
from pipeline.fleet.snapshot_publish import pack_snapshot, publish, publish_packed  # noqa: E402
from pipeline.fleet.snapshot_store import LocalStore  # noqa: E402
from pipeline.fleet.snapshots import lineage, restore  # noqa: E402
from pipeline.models import ProbeOutcome, ProbeResult  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.score import registry, run_score  # noqa: E402

MB = 1e6


def thirty_days(path: Path, fast_hours: int, seed: int = 1) -> dict[str, int]:
    """Score the fleet, then add the score history of 29 earlier days and the raw fast runs of the last `fast_hours`."""
    db = store.open_db(path)
    run_score(db, servers=store.active_servers(db), now=NOW, progress=Progress("score", 1, stream=io.StringIO()))
    rng = random.Random(seed)
    today = db.execute("select max(day) from score_history").fetchone()[0]
    rows = list(db.query("select * from score_history where day = ?", [today]))
    with db.atomic():
        for back in range(1, 30):
            day = (NOW.date() - timedelta(days=back)).isoformat()
            db["score_history"].insert_all(
                ({**r, "day": day, "composite": None if r["composite"] is None else round(r["composite"] + rng.uniform(-2, 2), 1)} for r in rows),
                batch_size=2000)
    remotes = [r["id"] for r in db.query("select id from servers where remote_url is not null")]
    # The evidence record_probe stores for a fast probe, made once per outcome by the real model and filled in per run.
    ok_run = store.cleaned_json(ProbeResult(server_id="x", kind="fast", started_at=NOW, duration_ms=1.0, transport="streamable-http",
                                            outcome=ProbeOutcome.ok, era="modern", protocol_version="2025-11-25", handshake="initialize",
                                            connect_ms=1.0, ping_ms=1.0, server_info={"name": "x", "version": "1.0.0"}))
    timed_out = store.cleaned_json(ProbeResult(server_id="x", kind="fast", started_at=NOW, duration_ms=1.0, transport="streamable-http",
                                               outcome=ProbeOutcome.timeout, detail="no answer within 15 s"))
    fast = 0
    with db.atomic():
        for slot in range(fast_hours * 3):
            started = store.iso(NOW - timedelta(minutes=20 * slot))
            batch = []
            for server_id in remotes:
                ok = rng.random() < 0.9
                evidence = {**(ok_run if ok else timed_out), "server_id": server_id, "started_at": started,
                            "duration_ms": round(rng.uniform(80, 900), 2)}
                if ok:
                    evidence.update(connect_ms=rng.uniform(40, 600), ping_ms=rng.uniform(20, 300),
                                    server_info={"name": server_id, "version": "1.0.0"})
                batch.append({"server_id": server_id, "run_id": None, "kind": "fast", "started_at": started, "duration_ms": evidence["duration_ms"],
                              "transport": "streamable-http", "outcome": evidence["outcome"], "detail": evidence["detail"], "era": evidence["era"],
                              "protocol_version": evidence["protocol_version"], "handshake": evidence["handshake"],
                              "connect_ms": evidence["connect_ms"], "ping_ms": evidence["ping_ms"], "tool_count": None,
                              "evidence": store.dumps(evidence), "engine_version": ENGINE_VERSION})
            db["probe_runs"].insert_all(batch, batch_size=2000)
            fast += len(batch)
    counts = {"score_history": db["score_history"].count, "fast_runs": fast, "probe_runs": db["probe_runs"].count}
    db.close()
    return counts


def timed(work) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def compressions(raw: Path, levels: list[int], sample_mb: int, work: Path) -> list[str]:
    """Each level on the whole published copy: size, pack and verify seconds; gzip 6 on its first `sample_mb` (gzip is slow)."""
    lines = []
    for level in levels:
        target = work / f"level-{level}.db.zst"
        seconds, _ = timed(lambda: pack(raw, target, level))
        back, _ = timed(lambda: packed_database_sha256(target))
        size = target.stat().st_size
        lines.append(f"  zstd {level:>2}: {size / MB:8.1f} MB ({raw.stat().st_size / size:4.1f}x) packed in {seconds:6.1f}s, "
                     f"verified (decompressed and hashed) in {back:.1f}s")
        target.unlink()
    with raw.open("rb") as fh:
        data = fh.read(sample_mb * 1_000_000)
    seconds, packed = timed(lambda: gzip.compress(data, compresslevel=6))
    level_12 = len(zstandard.ZstdCompressor(level=12, threads=-1).compress(data))
    lines.append(f"  gzip  6 on the first {len(data) / MB:.0f} MB: {len(packed) / MB:.1f} MB in {seconds:.1f}s (zstd 12: {level_12 / MB:.1f} MB)")
    return lines


def zipped_seconds(path: Path) -> float:
    """upload-artifact's zip of a raw database: deflate at its default level 6, streamed (the bytes are not kept)."""
    def deflate() -> None:
        compressor = zlib.compressobj(6)
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                compressor.compress(chunk)
        compressor.flush()
    return timed(deflate)[0]


def check_seconds(path: Path) -> float:
    return timed(lambda: soundness.check(path, None, "", registry.names()))[0]


def capture_seconds(main: Path, work: Path, in_place: bool) -> float:
    """A shard job's setup before its stage does anything: the capture, and the stage's opening of the database."""
    def setup() -> None:
        with captured(main, work / f"shard-{in_place}.db", "monitor", Shard(1, 4), in_place=in_place) as taken:
            store.open_db(taken.path, integrity_check=not in_place).close()
    return timed(setup)[0]


def publish_paths(fleet: Path, work: Path, level: int, level_12_seconds: float) -> list[str]:
    """The old publish path, summed from its measured steps, against the new one run end to end through a local store."""
    shelf = LocalStore(work / "store")
    publish(shelf, fleet, now=NOW, rubrics=registry.names(), level=level, log=lambda m: None)  # the parent the runs restore
    restored = work / "job" / "scoreboard.db"
    restore(shelf, restored, now=NOW + timedelta(minutes=1), log=lambda m: None)
    check_s = check_seconds(restored)
    zip_s = zipped_seconds(restored)
    copy = work / "copy.db"
    vacuum_s, _ = timed(lambda: sqlite3.connect(restored).execute("vacuum into ?", [str(copy)]))
    check_copy_s = check_seconds(copy)
    copy.unlink()
    old = check_s + zip_s + vacuum_s + check_copy_s + level_12_seconds
    lines = [f"publish path before: {old:.1f}s = snapshot check {check_s:.1f}s + raw artifact zipped {zip_s:.1f}s "
             f"({restored.stat().st_size / MB:.0f} MB) + VACUUM INTO {vacuum_s:.1f}s + check of the copy {check_copy_s:.1f}s + zstd 12 "
             f"{level_12_seconds:.1f}s"]
    _, parent = lineage(restored)
    baseline, baseline_from = soundness.descent_baseline(restored)
    out = work / "packed"
    pack_s, packed = timed(lambda: pack_snapshot(restored, out, parent=parent, baseline=baseline, baseline_from=baseline_from,
                                                 now=NOW + timedelta(minutes=5), rubrics=registry.names(), level=level, log=lambda m: None))
    publish_s, report = timed(lambda: publish_packed(shelf, out, now=NOW + timedelta(minutes=6), log=lambda m: print("  " + m, flush=True)))
    lines.append(f"publish path now: {pack_s + publish_s:.1f}s = snapshot pack (zstd {level}) {pack_s:.1f}s + publish --packed "
                 f"(verify, upload to a local store, prune) {publish_s:.1f}s; artifact {packed.manifest.size / MB:.1f} MB stored as is "
                 f"(was the raw {restored.stat().st_size / MB:.0f} MB)")
    again = work / "again" / "scoreboard.db"
    restore_s, _ = timed(lambda: restore(shelf, again, now=NOW + timedelta(minutes=7), log=lambda m: None))
    lines.append(f"restore of the zstd {level} snapshot: {restore_s:.1f}s; {report.summary_line()}")
    capture_copy = capture_seconds(again, work, in_place=False)
    capture_in_place = capture_seconds(again, work, in_place=True)
    lines.append(f"shard job setup: private copy + quick_check {capture_copy:.1f}s, --shard-in-place {capture_in_place:.1f}s "
                 f"(saved {capture_copy - capture_in_place:.1f}s)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--db", type=Path, help="an existing fleet after thirty_days (copied; it stays as it was)")
    parser.add_argument("--keep", type=Path, help="save the generated fleet here, for --db next time")
    parser.add_argument("--fast-hours", type=int, default=48)
    parser.add_argument("--levels", default="1,3,6,12")
    parser.add_argument("--level", type=int, default=1, help="the fast-probe workflow's pack level (its pack_level)")
    parser.add_argument("--sample-mb", type=int, default=256, help="compare gzip on this much of the database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fleet = work / "fleet.db"
        if args.db:
            shutil.copy(args.db, fleet)
        else:
            print(f"generating {args.servers} synthetic servers and 30 days of history …", flush=True)
            started = time.perf_counter()
            generate(fleet, args.servers)
            added = thirty_days(fleet, args.fast_hours)
            print(f"  {added} in {time.perf_counter() - started:.0f}s", flush=True)
            if args.keep:
                shutil.copy(fleet, args.keep)
        speed = calibration()
        raw = work / "copy.db"
        copy_s, _ = timed(lambda: sqlite3.connect(fleet).execute("vacuum into ?", [str(raw)]))
        check_s, found = timed(lambda: sqlite3.connect(raw).execute("pragma integrity_check").fetchall())
        print(f"database: {fleet.stat().st_size / MB:.0f} MB as worked on, {raw.stat().st_size / MB:.0f} MB as published (VACUUM INTO "
              f"{copy_s:.1f}s; integrity_check {check_s:.1f}s: {found[0][0]})")
        for table, size in sorted(((r[0], r[1]) for r in sqlite3.connect(raw).execute(
                "select name, sum(pgsize) from dbstat group by name order by 2 desc limit 6")), key=lambda t: -t[1]):
            print(f"  {table:<28} {size / MB:8.1f} MB")
        levels = [int(x) for x in args.levels.split(",")]
        print(f"zstd on the whole published copy (threads: every core), default level {ZSTD_LEVEL}:")
        lines = compressions(raw, sorted(set(levels) | {12}), args.sample_mb, work)
        for line in lines:
            print(line, flush=True)
        level_12 = float(next(line for line in lines if line.startswith("  zstd 12")).split("packed in")[1].split("s,")[0])
        raw.unlink()
        for line in publish_paths(fleet, work, args.level, level_12):
            print(line, flush=True)
        print(calibration_line(speed, calibration()))


if __name__ == "__main__":
    main()
