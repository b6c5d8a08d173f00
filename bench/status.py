"""The fleet's status at scale: how long `scoreboard status` (and the build's status page) takes to read.

python bench/status.py [--servers 25000] [--db FLEET.db] [--days 30]

On a synthetic fleet (bench/synthetic.py) it adds what a month of the job graph leaves: a `monitor` run every 5 minutes
and the other stages daily (`runs`), and 48 hours of raw fast probes of every remote server every 15 minutes, a tenth of
them failing (`probe_runs`, the raw window a fleet keeps); then times `status_of` cold and warm, and prints the alerts.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, fleet_arguments, opened_fleet  # noqa: E402
from pipeline.fleet.status import status_lines, status_of  # noqa: E402
from pipeline.store import dumps, iso  # noqa: E402

STAGES = ("discover", "analyze", "probe", "judge", "score", "build")


def add_history(db, days: int) -> tuple[int, int]:
    """`runs` rows for `days` of the job graph and 48 hours of raw fast probes; returns how many of each."""
    runs = []
    for day in range(days):
        start = NOW - timedelta(days=days - day)
        runs += [{"stage": stage, "started_at": iso(start + timedelta(hours=i)), "finished_at": iso(start + timedelta(hours=i, minutes=20)),
                  "status": "ok", "counts": dumps({"ok": 100, "skipped_budget": 3}), "failures": 0, "seconds": 1200.0, "engine_version": "x",
                  "args": dumps({"shard": "1/20"})} for i, stage in enumerate(STAGES)]
        runs += [{"stage": "monitor", "started_at": iso(start + timedelta(minutes=m)), "finished_at": iso(start + timedelta(minutes=m + 3)),
                  "status": "ok", "counts": "{}", "failures": 0, "seconds": 180.0, "engine_version": "x", "args": dumps({"transport": "remote"})}
                 for m in range(0, 1440, 5)]
    remotes = [row["id"] for row in db.query("select id from servers where remote_url is not null")]
    probes = 0
    with db.atomic():
        db["runs"].insert_all(runs, batch_size=5000)
        for step in range(48 * 4):
            at = NOW - timedelta(minutes=15 * step)
            rows = [{"server_id": sid, "run_id": None, "kind": "fast", "started_at": iso(at + timedelta(seconds=i % 900)), "duration_ms": 50.0,
                     "transport": "streamable-http", "outcome": "timeout" if i % 10 == 0 else "ok", "evidence": "{}", "engine_version": "x"}
                    for i, sid in enumerate(remotes)]
            db["probe_runs"].insert_all(rows, batch_size=5000)
            probes += len(rows)
    return len(runs), probes


def main() -> None:
    args = fleet_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory() as directory:
        db, servers = opened_fleet(args, Path(directory))
        added = time.monotonic()
        runs, probes = add_history(db, 30)
        print(f"{len(servers)} servers; added {runs} runs rows and {probes} raw fast probes in {time.monotonic() - added:.1f} s", flush=True)
        speed = calibration()
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            found = status_of(db, NOW)
            timings.append(time.perf_counter() - started)
        print("\n".join(status_lines(found)))
        size = Path(directory, "fleet.db").stat().st_size / 1e6
        print(f"status_of: {timings[0]:.2f} s first, {min(timings[1:]):.2f} s warm; database {size:.0f} MB; {calibration_line(speed, calibration())}")


if __name__ == "__main__":
    main()
