"""A run of each per-server stage's workflow at a fleet size, from the parts bench/fleet_day.py measured and the steps the
workflow runs (bench/fleet_workflows.py): a pure function of the two, so it is tested on fixed figures.

A run is the shard job (on `shards` runners at once), then the merge job, then the publish job, each the sum of its steps:
- setup (checkout, Python, the venv): stated, once a job; transfers (restore's download, artifacts, the snapshot's
  upload, the site): sizes at stated rates;
- restore, merge, check, pack, publish, score, build: measured on this fleet's database, each a process's start (an
  empty job's) and the rest scaled with the fleet (the database and the site grow with the servers); the merge as a
  fixed cost (an empty shard's merge: opening the database runs its quick_check) plus a cost per server merged, the
  stage as a job's fixed cost plus a cost per server, so neither fixed cost is multiplied by the servers or shards;
- the stage's servers: those the cadence makes due a run (pipeline/fleet/cadence.py), split over the shards, and no more
  than the workflow's --budget lets a shard do (the rest wait for the next run, oldest first); the budget's clock starts
  with the stage, after the process's start and the private copy, and the probes in flight when it runs out are not
  counted.
A run fits when it ends before the next scheduled one starts. A run that ends later leaves the next run(s) a snapshot
without its results, so they take the same servers again: the distinct servers a run adds are its own divided by the
runs it overlaps (`lag`), and each server's cycle is the interval times the larger of the cadence's period in runs and
the runs it takes to get round the population.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from bench.fleet_workflows import Plan, option, runs_a_day, runs_until
from pipeline.fleet import cadence
from pipeline.fleet.snapshot_format import ZSTD_LEVEL

# What a job costs on a GitHub-hosted runner that is not measurable here (deviation 111): checkout, setup-python and the venv from a
# cached wheel install (stated, from typical runs of such steps), and transfer rates of release assets and artifacts.
JOB_SETUP_S = 45.0
DOWNLOAD_MB_S = 50.0
UPLOAD_MB_S = 20.0
RUNNER = f"per job {JOB_SETUP_S:.0f} s of setup; downloads at {DOWNLOAD_MB_S:.0f} MB/s, uploads at {UPLOAD_MB_S:.0f} MB/s"
# The cadence of each stage: who is due, how long after their last examination, and at most how many a run.
DUE = {"monitor": ("remote", cadence.FAST_INTERVAL, None), "probe": ("remote", cadence.DEEP_INTERVAL, None),
       "judge": ("all", cadence.JUDGE_INTERVAL, None), "analyze": ("all", cadence.ANALYSIS_INTERVAL, cadence.ANALYSIS_BATCH)}
ROLLING_S = (15 * 60, 30 * 60)  # issue 18: each remote server fast-probed every 15-30 minutes


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


@dataclass
class Parts:
    """The measured parts, scaled to the projected fleet."""

    scale: float
    db_mb: float
    snapshot_mb: float  # the published snapshot a restore downloads
    site_mb: float
    restore_s: float
    merge_fixed_s: float
    check_s: float
    publish_s: float
    score_s: float
    build_s: float
    pack: dict[int, tuple[float, float]]  # level: (seconds, MB)
    stage: dict[str, dict[str, float]]  # fixed_s, per_server_s, shard_mb_per_server, merge_per_server_s


def parts(figures: Figures, servers: int) -> Parts:
    s = servers / figures.servers
    t, sizes = figures.timings, figures.sizes
    # Fixed costs measured twice (a job that selects nothing, an empty shard's merge), the lower taken: one reading of a
    # database a busy machine evicted from its page cache can take ten times the other.
    empty = min(figures.shards["startup"], key=lambda r: r["wall"])
    base = empty["wall"] - empty["copy"] - empty["extract"]  # a process's start, imports and fixed reads
    merge_empty = min(t["merge empty"], t.get("merge empty again", t["merge empty"]))
    stage = {}
    for name in DUE:
        rows = [r for r in figures.shards[name] if r["shard_db"]]
        done = max(1, sum(r["servers"] for r in rows))
        copy = statistics.mean(r["copy"] + r["extract"] for r in rows) if rows else 0.0
        spent = sum(max(0.0, r["wall"] - r["copy"] - r["extract"] - base) for r in rows)
        merged = max(0.0, t[f"merge {name}"] - merge_empty)
        stage[name] = {"fixed_s": base + copy * s, "per_server_s": spent / done, "shard_mb_per_server": sum(r["mb"] for r in rows) / done,
                       "merge_per_server_s": merged / done}
    def scaled(seconds: float) -> float:  # a command: a process's start, then work that grows with the database
        return min(seconds, base) + max(0.0, seconds - base) * s

    levels = [k.split()[1] for k in sizes if k.startswith("packed ")]
    pack = {int(n): (scaled(t.get(f"pack {n}", 0.0)), sizes[f"packed {n}"] * s / 1e6) for n in levels}
    return Parts(scale=s, db_mb=sizes["db"] * s / 1e6, snapshot_mb=sizes["snapshot"] * s / 1e6, site_mb=sizes["site"] * s / 1e6,
                 restore_s=scaled(t["restore"]), merge_fixed_s=scaled(merge_empty), check_s=scaled(t.get("check", 0.0)),
                 publish_s=scaled(t["publish"]),
                 score_s=scaled(t["score"]), build_s=scaled(t["build"]), pack=pack, stage=stage)


@dataclass
class Run:
    plan: Plan
    population: int  # the servers the stage takes (remote ones, or all)
    due: float  # due a run, by the cadence
    done: float  # of those, what the shards get through within their budget
    bounded: bool  # the budget stopped a shard before it had done its share
    jobs: list[tuple[str, list[tuple[str, float]]]]  # each job: its name and its steps' (label, seconds)
    wall_s: float
    runner_s: float
    fits: bool
    cycle_s: float  # how often each of the population is examined, at this run's pace
    over_timeout: list[str]


def project(figures: Figures, plans: dict[str, Plan], servers: int = 25_000) -> dict[str, Run]:
    p = parts(figures, servers)
    return {name: _run(p, plan, figures, servers) for name, plan in plans.items()}


def _run(p: Parts, plan: Plan, figures: Figures, servers: int) -> Run:
    stage = p.stage[plan.stage]
    who, interval, limit = DUE[plan.stage]
    population = round(servers * figures.remote / figures.servers) if who == "remote" else servers
    period = runs_until(plan.interval_s, interval.total_seconds())
    due = min(limit or population, population / period)
    work = due * figures.changed / figures.servers if plan.stage == "analyze" else due  # an unchanged source costs one cheap call
    capacity = plan.budget / stage["per_server_s"] if stage["per_server_s"] else math.inf  # the budget's clock starts after the fixed part
    per_shard = min(work / plan.shards, capacity)
    done = per_shard * plan.shards
    stage_s = stage["fixed_s"] + stage["per_server_s"] * per_shard
    shard_mb = stage["shard_mb_per_server"] * per_shard
    restore = p.restore_s + p.snapshot_mb / DOWNLOAD_MB_S
    pack = next((s for job in plan.jobs for s in job.steps if s.kind == "pack"), None)
    packed_dir = (option(pack.argv, "--out") or "\0") if pack else "\0"
    uploaded: dict[str, float] = {}
    jobs = []
    for job in plan.jobs:
        steps: list[tuple[str, float]] = []
        for step in job.steps:
            if step.kind == "setup":
                if not any(label == "setup" for label, _ in steps):
                    steps.append(("setup", JOB_SETUP_S))
            elif step.kind == "restore":
                steps.append(("restore", restore))
            elif step.kind == "stage":
                steps.append((f"stage ({per_shard:,.0f} servers{', bounded by the budget' if per_shard < work / plan.shards else ''})", stage_s))
            elif step.kind == "command" and not step.argv:
                continue  # no stage writes the main database in this workflow
            elif step.kind == "upload":
                mb = shard_mb if "shard" in step.path else p.pack[level_of(plan)][1] if step.path.startswith(packed_dir) else p.db_mb
                uploaded[step.artifact] = uploaded.get(step.artifact, 0.0) + mb * (plan.shards if "shard" in step.path else 1)
                steps.append((f"upload {step.artifact} ({mb:,.0f} MB)", mb / UPLOAD_MB_S))
            elif step.kind == "download":
                mb = sum(v for k, v in uploaded.items() if k == step.artifact or (step.artifact.endswith("*") and k.startswith(step.artifact[:-1])))
                steps.append((f"download {step.artifact} ({mb:,.0f} MB)", mb / DOWNLOAD_MB_S))
            elif step.kind == "merge":
                steps.append(("merge", p.merge_fixed_s + stage["merge_per_server_s"] * done))
            elif step.kind in ("score", "build", "check"):
                steps.append((step.kind, {"score": p.score_s, "build": p.build_s, "check": p.check_s}[step.kind]))
            elif step.kind == "pack":
                steps.append((f"pack (zstd {level_of(plan)})", p.pack[level_of(plan)][0]))
            elif step.kind == "publish":
                mb = p.pack[level_of(plan)][1] if level_of(plan) in p.pack else p.snapshot_mb
                steps.append(("publish", p.publish_s))
                steps.append((f"upload the snapshot ({mb:,.0f} MB)", mb / UPLOAD_MB_S))
            elif step.kind == "pages":
                steps.append((f"upload the site ({p.site_mb:,.0f} MB)", p.site_mb / UPLOAD_MB_S))
            else:
                steps.append((f"not modelled: {step.text}", 0.0))
        jobs.append((job.name, steps))
    seconds = [sum(s for _, s in steps) for _, steps in jobs]
    wall = sum(seconds)
    lag = runs_until(plan.interval_s, wall)
    served = due * min(1.0, done / work) if work else due
    cycle = plan.interval_s * max(period, math.ceil(population * lag / served - 1e-9) if served else math.inf)
    over = [f"{name} {s / 60:.0f} min > {job.timeout_min:.0f}" for (name, _), s, job in zip(jobs, seconds, plan.jobs) if s > job.timeout_min * 60]
    return Run(plan=plan, population=population, due=due, done=done, bounded=per_shard < work / plan.shards, jobs=jobs, wall_s=wall,
               runner_s=sum(s * job.runners for s, job in zip(seconds, plan.jobs)), fits=wall <= plan.interval_s, cycle_s=cycle, over_timeout=over)


def level_of(plan: Plan) -> int:
    """The zstd level a workflow packs at: its pack step's --level, else its pack_level input, else the store's default."""
    pack = next((s for job in plan.jobs for s in job.steps if s.kind == "pack"), None)
    level = option(pack.argv, "--level") if pack else None
    return int(level) if level else plan.pack_level if plan.pack_level is not None else ZSTD_LEVEL


def report_lines(figures: Figures, plans: dict[str, Plan], servers: int = 25_000) -> list[str]:
    p = parts(figures, servers)
    lines = [f"projection, {servers:,} servers ({RUNNER}; measured parts scaled ×{p.scale:g} with the servers):",
             f"  restore {p.restore_s:.0f} s (+ {p.snapshot_mb:,.0f} MB downloaded); merge {p.merge_fixed_s:.1f} s fixed + per server "
             + ", ".join(f"{k} {v['merge_per_server_s'] * 1000:.2f} ms" for k, v in p.stage.items())
             + f"; check {p.check_s:.0f} s; publish {p.publish_s:.0f} s; "
             + "; ".join(f"pack zstd {k} {v[0]:.0f} s → {v[1]:,.0f} MB" for k, v in p.pack.items())
             + f"; score {p.score_s:.0f} s, build {p.build_s:.0f} s; database {p.db_mb:,.0f} MB, site {p.site_mb:,.0f} MB"]
    wall = runner = 0.0
    for name, run in project(figures, plans, servers).items():
        plan, stage = run.plan, p.stage[name]
        level = f"zstd {level_of(plan)}" + ("" if plan.pack_level is not None else " (no pack_level input: the default)")
        lines.append(f"  {plan.file} ({name}): cron {plan.cron!r} (every {plan.interval_s / 60:,.0f} min), {plan.shards} shards, "
                     f"budget {plan.budget:,.0f} s, "
                     f"{level}; {run.due:,.0f} of {run.population:,} due a run, {run.done:,.0f} done; a job's stage {stage['fixed_s']:.1f} s fixed + "
                     f"{stage['per_server_s'] * 1000:.1f} ms/server")
        for (job, steps), spec in zip(run.jobs, plan.jobs):
            total = sum(s for _, s in steps)
            shown = " + ".join(f"{label} {s:,.0f}" for label, s in steps)
            lines.append(f"    {job}{f' ×{spec.runners}' if spec.runners > 1 else ''}: {total:,.0f} s = {shown}")
        verdict = "fits" if run.fits else "DOES NOT FIT"
        every = f"each of the {run.population:,} every {run.cycle_s / 60:,.0f} min"
        if name == "monitor":
            inside = ROLLING_S[0] <= run.cycle_s <= ROLLING_S[1]
            every += f" ({'inside' if inside else 'OUTSIDE'} issue 18's {ROLLING_S[0] // 60}-{ROLLING_S[1] // 60} min)"
        timeouts = f"; over its timeout: {', '.join(run.over_timeout)}" if run.over_timeout else ""
        lines.append(f"    a run {run.wall_s / 60:.1f} min, the next starts after {plan.interval_s / 60:,.0f}: {verdict}; {every}; "
                     f"{runs_a_day(plan):g} runs a day, {run.runner_s / 60:.0f} runner-min each{timeouts}")
        wall, runner = wall + run.wall_s * runs_a_day(plan), runner + run.runner_s * runs_a_day(plan)
    full = [plan.file for plan in plans.values() if plan.full]
    lines.append(f"  score+build: no workflow of its own; publish.yml's merge job scores, builds and uploads the site when full "
                 f"({', '.join(full) or 'none'}): score {p.score_s:,.0f} s + build {p.build_s:,.0f} s + the site's upload "
                 f"{p.site_mb / UPLOAD_MB_S:,.0f} s a run")
    lines.append(f"  a day: {wall / 3600:.1f} h of workflow wall time, {runner / 3600:.0f} runner-hours")
    return lines
