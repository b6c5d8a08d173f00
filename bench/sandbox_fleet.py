"""Install and probe 50 real packages from the catalog snapshot through the sandbox: throughput and outcome classes.

python bench/sandbox_fleet.py [--fixtures DIR] [--count 50] [--seed 14] [--sandbox auto|bubblewrap|docker]
The snapshot is ingested into a temp database; the servers it makes probeable (an npm or PyPI package with a known
launch) are sorted by id and --count of them drawn with a seeded generator, so every run probes the same packages.
They are installed from the package registries into an empty cache and probed in the sandbox, as `scoreboard probe` does.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.discover_snapshots import DEFAULT_FIXTURES  # noqa: E402
from bench.sandboxed import counted, probe_servers, quiet, require, sandbox_settings  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.discover import run_discover, snapshot_sources  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--sandbox", choices=("auto", "bubblewrap", "docker"), help="the backend (default: SCOREBOARD_SANDBOX or auto)")
    args = parser.parse_args()
    require("installer", "backend choice", "probe adapter")
    with tempfile.TemporaryDirectory() as tmp:
        settings, backend = sandbox_settings(Path(tmp), args.sandbox)
        db = store.open_db(Path(tmp) / "fleet.db")
        sources = snapshot_sources(args.fixtures)
        run_discover(db, sources=sources, now=datetime.now(timezone.utc), progress=quiet("discover", len(sources) + 1))
        candidates = sorted((s for s in store.active_servers(db) if s.launch is not None), key=lambda s: s.id)
        if len(candidates) < args.count:
            sys.exit(f"only {len(candidates)} servers of the snapshot have a launch: is the launch of discovered servers in this tree?")
        chosen = random.Random(args.seed).sample(candidates, args.count)
        registries = Counter(s.launch.registry for s in chosen)
        print(f"{len(candidates)} probeable servers in the snapshot; {args.count} drawn (seed {args.seed}): {counted(registries)}; "
              f"backend {backend}")
        speed = calibration()
        install, probe, counts = probe_servers(db, chosen, settings.cache_dir, settings, "fleet")
        speed_after = calibration()
        seconds = install + probe
        print(f"{args.count} packages installed and probed in {seconds:.0f} s: {60 * args.count / seconds:.1f} packages/minute "
              f"(install {install:.0f} s, probe {probe:.0f} s at concurrency {settings.concurrency})")
        print(f"  outcomes: {counted(counts)}")
        print(f"  {calibration_line(speed, speed_after)}")
        print(f"summary: {60 * args.count / seconds:.1f} packages/minute over {args.count} real packages; {counts.get('ok', 0)} ok")


if __name__ == "__main__":
    main()
