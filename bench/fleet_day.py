"""A day of the sharded job graph over a simulated fleet, after 30 simulated days: stage and shard wall times, merge time,
database and site size, and the projected wall time of a day on a 20-job matrix.

python bench/fleet_day.py [--servers 25000] [--shards 20] [--parallel 2] [--quick]

The fleet is bench/synthetic.py's, in a real catalog database; its remote share (about a third) is served by real
loopback endpoints (bench/fleet_endpoints.py: one child process, some slow, failing or behind a login) and a share of it
is black-holed (a listener that never accepts: connects wait for the deadline). bench/fleet_history.py writes what a
month of the cadence leaves; then one real day runs on top, each per-server stage shard by shard in its own process as a
matrix job does (`scoreboard STAGE --shard I/N --shard-db PATH` against the main database), merged after each stage
(`scoreboard merge`), then `scoreboard score` and `build`.

Left out, with their reasons printed: analysis (the synthetic servers' repositories do not exist; its cost is
bench/analyze_synthetic.py's) and the local share's sandbox probes (17,000 packages are not installed here; their cost
is bench/sandbox_fleet.py's).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import fleet_endpoints, fleet_history  # noqa: E402
from bench.build_site import size_of  # noqa: E402
from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import generate  # noqa: E402
from bench.synthetic_repos import generate_repos  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.fleet.shards import shard_of  # noqa: E402

SHARD_STAGES = ("analyze", "monitor", "probe", "judge")
# What a matrix job costs before and after its stage on a GitHub-hosted runner, not measurable here: checkout,
# setup-python with a cached wheel install, and the artifact steps (stated, from typical runs of such steps).
JOB_SETUP_S = 45.0
DOWNLOAD_MB_S = 50.0  # a release asset or artifact, downloaded onto a hosted runner
UPLOAD_MB_S = 20.0
MATRIX = 20
CADENCE_S = {"analyze": 3600, "monitor": 15 * 60, "probe": 24 * 3600, "judge": 24 * 3600, "score+build": 24 * 3600}
RUNS_A_DAY = {"analyze": 24, "monitor": 96, "probe": 1, "judge": 1, "score+build": 1}


@dataclass
class Figures:
    servers: int = 0
    remote: int = 0
    black_holed: int = 0
    black_hole_wait: float = 0.0
    black_hole_port: int = 0
    changed: int = 0  # servers whose source changed in the day: analysed
    timings: dict[str, float] = field(default_factory=dict)  # seconds of each step
    shards: dict[str, list[dict]] = field(default_factory=dict)  # per stage, each shard's job
    merged: dict[str, str] = field(default_factory=dict)  # per stage, the merge's summary line
    history_rows: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, float] = field(default_factory=dict)  # bytes
    site_files: int = 0


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--run-shards", type=int, help="run only the first K of the shards (alike by the stable hash): a shorter bench")
    parser.add_argument("--parallel", type=int, default=2, help="shards run at once (this machine's cores)")
    parser.add_argument("--black-holed", type=int, help="remote servers that never answer a connect (default 600 per 25,000)")
    parser.add_argument("--concurrency", type=int, default=Settings().concurrency, help="remote servers probed at once in one shard")
    parser.add_argument("--deadline", type=float, default=Settings().connect_timeout, help="the connect deadline, seconds")
    parser.add_argument("--changed", type=float, default=0.04, help="share of the servers whose source changed in the day (analysed)")
    parser.add_argument("--quick", action="store_true", help="1,000 servers in 3 shards, for iteration")
    parser.add_argument("--workdir", type=Path, help="keep the database, the site and figures.json here (default: a temporary directory)")
    parser.add_argument("--figures", type=Path, help="print the report of an earlier run from its figures.json, and run nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.servers, args.shards = min(args.servers, 1_000), 3
    args.run_shards = min(args.run_shards or args.shards, args.shards)
    if args.black_holed is None:
        args.black_holed = round(args.servers * 600 / 25_000)
    return args


def timed(figures: Figures, name: str, fn):
    started = time.perf_counter()
    out = fn()
    figures.timings[name] = time.perf_counter() - started
    return out


def run_day(args: argparse.Namespace, workdir: Path, say=print) -> Figures:
    figures = Figures(servers=args.servers, black_holed=args.black_holed)
    db_path, site = workdir / "fleet.db", workdir / "site"
    endpoints = fleet_endpoints.start()
    try:
        waited = fleet_endpoints.black_holed(endpoints.black_hole, wait=1.0)
        if waited is None:
            raise SystemExit("the black hole accepted a connection: its listener's queue is not full")
        figures.black_hole_wait, figures.black_hole_port = waited, endpoints.black_hole
        end = datetime.now(timezone.utc)
        say(f"generating {args.servers:,} synthetic servers …")
        timed(figures, "generate", lambda: generate(db_path, args.servers, now=end - timedelta(days=1)))
        db = store.open_db(db_path)
        kinds = fleet_history.point_remotes(db, endpoints, args.black_holed)
        figures.remote = len(kinds)
        templates = fleet_history.fast_templates(endpoints, args.deadline)
        say("writing 30 days of history …")
        history = lambda: fleet_history.write_history(db, kinds, templates, end, args.shards, note=lambda m: say(f"  {m}"))  # noqa: E731
        figures.history_rows = timed(figures, "history", history)
        changed = sorted((s.id for s in store.active_servers(db)), key=lambda sid: fleet_history._fraction(sid, "changed"))
        db.close()
        figures.sizes["db_before_day"] = db_path.stat().st_size
        figures.changed = round(args.servers * args.changed)
        timed(figures, "repositories", lambda: _repositories(workdir / "repos", changed[: figures.changed]))
        fleet = Fleet(db_path, workdir, args, remote=sorted(kinds), changed=changed[: figures.changed])
        for stage in SHARD_STAGES:
            say(f"{stage}: {args.run_shards} of {args.shards} shards, {args.parallel} at a time, then merged …")
            figures.shards[stage] = timed(figures, stage, lambda: _shards(stage, fleet))
            merged = timed(figures, f"merge {stage}", lambda: _cli(fleet, "merge", *(str(r["shard_db"]) for r in figures.shards[stage])))
            figures.merged[stage] = merged.strip().splitlines()[-1]
        figures.shards["startup"] = [_one_shard("judge", f"1/{10**9}", fleet)]  # a job that selects nothing: its fixed cost
        timed(figures, "score", lambda: _cli(fleet, "score"))
        timed(figures, "build", lambda: _cli(fleet, "build", "--site", str(site)))
        db = store.open_db(db_path)
        db.execute("pragma wal_checkpoint(truncate)")
        db.close()
    finally:
        endpoints.stop()
    figures.sizes["db"] = db_path.stat().st_size
    figures.sizes["db_gzip"] = timed(figures, "gzip", lambda: _gzipped(db_path, workdir / "fleet.db.gz"))
    timed(figures, "gunzip", lambda: _gunzip(workdir / "fleet.db.gz", workdir / "restored.db"))
    figures.site_files, _, figures.sizes["site"] = size_of(site)
    return figures


@dataclass
class Fleet:
    """Where the day runs: the main database, the work directory, the options, and who each per-server stage takes."""

    db: Path
    workdir: Path
    args: argparse.Namespace
    remote: list[str]
    changed: list[str]


def _cli(fleet: Fleet, *command: str) -> str:
    """`scoreboard --db MAIN COMMAND…` in a process of its own, as a job runs it; its output."""
    env = {**os.environ, "SCOREBOARD_ALLOW_PRIVATE": "1", "SCOREBOARD_CACHE": str(fleet.workdir / "cache")}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(fleet.db), *command], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent)
    if done.returncode:
        raise RuntimeError(f"scoreboard {' '.join(command[:3])} failed (exit {done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done.stdout


def _shards(stage: str, fleet: Fleet) -> list[dict]:
    with ThreadPoolExecutor(max_workers=fleet.args.parallel) as pool:
        return list(pool.map(lambda i: _one_shard(stage, f"{i}/{fleet.args.shards}", fleet), range(1, fleet.args.run_shards + 1)))


COPIED = re.compile(r"\(([\d.]+) MB\).*copy of the main database ([\d.]+)s, extraction ([\d.]+)s")


def _one_shard(stage: str, shard: str, fleet: Fleet) -> dict:
    """One matrix job: `scoreboard STAGE --shard I/N --shard-db PATH` against the main database, in a process of its own (its
    wall time includes the start, the private copy of the main database and the extraction of what it wrote)."""
    index, count = (int(x) for x in shard.split("/"))
    shard_db = fleet.workdir / "shards" / f"{stage}-{index}-of-{count}.db"
    shard_db.parent.mkdir(exist_ok=True)
    command = [stage, "--shard", shard, "--shard-db", str(shard_db)]
    if stage == "analyze":
        ids = [sid for sid in fleet.changed if shard_of(sid, count) == index]
        command += [x for sid in ids for x in ("--server", sid, "--source", f"{sid}={fleet.workdir / 'repos' / sid}")]
    elif stage in ("monitor", "probe"):
        ids = [sid for sid in fleet.remote if shard_of(sid, count) == index]
        command += ["--transport", "remote", "--concurrency", str(fleet.args.concurrency), "--connect-timeout", str(fleet.args.deadline)]
    else:
        ids = []
    started = time.perf_counter()
    if stage == "analyze" and not ids:
        return {"shard": shard, "servers": 0, "wall": 0.0, "counts": {}, "shard_db": None, "copy": 0.0, "extract": 0.0, "mb": 0.0}
    output = _cli(fleet, *command)
    wall = time.perf_counter() - started
    found = COPIED.search(output)
    shard_conn = sqlite3.connect(shard_db)
    counts = json.loads((shard_conn.execute("select counts from runs where stage = ? order by id desc", [stage]).fetchone() or ["{}"])[0] or "{}")
    if stage == "judge":
        ids = [r[0] for r in sqlite3.connect(fleet.db).execute("select id from servers where is_active = 1")
               if shard_of(r[0], count) == index]
    shard_conn.close()
    return {"shard": shard, "servers": len(ids), "wall": wall, "counts": counts, "shard_db": str(shard_db),
            "copy": float(found.group(2)) if found else 0.0, "extract": float(found.group(3)) if found else 0.0,
            "mb": float(found.group(1)) if found else 0.0}


def _repositories(root: Path, server_ids: list[str]) -> None:
    """A generated repository (bench/synthetic_repos.py) for each server whose source changed, named by the server's id."""
    generate_repos(root, len(server_ids))
    for n, sid in enumerate(server_ids):
        (root / f"repo-{n:05d}").rename(root / sid)


def _gzipped(path: Path, target: Path) -> int:
    with open(path, "rb") as raw, gzip.open(target, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)
    return target.stat().st_size


def _gunzip(path: Path, target: Path) -> None:
    with gzip.open(path, "rb") as packed, open(target, "wb") as raw:
        shutil.copyfileobj(packed, raw, 1 << 20)
    target.unlink()


def projection(figures: Figures, args: argparse.Namespace, servers: int = 25_000, matrix: int = MATRIX) -> dict[str, dict[str, float]]:
    """Each workflow's run on a `matrix`-job matrix for `servers` servers: a job's measured start-up, the black-holed share's
    waits (one deadline per wave of the concurrency, counted as if nothing overlapped them), and each stage's measured
    per-server cost for the rest, scaled from this run's fleet; plus the stated setup, the restore and the merge."""
    scale = servers / figures.servers
    empty = figures.shards["startup"][0]
    base = empty["wall"] - empty["copy"] - empty["extract"]  # a process's start, imports and fixed reads
    jobs = [r for stage in SHARD_STAGES for r in figures.shards[stage] if r["shard_db"]]
    copy = statistics.mean(r["copy"] + r["extract"] for r in jobs) * scale  # the private copy of the main database grows with it
    restore = JOB_SETUP_S + figures.sizes["db_gzip"] * scale / 1e6 / DOWNLOAD_MB_S + figures.timings["gunzip"] * scale
    publish_snapshot = figures.timings["gzip"] * scale + figures.sizes["db_gzip"] * scale / 1e6 / UPLOAD_MB_S
    waves = -(-round(figures.black_holed * scale / matrix) // args.concurrency)
    out = {}
    for stage in SHARD_STAGES:
        rows = figures.shards[stage]
        waited = [-(-r["counts"].get("timeout", 0) // args.concurrency) * args.deadline for r in rows]
        spent = sum(max(0.0, r["wall"] - r["copy"] - r["extract"] - base - w) for r, w in zip(rows, waited))
        active = spent / max(1, sum(r["servers"] for r in rows))
        everyone = sum(r["servers"] for r in rows) * args.shards / len(rows)  # the stage's servers in every shard, run or not
        job = base + copy + (waves * args.deadline if stage in ("monitor", "probe") else 0.0) + active * everyone * scale / matrix
        # the job that gathers the shards' databases: this run merged run_shards of them
        merge = restore + figures.timings[f"merge {stage}"] * scale * args.shards / args.run_shards
        out[stage] = {"per_server_ms": active * 1000, "job_stage_s": job, "wall_s": restore + job + merge, "runs": RUNS_A_DAY[stage],
                      "runner_s": matrix * (restore + job) + merge}
    site_upload = figures.sizes["site"] * scale / 1e6 / UPLOAD_MB_S
    tail = (figures.timings["score"] + figures.timings["build"]) * scale
    out["score+build"] = {"per_server_ms": tail / servers * 1000, "job_stage_s": tail, "wall_s": restore + tail + site_upload + publish_snapshot,
                          "runs": 1, "runner_s": restore + tail + site_upload + publish_snapshot}
    return out


def report(figures: Figures, args: argparse.Namespace, speed: tuple[float, float], say=print) -> None:
    mb = lambda n: f"{n / 1e6:,.0f} MB"  # noqa: E731
    say(f"fleet: {figures.servers:,} servers, {figures.remote:,} remote on loopback endpoints, of which {figures.black_holed} black-holed "
        f"(a connect waited {figures.black_hole_wait:.2f} s of a 1 s deadline: it black-holes); generated in {figures.timings['generate']:.0f} s")
    say(f"30 simulated days written in {figures.timings['history']:.0f} s: " + ", ".join(f"{t} +{n:,}" for t, n in figures.history_rows.items()))
    say(f"analyze: the {figures.changed:,} servers whose source changed in the day ({args.changed:.0%}), from generated repositories "
        f"({figures.timings['repositories']:.0f} s to write); unchanged sources (one conditional request each) are not measured")
    say("left out: sandbox probes of the local share (its packages are not installed here; bench/sandbox_fleet.py measures them)")
    empty = figures.shards["startup"][0]
    startup = f"{empty['wall']:.1f} s, of which {empty['copy'] + empty['extract']:.1f} s copying the main database and extracting the shard"
    say(f"the real day, {args.run_shards} of {args.shards} shards, {args.parallel} at a time, concurrency {args.concurrency}, "
        f"connect deadline {args.deadline:g} s (a job that selects nothing: {startup}):")
    for stage in SHARD_STAGES:
        rows = figures.shards[stage]
        walls = [r["wall"] for r in rows]
        counts: dict[str, int] = {}
        for r in rows:
            for k, v in r["counts"].items():
                counts[k] = counts.get(k, 0) + v
        say(f"  {stage:<8} {figures.timings[stage]:6.1f} s wall; per shard median {statistics.median(walls):.1f} s, "
            f"min {min(walls):.1f}, max {max(walls):.1f} ({sum(r['servers'] for r in rows):,} servers); {json.dumps(counts, sort_keys=True)}")
        say("           shards: " + " ".join(f"{r['wall']:.1f}" for r in rows) + "; of which the copy of the main database: "
            + " ".join(f"{r['copy']:.1f}" for r in rows) + "; shard databases " + " ".join(f"{r['mb']:.1f}" for r in rows) + " MB")
        say(f"           merge {figures.timings[f'merge {stage}']:.1f} s: {figures.merged[stage]}")
    say(f"  score    {figures.timings['score']:6.1f} s; build {figures.timings['build']:.1f} s")
    say(f"sizes: database {mb(figures.sizes['db_before_day'])} after 30 days, {mb(figures.sizes['db'])} after the day, "
        f"{mb(figures.sizes['db_gzip'])} gzip'd ({figures.timings['gzip']:.0f} s; gunzip {figures.timings['gunzip']:.0f} s); "
        f"site {mb(figures.sizes['site'])} in {figures.site_files:,} files")
    say(f"projection, 25,000 servers on a {MATRIX}-job matrix (a hosted runner's core taken as one of these; per job {JOB_SETUP_S:.0f} s of "
        f"setup stated, restore at {DOWNLOAD_MB_S:.0f} MB/s, uploads at {UPLOAD_MB_S:.0f} MB/s):")
    wall = runner = 0.0
    for name, p in projection(figures, args).items():
        fits = p["wall_s"] <= CADENCE_S[name] / 2
        wall, runner = wall + p["wall_s"] * p["runs"], runner + p["runner_s"] * p["runs"]
        say(f"  {name:<11} {p['per_server_ms']:7.1f} ms/server; a job's stage {p['job_stage_s']:5.0f} s; a run {p['wall_s'] / 60:5.1f} min "
            f"× {p['runs']}/day, {p['runner_s'] / 60:6.1f} runner-min each; every {CADENCE_S[name] / 60:,.0f} min: "
            f"{'fits' if fits else 'DOES NOT FIT'} (in half of it)")
    say(f"  a day: {wall / 3600:.1f} h of workflow wall time, {runner / 3600:.0f} runner-hours")
    say(calibration_line(*speed))


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.figures:  # the report of an earlier run, again (its options are the ones saved with it)
        saved = json.loads(args.figures.read_text())
        report(Figures(**saved["figures"]), argparse.Namespace(**saved["args"]), tuple(saved["speed"]))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated bench still stops its endpoint server
    speed = calibration()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        figures = run_day(args, workdir)
        after = calibration()
        kept = {"figures": asdict(figures), "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "speed": [speed, after]}
        (workdir / "figures.json").write_text(json.dumps(kept, indent=1))
    report(figures, args, (speed, after))


if __name__ == "__main__":
    main()
