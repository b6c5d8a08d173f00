"""The published snapshot of a synthetic fleet after 30 days: raw and compressed size, publish and restore times.

python bench/snapshot_size.py [--servers 25000] [--db PATH] [--fast-hours 48] [--levels 3,9,12,15] [--sample-mb 256]

The fleet of bench/synthetic.py (30 days of fast-probe rollups, one to three deep or sandbox runs a server), scored,
plus what 30 days of the job graph add: a score history row per server, rubric and day, and the raw fast-probe runs of
the last 48 hours (kept that long, then rolled up) of every remote server every 20 minutes. Then: the copy `snapshot
publish` makes (VACUUM INTO), zstd at several levels against gzip (on a sample of it), and `snapshot publish` and `snapshot restore`
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


def compressions(raw: Path, levels: list[int], sample_mb: int) -> list[str]:
    """Each level on the first `sample_mb` of the published copy (the whole file at the chosen level is timed by publish)."""
    with raw.open("rb") as fh:
        data = fh.read(sample_mb * 1_000_000)
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
    parser.add_argument("--sample-mb", type=int, default=256, help="compare the levels on this much of the database")
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
        print(f"compression of the first {min(args.sample_mb, raw.stat().st_size / MB):.0f} MB of the published copy (threads: every core):")
        for line in compressions(raw, [int(x) for x in args.levels.split(",")], args.sample_mb):
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
