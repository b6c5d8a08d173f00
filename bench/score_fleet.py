"""Rescore a synthetic fleet with all four rubrics: wall time, servers per second, peak memory.

python bench/score_fleet.py [--servers 25000] [--db PATH]
Generates the fleet with bench/synthetic.py into a temporary file unless --db names an existing
one (a copy is scored, so the input stays as it was). Target: ≤ 15 s and ≤ 1 GB for 25,000 servers.
"""

from __future__ import annotations

import io
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, fleet_arguments, opened_fleet  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.score import run_score  # noqa: E402


def main() -> None:
    args = fleet_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory() as tmp:
        db, servers = opened_fleet(args, Path(tmp))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        speed = calibration()
        started = time.perf_counter()
        report = run_score(db, servers=servers, now=NOW, progress=Progress("score", len(servers), stream=io.StringIO()))
        seconds = time.perf_counter() - started
        speed_after = calibration()
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        peak, workers_peak = own.ru_maxrss, children.ru_maxrss
        graded = {r["grade"]: r["n"]
                  for r in db.query("select grade, count(*) n from scores where rubric = 'scoreboard' group by grade order by grade")}
        print(f"rescored {len(servers)} servers × 4 rubrics in {seconds:.2f}s = {len(servers) / seconds:,.0f} servers/s")
        print(f"peak memory: main process {peak / 1024:.0f} MB (before scoring {before / 1024:.0f} MB), largest worker {workers_peak / 1024:.0f} MB")
        print(f"CPU: main process {own.ru_utime + own.ru_stime:.1f}s (including generation, when generated here), "
              f"workers {children.ru_utime + children.ru_stime:.1f}s")
        print(calibration_line(speed, speed_after))
        print(report.summary_line())
        print(f"headline grades: {graded}")


if __name__ == "__main__":
    main()
