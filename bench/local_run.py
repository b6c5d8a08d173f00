"""Time each stage of a full run over the embedded local catalog, in a throw-away database.

python bench/local_run.py [--repeat N]
Prints per-stage seconds (median of N runs) and the end-to-end figure. Installs are done once
before timing, so the figures are the pipeline's own cost, not the package registries'.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.analyze import run_analyze  # noqa: E402
from pipeline.analyze.fetch import InstalledPackageFetcher  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.discover.local import LocalCatalogSource  # noqa: E402
from pipeline.judge import OfflineJudge, run_judge  # noqa: E402
from pipeline.probe import run_probe  # noqa: E402
from pipeline.probe.monitor import run_monitor  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.render import run_build  # noqa: E402
from pipeline.sandbox.install import Installer  # noqa: E402
from pipeline.score import run_score  # noqa: E402
from pipeline.score.registry import infos  # noqa: E402


def one_run(settings: Settings, workdir: Path) -> dict[str, float]:
    now = datetime.now(timezone.utc)
    db = store.open_db(workdir / "bench.db")
    installer = Installer.from_settings(settings)
    silent = lambda stage, n: Progress(stage, n, stream=io.StringIO())  # noqa: E731
    times: dict[str, float] = {}

    def timed(name, fn):
        started = time.perf_counter()
        fn()
        times[name] = time.perf_counter() - started

    timed("discover", lambda: run_discover(db, sources=[LocalCatalogSource()], now=now, progress=silent("discover", 1)))
    servers = store.active_servers(db)
    timed("analyze", lambda: run_analyze(db, servers=servers, fetcher=InstalledPackageFetcher(settings.cache_dir), now=now,
                                         progress=silent("analyze", 7)))
    timed("probe", lambda: run_probe(db, servers=servers, installer=installer, settings=settings, now=now, progress=silent("probe", 7)))
    timed("monitor", lambda: run_monitor(db, servers=servers, installer=installer, settings=settings, now=now, progress=silent("monitor", 7)))
    timed("judge", lambda: run_judge(db, servers=servers, providers=[OfflineJudge()], now=now, progress=silent("judge", 7)))
    timed("score", lambda: run_score(db, servers=servers, now=now, progress=silent("score", 7)))
    timed("build", lambda: run_build(db, rubrics=infos(), site_dir=workdir / "_site", now=now))
    db.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = Settings.from_env()
    specs = [e.launch for e in LocalCatalogSource().read().entries if e.launch]
    Installer.from_settings(settings).install(specs)
    runs = []
    speed = calibration()
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_run(settings, Path(tmp)))
    speed_after = calibration()
    print(f"embedded default: {len(specs)} servers, {args.repeat} runs, concurrency {settings.concurrency}")
    for stage in runs[0]:
        values = [r[stage] for r in runs]
        print(f"  {stage:<9} median {statistics.median(values):7.3f}s  (min {min(values):.3f}s, max {max(values):.3f}s)")
    totals = [sum(r.values()) for r in runs]
    print(f"  {'total':<9} median {statistics.median(totals):7.3f}s")
    print(f"  {calibration_line(speed, speed_after)}")


if __name__ == "__main__":
    main()
