"""One stage over one shard of the fleet, as one matrix job runs it: `python bench/fleet_shard.py STAGE I/N --db DB`.

analyze takes the shard's servers whose source changed (a generated repository under --repos, read from its directory),
monitor and probe the shard's remote servers (the local share's sandbox probes are left out of the bench), judge all of
the shard's servers. Prints one JSON line: servers, seconds, counts.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.analyze_synthetic import RepositoryDirectories  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.analyze import run_analyze  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.judge import OfflineJudge, run_judge  # noqa: E402
from pipeline.probe import run_probe  # noqa: E402
from pipeline.probe.monitor import run_monitor  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.sandbox.install import Installer  # noqa: E402


def shard_of(server_id: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(server_id.encode()).digest()[:8], "big") % n + 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage", choices=("analyze", "monitor", "probe", "judge"))
    parser.add_argument("shard")
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--deadline", type=float, help="the connect deadline")
    parser.add_argument("--repos", type=Path, help="analyze: one source directory per changed server, named by its id")
    args = parser.parse_args()
    index, count = (int(x) for x in args.shard.split("/"))
    started = time.perf_counter()
    chosen = {"concurrency": args.concurrency, "connect_timeout": args.deadline}
    settings = Settings.from_env(db_path=args.db).model_copy(update={"allow_private": True, **{k: v for k, v in chosen.items() if v}})
    db = store.open_db(args.db)
    servers = [s for s in store.active_servers(db) if shard_of(s.id, count) == index]
    if args.stage == "analyze":
        servers = [s for s in servers if args.repos and (args.repos / s.id).is_dir()]
    elif args.stage != "judge":
        servers = [s for s in servers if s.remote_url]
    silent = Progress(args.stage, len(servers), stream=io.StringIO())
    now = datetime.now(timezone.utc)
    run_id = store.start_run(db, args.stage, {"shard": args.shard}, now)
    if args.stage == "analyze":
        def previous(server_id: str):
            found = store.latest_analyses(db, [server_id]).get(server_id)
            return found[1] if found else None

        report = run_analyze(db, servers=servers, fetcher=RepositoryDirectories(args.repos), now=now, progress=silent,
                             concurrency=settings.analyze_concurrency, previous=previous)
    elif args.stage == "judge":
        report = run_judge(db, servers=servers, providers=[OfflineJudge()], now=now, progress=silent)
    else:
        run = run_monitor if args.stage == "monitor" else run_probe
        report = run(db, servers=servers, installer=Installer.from_settings(settings), settings=settings, now=now, run_id=run_id, progress=silent)
    store.finish_run(db, run_id, report, datetime.now(timezone.utc))
    print(json.dumps({"servers": len(servers), "seconds": time.perf_counter() - started, "stage_seconds": report.seconds, "counts": report.counts}))


if __name__ == "__main__":
    main()
