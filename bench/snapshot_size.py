"""The published snapshot of a synthetic fleet after 30 days: raw and compressed size, publish and restore times.

python bench/snapshot_size.py [--servers 25000] [--db PATH] [--fast-hours 48] [--levels 3,9,12,15]

The fleet of bench/synthetic.py (30 days of fast-probe rollups, one to three deep or sandbox runs a server), scored,
plus what 30 days of the job graph add: a score history row per server, rubric and day, and the raw fast-probe runs of
the last 48 hours (kept that long, then rolled up) of every remote server every 20 minutes. Then: the copy `snapshot
publish` makes (VACUUM INTO), zstd at several levels against gzip, and `snapshot publish` and `snapshot restore`
end to end through a local store.
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
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zstandard  # noqa: E402

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, generate  # noqa: E402
from pipeline import ENGINE_VERSION, store  # noqa: E402
from pipeline.fleet.snapshot_format import ZSTD_LEVEL  # noqa: E402
from pipeline.fleet.snapshot_store import LocalStore  # noqa: E402
from pipeline.fleet.snapshots import publish, restore  # noqa: E402
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
    fast = 0
    with db.atomic():
        for slot in range(fast_hours * 3):
            started = NOW - timedelta(minutes=20 * slot)
            batch = []
            for server_id in remotes:
                ok = rng.random() < 0.9
                result = ProbeResult(server_id=server_id, kind="fast", started_at=started, duration_ms=rng.uniform(80, 900),
                                     transport="streamable-http", outcome=ProbeOutcome.ok if ok else ProbeOutcome.timeout,
                                     detail=None if ok else "no answer within 15 s", era="modern" if ok else None,
                                     protocol_version="2025-11-25" if ok else None, handshake="initialize" if ok else None,
                                     connect_ms=rng.uniform(40, 600) if ok else None, ping_ms=rng.uniform(20, 300) if ok else None,
                                     server_info={"name": server_id, "version": "1.0.0"} if ok else None)
                evidence = store.cleaned_json(result)
                batch.append({"server_id": server_id, "run_id": None, "kind": "fast", "started_at": store.iso(started),
                              "duration_ms": round(result.duration_ms, 2), "transport": "streamable-http", "outcome": result.outcome.value,
                              "detail": result.detail, "era": result.era, "protocol_version": result.protocol_version,
                              "handshake": result.handshake, "connect_ms": result.connect_ms, "ping_ms": result.ping_ms, "tool_count": None,
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


def compressions(raw: Path, levels: list[int]) -> list[str]:
    data = raw.read_bytes()
    lines = []
    for level in levels:
        seconds, packed = timed(lambda: zstandard.ZstdCompressor(level=level, threads=-1, write_checksum=True).compress(data))
        back, _ = timed(lambda: zstandard.ZstdDecompressor().decompress(packed))
        ratio = len(data) / len(packed)
        lines.append(f"  zstd {level:>2}: {len(packed) / MB:8.1f} MB ({ratio:4.1f}x) in {seconds:6.1f}s, decompressed in {back:.1f}s")
    seconds, packed = timed(lambda: gzip.compress(data, compresslevel=6))
    back, _ = timed(lambda: gzip.decompress(packed))
    lines.append(f"  gzip  6: {len(packed) / MB:8.1f} MB ({len(data) / len(packed):4.1f}x) in {seconds:6.1f}s, decompressed in {back:.1f}s")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--db", type=Path, help="an existing fleet after thirty_days (copied; it stays as it was)")
    parser.add_argument("--fast-hours", type=int, default=48)
    parser.add_argument("--levels", default="3,9,12,15")
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
        speed = calibration()
        raw = work / "copy.db"
        copy_s, _ = timed(lambda: sqlite3.connect(fleet).execute("vacuum into ?", [str(raw)]))
        check_s, found = timed(lambda: sqlite3.connect(raw).execute("pragma integrity_check").fetchall())
        print(f"database: {fleet.stat().st_size / MB:.0f} MB as worked on, {raw.stat().st_size / MB:.0f} MB as published (VACUUM INTO "
              f"{copy_s:.1f}s; integrity_check {check_s:.1f}s: {found[0][0]})")
        for table, size in sorted(((r[0], r[1]) for r in sqlite3.connect(raw).execute(
                "select name, sum(pgsize) from dbstat group by name order by 2 desc limit 6")), key=lambda t: -t[1]):
            print(f"  {table:<28} {size / MB:8.1f} MB")
        print("compression of the published copy (threads: every core):")
        for line in compressions(raw, [int(x) for x in args.levels.split(",")]):
            print(line, flush=True)
        raw.unlink()
        shelf = LocalStore(work / "store")
        publish_s, report = timed(lambda: publish(shelf, fleet, now=NOW, rubrics=registry.names(), log=lambda m: print("  " + m, flush=True)))
        print(f"publish (zstd {ZSTD_LEVEL}, local store): {publish_s:.1f}s; {report.summary_line()}")
        target = work / "restored" / "scoreboard.db"
        restore_s, report = timed(lambda: restore(shelf, target, now=NOW + timedelta(hours=1), log=lambda m: print("  " + m, flush=True)))
        print(f"restore (local store): {restore_s:.1f}s; {report.summary_line()}")
        print(calibration_line(speed, calibration()))


if __name__ == "__main__":
    main()
