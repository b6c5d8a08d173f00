"""The database a month of history leaves, as published: its size and zstd size, before and after migration 12.

python bench/history_size.py --db PATH      a fleet an engine before migration 12 wrote (copied; it stays as it was)
python bench/history_size.py [--servers N]  a fleet written now

The fleet is bench/snapshot_size.py's (bench/synthetic.py's servers, scored, with 30 days of score history and the raw
fast-probe runs of the last 48 hours) with a deep probe of every remote server a day and a sandbox run of every local
one a week for 30 days (bench/fleet_history.py). With --db: the database as given (the file, its VACUUM INTO copy, that
copy as zstd at the publish level), the time migration 12 takes on it, and the same after (deviation 110).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zstandard  # noqa: E402

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.fleet_history import _daily_probes  # noqa: E402
from bench.snapshot_size import thirty_days  # noqa: E402
from bench.synthetic import NOW, generate  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.fleet.snapshot_format import ZSTD_LEVEL  # noqa: E402
from pipeline.store.connection import applied_migrations  # noqa: E402

MB = 1e6


def timed(work) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def published_size(path: Path, work: Path) -> str:
    """The file as worked on, its VACUUM INTO copy (what a snapshot publishes), that copy as zstd at the publish level."""
    copy, packed = work / "sized.db", work / "sized.db.zst"
    copy_s, _ = timed(lambda: sqlite3.connect(path).execute("vacuum into ?", [str(copy)]))
    with copy.open("rb") as source, packed.open("wb") as target:
        zstd_s, _ = timed(lambda: zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=-1).copy_stream(source, target))
    tables = sqlite3.connect(copy).execute("select name, sum(pgsize) from dbstat group by name order by 2 desc limit 4").fetchall()
    line = (f"{path.stat().st_size / MB:.0f} MB as worked on, {copy.stat().st_size / MB:.0f} MB published (VACUUM INTO {copy_s:.0f}s), "
            f"{packed.stat().st_size / MB:.0f} MB as zstd {ZSTD_LEVEL} ({zstd_s:.0f}s); largest: "
            + ", ".join(f"{name} {size / MB:.0f} MB" for name, size in tables))
    copy.unlink()
    packed.unlink()
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--db", type=Path, help="a fleet an engine before migration 12 wrote (copied; it stays as it was)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fleet = work / "fleet.db"
        speed = calibration()
        if args.db:
            shutil.copy(args.db, fleet)
            if "m012_tool_lists_once" in applied_migrations(sqlite3.connect(fleet)):
                sys.exit(f"{args.db} was written after migration 12: nothing to convert")
            print(f"before migration 12: {published_size(fleet, work)}", flush=True)
            seconds, _ = timed(lambda: store.open_db(fleet).close())
            runs, lists = sqlite3.connect(fleet).execute("select (select count(*) from probe_runs where tools_hash is not null), "
                                                         "(select count(*) from tool_lists)").fetchone()
            print(f"migration 12 (opening the database, its quick_check included): {seconds:.1f}s; {runs} probe runs name {lists} "
                  "tool lists", flush=True)
            print(f"after migration 12: {published_size(fleet, work)}", flush=True)
        else:
            print(f"generating {args.servers} synthetic servers and 30 days of history …", flush=True)
            started = time.perf_counter()
            generate(fleet, args.servers)
            added = thirty_days(fleet, 48)
            db = store.open_db(fleet)
            _daily_probes(db, NOW)
            added |= {"probe_runs": db["probe_runs"].count, "tool_lists": db["tool_lists"].count}
            db.close()
            print(f"  {added} in {time.perf_counter() - started:.0f}s", flush=True)
            print(f"database: {published_size(fleet, work)}", flush=True)
        print(calibration_line(speed, calibration()))


if __name__ == "__main__":
    main()
