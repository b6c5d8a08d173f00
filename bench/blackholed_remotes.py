"""Black-holed remotes through the real monitor and deep probe: wall time of each stage.

python bench/blackholed_remotes.py [--remotes 600] [--concurrency N] [--connect-timeout S]

Issue 18's target: 600 remotes that never accept a connection take at most 10 minutes per stage. Each remote is a
loopback listener whose accept queue is full (bench/blackholes.py), so every connection waits out the connect deadline.
The stages run as `scoreboard monitor` and `scoreboard probe` in a child process, with the settings' defaults unless given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.blackholes import black_holes  # noqa: E402
from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.models import CatalogEntry, SourceRecord  # noqa: E402
from pipeline.progress import Progress  # noqa: E402

TARGET = 600.0  # seconds per stage


class Listed:
    name = "bench"

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    def read(self):
        from pipeline.discover import SourceBatch

        return SourceBatch(entries=[CatalogEntry(id=f"blackholed-{i:04d}", name=f"blackholed-{i:04d}", transport="streamable-http", remote_url=url,
                                                 keys=[f"bench:{i}"], records=[SourceRecord(source="bench", key=str(i))])
                                    for i, url in enumerate(self.urls)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--remotes", type=int, default=600)
    parser.add_argument("--concurrency", type=int, help="default: the settings' own")
    parser.add_argument("--connect-timeout", type=float, help="default: the settings' own")
    args = parser.parse_args()
    defaults = Settings()
    concurrency, connect = args.concurrency or defaults.concurrency, args.connect_timeout or defaults.connect_timeout
    speed = calibration()
    with tempfile.TemporaryDirectory() as directory, black_holes(args.remotes) as urls:
        path = Path(directory) / "fleet.db"
        db = store.open_db(path)
        run_discover(db, sources=[Listed(urls)], now=datetime.now(timezone.utc), progress=Progress("discover", 1, stream=open(os.devnull, "w")))
        env = {**os.environ, "SCOREBOARD_ALLOW_PRIVATE": "1", "SCOREBOARD_DB": str(path), "SCOREBOARD_CACHE": str(Path(directory) / "cache"),
               "SCOREBOARD_CONCURRENCY": str(concurrency), "SCOREBOARD_CONNECT_TIMEOUT": str(connect)}
        print(f"{args.remotes} black-holed remotes, concurrency {concurrency}, connect deadline {connect:g} s; target ≤ {TARGET:.0f} s per stage")
        for stage in ("monitor", "probe"):
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "pipeline.cli", stage], env=env, capture_output=True, text=True)
            wall = time.monotonic() - started
            if done.returncode != 0:
                sys.exit(f"{stage} failed: {done.stderr[-2000:]}")
            kind = "fast" if stage == "monitor" else "deep"
            outcomes = dict(db.execute("select outcome, count(*) from probe_runs where kind = ? group by outcome", [kind]).fetchall())
            summary = done.stdout.strip().splitlines()[-1]
            print(f"{stage}: {wall:.1f} s wall ({args.remotes / wall:.1f} remotes/s), outcomes {json.dumps(outcomes)}; "
                  f"{'within' if wall <= TARGET else 'OVER'} the target")
            print(f"  {summary}")
    print(calibration_line(speed, calibration()))


if __name__ == "__main__":
    main()
