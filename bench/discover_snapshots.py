"""Ingest every source snapshot into an empty database and describe the catalog that results.

python bench/discover_snapshots.py [--fixtures DIR] [--runs 3]
Target (issue 5): all snapshots in ../shared/fixtures/sources from an empty database in ≤ 20 s.
Prints the ingest time with, beside it, the calibration loop timed in the same run (bench/calibration.py: figures compare
across runs and machines), records per second, then the catalog's size by source, unique repositories, listing-only servers
(methodology deviation 80) and overlaps.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.discover import run_discover, snapshot_sources  # noqa: E402
from pipeline.discover import sources as registered  # noqa: E402
from pipeline.listing_only import listing_only  # noqa: E402
from pipeline.progress import Progress  # noqa: E402

DEFAULT_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "sources"
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def ingest(fixtures: Path, path: Path):
    db = store.open_db(path)
    started = time.perf_counter()
    sources = snapshot_sources(fixtures)
    report = run_discover(db, sources=sources, now=NOW, progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))
    return db, report, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.fixtures.is_dir():
        sys.exit(f"no snapshots at {args.fixtures}")
    with tempfile.TemporaryDirectory() as tmp:
        times = []
        speed = calibration()
        for run in range(args.runs):
            db, report, seconds = ingest(args.fixtures, Path(tmp) / f"run{run}.db")
            times.append(seconds)
        speed_after = calibration()
        records = sum(v for k, v in report.counts.items() if k.startswith("listed:")) + report.counts.get("skipped", 0)
        wall = statistics.median(times)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"ingest from empty: median {wall:.2f} s over {args.runs} runs (all: {', '.join(f'{t:.2f}' for t in times)}); target ≤ 20 s")
        print(f"  same run, reference workload: {calibration_line(speed, speed_after)}")
        print(f"records read: {records:,} ({records / wall:,.0f} records/s); peak memory {peak:.0f} MB")
        print("phases (last run): " + ", ".join(f"{k} {v:.2f}s" for k, v in report.phases.items()))
        print(f"problems recorded: {report.counts.get('skipped', 0)}")

        rows = list(db.query("select repo_key, sources from servers where is_active = 1"))
        print(f"\ncatalog: {len(rows):,} servers, {len({r['repo_key'] for r in rows if r['repo_key']}):,} unique GitHub repositories, "
              f"{sum(1 for r in rows if not r['repo_key']):,} servers without one")
        listed = [s for s in store.active_servers(db) if listing_only(s)]
        print(f"listing-only (no repository, package or remote): {len(listed):,} ({len(listed) / len(rows):.0%}); "
              + ", ".join(f"{k} {v:,}" for k, v in Counter(" + ".join(s.sources) for s in listed).most_common()))
        by_source = Counter(s for r in rows for s in json.loads(r["sources"]))
        repos_by_source: dict[str, set[str]] = {}
        for r in rows:
            for s in json.loads(r["sources"]):
                if r["repo_key"]:
                    repos_by_source.setdefault(s, set()).add(r["repo_key"])
        print(f"{'source':<22}{'listings':>10}{'servers':>10}{'repos':>10}")
        for source in registered.names():
            listed = report.counts.get(f"listed:{source}", 0)
            print(f"{source:<22}{listed:>10,}{by_source.get(source, 0):>10,}{len(repos_by_source.get(source, ())):>10,}")
        spread = Counter(len(json.loads(r["sources"])) for r in rows)
        print("servers by number of sources: " + ", ".join(f"{n}: {spread[n]:,}" for n in sorted(spread)))
        print("pairwise overlap (servers listed by both):")
        names = [s for s in registered.names() if by_source.get(s)]
        pairs = Counter(pair for r in rows for pair in itertools.combinations(sorted(json.loads(r["sources"])), 2))
        for a, b in sorted(itertools.combinations(sorted(names), 2), key=lambda p: -pairs[p]):
            if pairs[(a, b)]:
                print(f"  {a} ∩ {b}: {pairs[(a, b)]:,}")


if __name__ == "__main__":
    main()
