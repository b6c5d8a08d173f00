"""A day of the job graph over a simulated fleet, after 30 simulated days, as the workflows run it: stage and shard wall
times, restore, merge, check, pack and publish times, database and site size, and the projected run of each per-server
stage's workflow at 25,000 servers (bench/fleet_projection.py), step by step as .github/workflows/ runs it.

python bench/fleet_day.py [--servers 25000] [--run-shards K] [--parallel 2] [--quick]

The fleet is bench/synthetic.py's, in a real catalog database; its remote share (about a third) is served by real
loopback endpoints (bench/fleet_endpoints.py: one child process, some slow, failing or behind a login) and a share of it
is black-holed (a listener that never accepts: connects wait for the deadline). bench/fleet_history.py writes what a
month of the cadence leaves, ending one fast-probe interval before the day, so every remote server is due. Then the
database is published as a snapshot to a local store as publish.yml does (packed at each workflow's level when it
packs) and restored from it; one real day runs on top: each per-server stage in its workflow's shards (the YAML's
count; --run-shards K runs the first K), each shard in its own process with the command line shard.yml runs
(bench/fleet_workflows.py reads it), merged after each stage (`scoreboard merge`; an empty shard's merge first: the
merge's fixed cost), then `snapshot check`, `score` and `build`.

Left out, with their reasons printed: analysis of unchanged sources (the synthetic servers' repositories do not exist;
the changed ones are analysed from generated repositories) and the local share's sandbox probes (17,000 packages are
not installed here; their cost is bench/sandbox_fleet.py's).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import fleet_endpoints, fleet_history, fleet_workflows  # noqa: E402
from bench.build_site import size_of  # noqa: E402
from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.fleet_projection import Figures, report_lines  # noqa: E402
from bench.fleet_workflows import Plan, option  # noqa: E402
from bench.synthetic import generate  # noqa: E402
from bench.synthetic_repos import generate_repos  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.fleet.cadence import FAST_INTERVAL  # noqa: E402
from pipeline.fleet.shards import shard_of  # noqa: E402
from pipeline.fleet.snapshot_format import DATA_SUFFIX, ZSTD_LEVEL  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
SHARD_STAGES = ("analyze", "monitor", "probe", "judge")


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--run-shards", type=int, help="run only the first K of each workflow's shards (alike by the stable hash): a shorter bench")
    parser.add_argument("--parallel", type=int, default=2, help="shards run at once (this machine's cores)")
    parser.add_argument("--black-holed", type=int, help="remote servers that never answer a connect (default 600 per 25,000)")
    parser.add_argument("--concurrency", type=int, default=Settings().concurrency, help="remote servers probed at once in one shard")
    parser.add_argument("--deadline", type=float, default=Settings().connect_timeout, help="the connect deadline, seconds")
    parser.add_argument("--changed", type=float, default=0.04, help="share of the servers whose source changed in the day (analysed)")
    parser.add_argument("--project", type=int, default=25_000, help="the fleet size the projection is for")
    parser.add_argument("--workflows", type=Path, default=WORKFLOWS, help="the workflow files the bench follows")
    parser.add_argument("--quick", action="store_true", help="1,000 servers, for iteration")
    parser.add_argument("--workdir", type=Path, help="keep the database, the site and figures.json here (default: a temporary directory)")
    parser.add_argument("--figures", type=Path, help="print the report of an earlier run from its figures.json (today's workflows), run nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.servers = min(args.servers, 1_000)
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
    plans = fleet_workflows.plans(args.workflows)
    db_path, site = workdir / "fleet.db", workdir / "site"
    endpoints = fleet_endpoints.start()
    try:
        waited = fleet_endpoints.black_holed(endpoints.black_hole, wait=1.0)
        if waited is None:
            raise SystemExit("the black hole accepted a connection: its listener's queue is not full")
        figures.black_hole_wait, figures.black_hole_port = waited, endpoints.black_hole
        end = datetime.now(timezone.utc) - FAST_INTERVAL  # the history's last fast probes: every remote server is due when the day runs
        say(f"generating {args.servers:,} synthetic servers …")
        timed(figures, "generate", lambda: generate(db_path, args.servers, now=end - FAST_INTERVAL * 72))
        db = store.open_db(db_path)
        kinds = fleet_history.point_remotes(db, endpoints, args.black_holed)
        figures.remote = len(kinds)
        templates = fleet_history.fast_templates(endpoints, args.deadline)
        say("writing 30 days of history …")
        shards = plans["monitor"].shards
        history = lambda: fleet_history.write_history(db, kinds, templates, end, shards, note=lambda m: say(f"  {m}"))  # noqa: E731
        figures.history_rows = timed(figures, "history", history)
        changed = sorted((s.id for s in store.active_servers(db)), key=lambda sid: fleet_history._fraction(sid, "changed"))
        db.execute("pragma wal_checkpoint(truncate)")
        db.close()
        figures.sizes["db_before_day"] = db_path.stat().st_size
        figures.changed = round(args.servers * args.changed)
        timed(figures, "repositories", lambda: _repositories(workdir / "repos", changed[: figures.changed]))
        fleet = Fleet(db_path, workdir, args, plans, remote=sorted(kinds), changed=changed[: figures.changed])
        say("publishing the database as a snapshot, as publish.yml does, and restoring it …")
        _publish_and_restore(fleet, figures)
        empty = _one_shard("judge", 1, 10**9, fleet)  # a job that selects nothing: a job's fixed cost, and the merge's
        figures.shards["startup"] = [empty]
        timed(figures, "merge empty", lambda: _cli(fleet, "merge", empty["shard_db"]))
        for stage in SHARD_STAGES:
            count = plans[stage].shards
            run = min(args.run_shards or count, count)
            say(f"{stage}: {run} of {plans[stage].file}'s {count} shards, {args.parallel} at a time, then merged …")
            figures.shards[stage] = timed(figures, stage, lambda: _shards(stage, run, count, fleet))
            made = [str(r["shard_db"]) for r in figures.shards[stage] if r["shard_db"]]
            merged = timed(figures, f"merge {stage}", lambda: _cli(fleet, "merge", *made))
            figures.merged[stage] = merged.strip().splitlines()[-1]
        again = _one_shard("judge", 2, 10**9, fleet)  # the fixed costs once more, on the day's database: the lower is taken
        figures.shards["startup"].append(again)
        timed(figures, "merge empty again", lambda: _cli(fleet, "merge", again["shard_db"]))
        check = _merge_job_argv(plans["monitor"], "check")
        if check:  # the merge job's own soundness check, when it runs one apart from the pack
            timed(figures, "check", lambda: _cli(fleet, *check))
        timed(figures, "score", lambda: _cli(fleet, "score"))
        # As publish.yml builds for a site whose snapshots are a release's: linked, no copy of the database (deviation 102)
        timed(figures, "build", lambda: _cli(fleet, "build", "--site", str(site), env={"SCOREBOARD_SNAPSHOT_STORE": PUBLISHED_STORE}))
        db = store.open_db(db_path)
        db.execute("pragma wal_checkpoint(truncate)")
        db.close()
    finally:
        endpoints.stop()
    figures.sizes["db"] = db_path.stat().st_size
    figures.site_files, _, figures.sizes["site"] = size_of(site)
    return figures


@dataclass
class Fleet:
    """Where the day runs: the main database, the work directory, the options, the workflows, and who each stage takes."""

    db: Path
    workdir: Path
    args: argparse.Namespace
    plans: dict[str, Plan]
    remote: list[str]
    changed: list[str]

    @property
    def store(self) -> Path:
        return self.workdir / "store"


PUBLISHED_STORE = "github-release:example/scoreboard"  # any release: only where its page is linked shows in the site


def _cli(fleet: Fleet, *command: str, db: Path | None = None, env: dict[str, str] | None = None) -> str:
    """`scoreboard --db MAIN COMMAND…` in a process of its own, as a job runs it (with `env` added); its output."""
    env = {**os.environ, "SCOREBOARD_ALLOW_PRIVATE": "1", "SCOREBOARD_CACHE": str(fleet.workdir / "cache"), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "--db", str(db or fleet.db), *command], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"scoreboard {' '.join(command[:3])} failed (exit {done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done.stdout


def _merge_job_argv(plan: Plan, kind: str) -> list[str] | None:
    """The `scoreboard` arguments of a step of the workflow's merge/publish jobs (None: the workflow has no such step)."""
    return next((s.argv for job in plan.jobs[1:] for s in job.steps if s.kind == kind and s.argv), None)


def _publish_and_restore(fleet: Fleet, figures: Figures) -> None:
    """The snapshot the shard jobs restore, published as publish.yml does: packed by the merge job at each workflow's level
    and published from the pack (`snapshot pack` then `snapshot publish --packed`) when it has a pack step, else
    `snapshot publish` from the database (copy, check, zstd, upload in one); then one restore of it, timed."""
    packs = {}
    for plan in fleet.plans.values():
        argv = _merge_job_argv(plan, "pack")
        if argv:
            level = int(option(argv, "--level") or plan.pack_level or ZSTD_LEVEL)
            packs[level] = [*argv[: argv.index("--out") + 1], str(fleet.workdir / f"packed-{level}"), *argv[argv.index("--out") + 2:]]
    for level, argv in packs.items():
        timed(figures, f"pack {level}", lambda: _cli(fleet, *argv))
        figures.sizes[f"packed {level}"] = sum(f.stat().st_size for f in (fleet.workdir / f"packed-{level}").glob(f"*{DATA_SUFFIX}"))
    publish = ["snapshot", "publish", "--to", str(fleet.store)]
    if packs:  # the fast probes' level: most runs publish theirs
        level = int(option(_merge_job_argv(fleet.plans["monitor"], "pack"), "--level") or next(iter(packs)))
        publish += ["--packed", str(fleet.workdir / f"packed-{level}")]
    timed(figures, "publish", lambda: _cli(fleet, *publish))
    published = sorted(fleet.store.glob(f"*{DATA_SUFFIX}"))[-1].stat().st_size
    figures.sizes["snapshot"] = published
    if not packs:
        figures.sizes[f"packed {ZSTD_LEVEL}"] = published  # publish packed it, at the store's level
    restored = fleet.workdir / "restored.db"
    timed(figures, "restore", lambda: _cli(fleet, "snapshot", "restore", "--from", str(fleet.store), db=restored))
    _remove(restored)


def _remove(db: Path) -> None:
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.unlink(missing_ok=True)


def _shards(stage: str, run: int, count: int, fleet: Fleet) -> list[dict]:
    with ThreadPoolExecutor(max_workers=fleet.args.parallel) as pool:
        return list(pool.map(lambda i: _one_shard(stage, i, count, fleet), range(1, run + 1)))


COPIED = re.compile(r"\(([\d.]+) MB\).*copy of the main database ([\d.]+)s, extraction ([\d.]+)s")


def _one_shard(stage: str, index: int, count: int, fleet: Fleet) -> dict:
    """One matrix job: the stage's command line as shard.yml runs it (its shard, its shard database path here), in a process
    of its own; with --shard-in-place it runs on a restored copy of its own, as the job does. Its wall time includes the
    start, the private copy of the database when it makes one and the extraction of what it wrote."""
    shard, shard_db = f"{index}/{count}", fleet.workdir / "shards" / f"{stage}-{index}-of-{count}.db"
    shard_db.parent.mkdir(exist_ok=True)
    command = list(fleet.plans[stage].shard_argv)
    command[command.index("--shard") + 1], command[command.index("--shard-db") + 1] = shard, str(shard_db)
    if stage == "analyze":  # the changed sources, from generated repositories: no `--due` batch of the catalog's
        ids = [sid for sid in fleet.changed if shard_of(sid, count) == index]
        sources = [x for sid in ids for x in ("--server", sid, "--source", f"{sid}={fleet.workdir / 'repos' / sid}")]
        command = [w for w in command if w != "--due"] + sources
    elif stage in ("monitor", "probe"):
        ids = [sid for sid in fleet.remote if shard_of(sid, count) == index]
        command += ["--concurrency", str(fleet.args.concurrency), "--connect-timeout", str(fleet.args.deadline)]
    else:
        ids = [r[0] for r in sqlite3.connect(fleet.db).execute("select id from servers where is_active = 1") if shard_of(r[0], count) == index]
    if stage == "analyze" and not ids:
        return {"shard": shard, "servers": 0, "wall": 0.0, "counts": {}, "shard_db": None, "copy": 0.0, "extract": 0.0, "mb": 0.0, "restore": 0.0}
    db, restore = fleet.db, 0.0
    if "--shard-in-place" in command:  # the job's own restored database, which the stage may change
        db = fleet.workdir / "jobs" / f"{stage}-{index}.db"
        started = time.perf_counter()
        _cli(fleet, "snapshot", "restore", "--from", str(fleet.store), db=db)
        restore = time.perf_counter() - started
    started = time.perf_counter()
    try:
        output = _cli(fleet, *command, db=db)
    finally:
        if db != fleet.db:
            _remove(db)
    wall = time.perf_counter() - started
    found = COPIED.search(output)
    shard_conn = sqlite3.connect(shard_db)
    counts = json.loads((shard_conn.execute("select counts from runs where stage = ? order by id desc", [stage]).fetchone() or ["{}"])[0] or "{}")
    shard_conn.close()
    done = len(ids) - counts.get("skipped_budget", 0)  # the budget may stop a shard before its last server
    return {"shard": shard, "servers": done, "wall": wall, "counts": counts, "shard_db": str(shard_db), "restore": restore,
            "copy": float(found.group(2)) if found else 0.0, "extract": float(found.group(3)) if found else 0.0,
            "mb": float(found.group(1)) if found else shard_db.stat().st_size / 1e6}


def _repositories(root: Path, server_ids: list[str]) -> None:
    """A generated repository (bench/synthetic_repos.py) for each server whose source changed, named by the server's id."""
    generate_repos(root, len(server_ids))
    for n, sid in enumerate(server_ids):
        (root / f"repo-{n:05d}").rename(root / sid)


def report(figures: Figures, args: argparse.Namespace, speed: tuple[float, float], say=print) -> None:
    mb = lambda n: f"{n / 1e6:,.0f} MB"  # noqa: E731
    plans = fleet_workflows.plans(Path(args.workflows))
    say(f"fleet: {figures.servers:,} servers, {figures.remote:,} remote on loopback endpoints, of which {figures.black_holed} black-holed "
        f"(a connect waited {figures.black_hole_wait:.2f} s of a 1 s deadline: it black-holes); generated in {figures.timings['generate']:.0f} s")
    say(f"30 simulated days written in {figures.timings['history']:.0f} s: " + ", ".join(f"{t} +{n:,}" for t, n in figures.history_rows.items()))
    say(f"analyze: the {figures.changed:,} servers whose source changed in the day ({args.changed:.0%}), from generated repositories "
        f"({figures.timings['repositories']:.0f} s to write); unchanged sources (one conditional request each) are not measured")
    say("left out: sandbox probes of the local share (its packages are not installed here; bench/sandbox_fleet.py measures them)")
    packs = "; ".join(f"snapshot pack zstd {k.split()[1]} {figures.timings[f'pack {k.split()[1]}']:.1f} s → {mb(v)}"
                      for k, v in figures.sizes.items() if k.startswith("packed ") and f"pack {k.split()[1]}" in figures.timings)
    say(f"snapshot: {packs + '; ' if packs else ''}snapshot publish {figures.timings['publish']:.1f} s "
        f"({mb(figures.sizes['snapshot'])} in the store); "
        f"snapshot restore {figures.timings['restore']:.1f} s; "
        + (f"snapshot check {figures.timings['check']:.1f} s; " if "check" in figures.timings else "no snapshot check step (the pack checks); ")
        + f"merge of an empty shard {figures.timings['merge empty']:.1f} s, after the day {figures.timings.get('merge empty again', 0.0):.1f} s")
    for plan in plans.values():
        packs = "packs the snapshot" if _merge_job_argv(plan, "pack") else "uploads the database; the publish job packs it"
        say(f"{plan.file}: scoreboard {' '.join(plan.shard_argv)}; its merge job {packs}")
    startup = ", ".join(f"{e['wall']:.1f} s, of which {e['copy'] + e['extract']:.1f} s copying the database and extracting the shard"
                        for e in figures.shards["startup"])
    say(f"the real day, concurrency {args.concurrency}, connect deadline {args.deadline:g} s, {args.parallel} shards at a time "
        f"(a job that selects nothing: {startup}):")
    for stage in SHARD_STAGES:
        rows = [r for r in figures.shards[stage] if r["shard_db"]]
        walls = [r["wall"] for r in rows] or [0.0]
        counts: dict[str, int] = {}
        for r in rows:
            for k, v in r["counts"].items():
                counts[k] = counts.get(k, 0) + v
        say(f"  {stage:<8} {figures.timings[stage]:6.1f} s wall; {len(rows)} of {plans[stage].shards} shards, "
            f"median {statistics.median(walls):.1f} s, "
            f"min {min(walls):.1f}, max {max(walls):.1f} ({sum(r['servers'] for r in rows):,} servers); {json.dumps(counts, sort_keys=True)}")
        say("           shards: " + " ".join(f"{r['wall']:.1f}" for r in rows) + "; of which the copy of the database: "
            + " ".join(f"{r['copy']:.1f}" for r in rows) + "; restores " + " ".join(f"{r.get('restore', 0.0):.1f}" for r in rows)
            + "; shard databases " + " ".join(f"{r['mb']:.1f}" for r in rows) + " MB")
        say(f"           merge {figures.timings[f'merge {stage}']:.1f} s: {figures.merged[stage]}")
    say(f"  score    {figures.timings['score']:6.1f} s; build {figures.timings['build']:.1f} s")
    say(f"sizes: database {mb(figures.sizes['db_before_day'])} after 30 days, {mb(figures.sizes['db'])} after the day; "
        f"site {mb(figures.sizes['site'])} in {figures.site_files:,} files")
    for line in report_lines(figures, plans, args.project):
        say(line)
    say(calibration_line(*speed))


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.figures:  # the report of an earlier run, again (its options are the ones saved with it; the workflows today's)
        saved = json.loads(args.figures.read_text())
        kept = {**saved["args"], "workflows": args.workflows, "project": args.project}
        report(Figures(**saved["figures"]), argparse.Namespace(**kept), tuple(saved["speed"]))
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
