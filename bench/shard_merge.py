"""The judge stage of a synthetic fleet in shards, each through the real `scoreboard judge --shard I/N --shard-db`, then
`scoreboard merge` of them all: time per shard (with the copy of the main database and the extraction it includes),
shard database sizes, and the merge's time.

python bench/shard_merge.py [--servers 25000] [--shards 20] [--db PATH]
Generates the fleet with bench/synthetic.py into a temporary directory unless --db names an existing one (copied, so it
stays as it was). The fleet is not scored first, so the judge rates the remote third (local servers need Assessed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import prepared_fleet  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.cli import main as scoreboard  # noqa: E402
from pipeline.fleet.merge import merge_shards  # noqa: E402
from pipeline.progress import Progress  # noqa: E402

LINE = re.compile(r"copy of the main database ([\d.]+)s, extraction ([\d.]+)s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--db", type=Path, help="an existing synthetic database to copy (it stays as it was)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        main_db = prepared_fleet(args, Path(tmp))
        speed = calibration()
        walls, copies, extracts, sizes = [], [], [], []
        for i in range(1, args.shards + 1):
            path = Path(tmp) / f"judge-{i}.db"
            out = io.StringIO()
            started = time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                scoreboard(["judge", "--db", str(main_db), "--shard", f"{i}/{args.shards}", "--shard-db", str(path)])
            walls.append(time.perf_counter() - started)
            copy, extract = map(float, LINE.search(out.getvalue()).groups())
            copies.append(copy)
            extracts.append(extract)
            sizes.append(path.stat().st_size)
            print(f"shard {i:>2}/{args.shards}: {walls[-1]:5.1f}s (copy {copy:.1f}s, extraction {extract:.1f}s), {sizes[-1] / 1e6:.2f} MB",
                  flush=True)
        db = store.open_db(main_db)
        started = time.perf_counter()
        report = merge_shards(db, sorted(Path(tmp).glob("judge-*.db")), now=datetime.now(timezone.utc),
                              progress=Progress("merge", args.shards, stream=io.StringIO()))
        merge_seconds = time.perf_counter() - started
        judgements = db.execute("select count(*) from judgements").fetchone()[0]
        servers = db.execute("select count(*) from servers where is_active = 1").fetchone()[0]
        db.close()
        speed_after = calibration()
        main_size = main_db.stat().st_size
    print(f"fleet: {servers} servers, main database {main_size / 1e6:.0f} MB; {args.shards} shards of the judge stage")
    print(f"shard wall time: median {statistics.median(walls):.1f}s, max {max(walls):.1f}s, total {sum(walls):.1f}s "
          f"(of which copying the main database {sum(copies):.1f}s, extraction {sum(extracts):.1f}s)")
    print(f"shard databases: median {statistics.median(sizes) / 1e6:.2f} MB, max {max(sizes) / 1e6:.2f} MB, "
          f"total {sum(sizes) / 1e6:.1f} MB ({sum(sizes) / main_size:.1%} of the main database)")
    print(f"merge of {report.merged} shards: {merge_seconds:.1f}s; {report.summary_line()}; judgements in main {judgements}")
    print(calibration_line(speed, speed_after))


if __name__ == "__main__":
    main()
