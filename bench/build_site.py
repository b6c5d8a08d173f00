"""Build the static site from a synthetic fleet: full build, then a rebuild after 1% of servers change.

python bench/build_site.py [--servers 25000] [--db PATH]
Targets (issue 4): full build ≤ 60 s and ≤ 1.5 GB on 2 cores; rebuild after 1% changes ≤ 10 s.
"""

from __future__ import annotations

import io
import resource
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, fleet_arguments, opened_fleet  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.render import run_build  # noqa: E402
from pipeline.score import run_score  # noqa: E402
from pipeline.score.registry import infos  # noqa: E402


def _cpu() -> tuple[float, float]:
    """(user, system) CPU seconds of this process and its finished workers."""
    me, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + workers.ru_utime, me.ru_stime + workers.ru_stime


def size_of(root: Path) -> tuple[int, int, int]:
    """Files, HTML pages, and total bytes under the site."""
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(1 for p in files if p.suffix == ".html"), sum(p.stat().st_size for p in files)


def main() -> None:
    args = fleet_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory() as tmp:
        db, servers = opened_fleet(args, Path(tmp))
        run_score(db, servers=servers, now=NOW - timedelta(days=1), progress=Progress("score", len(servers), stream=io.StringIO()))
        run_score(db, servers=servers, now=NOW, progress=Progress("score", len(servers), stream=io.StringIO()))
        site = Path(tmp) / "site"
        speed = calibration()
        started, cpu = time.perf_counter(), _cpu()
        report = run_build(db, rubrics=infos(), site_dir=site, now=NOW)
        after = _cpu()
        full, user, system = time.perf_counter() - started, after[0] - cpu[0], after[1] - cpu[1]
        cpu = user + system
        files, pages, size = size_of(site)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"full build: {len(servers)} servers, {full:.1f}s, {pages:,} pages ({pages / full:,.0f}/s), {files:,} files ({files / full:,.0f}/s), "
              f"{size / 1e6:,.0f} MB, peak {peak:.0f} MB")
        # CPU seconds (this process and its render workers): steadier than wall time on a shared machine
        print(f"  cpu {cpu:.0f} s in all ({cpu / full:.2f} cores busy on average): user {user:.0f} s, system {system:.0f} s; "
              f"{calibration_line(speed, calibration())}")
        print(f"  {report.summary_line()}")
        print("  phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in report.phases.items()))
        changed = servers[: max(1, len(servers) // 100)]
        with db.atomic():
            for server in changed:
                db["servers"].update(server.id, {"description": (server.description or "") + " (updated)"})
        started = time.perf_counter()
        report = run_build(db, rubrics=infos(), site_dir=site, now=NOW)
        print(f"rebuild after {len(changed)} servers changed: {time.perf_counter() - started:.1f}s; {report.summary_line()}")
        print("  phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in report.phases.items()))


if __name__ == "__main__":
    main()
