"""The fleet bench's quick path on 100 servers, so it cannot rot: loopback endpoints, a black hole, 30 simulated days, a
snapshot published and restored, a day in each workflow's shards, the sizes and the projection; and the projection's
arithmetic on fixed figures and workflow files (bench/fleet_projection.py, bench/fleet_workflows.py)."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

from bench import fleet_day, fleet_history, fleet_projection, fleet_workflows
from bench.fleet_projection import Figures
from pipeline import store

WORKFLOWS = Path(__file__).resolve().parent.parent / ".github" / "workflows"


def test_a_sharded_day_over_a_simulated_fleet(tmp_path: Path) -> None:
    args = fleet_day.arguments(["--servers", "100", "--deadline", "1", "--black-holed", "3"])
    lines: list[str] = []
    figures = fleet_day.run_day(args, tmp_path, say=lines.append)

    assert 0.95 < figures.black_hole_wait < 2  # a connect to the black hole waited out its deadline
    steps = int(fleet_history.RAW_KEPT / fleet_history.FAST_EVERY)
    assert figures.history_rows["probe_runs"] >= figures.remote * steps
    db = store.open_db(tmp_path / "fleet.db")
    days = db.execute("select count(distinct substr(started_at, 1, 10)) from probe_runs where kind = 'deep'").fetchone()[0]
    assert days >= fleet_history.DAYS
    assert db.execute("select count(distinct day) from score_history").fetchone()[0] == fleet_history.DAYS + 1  # the month, and today

    plans = fleet_workflows.plans(WORKFLOWS)
    for stage in ("monitor", "probe"):
        shards = figures.shards[stage]
        count = plans[stage].shards  # the workflow's own split
        assert [r["shard"] for r in shards] == [f"{i}/{count}" for i in range(1, count + 1)]
        assert sum(r["servers"] for r in shards) == figures.remote  # every remote server in exactly one shard
        counts = {k: sum(r["counts"].get(k, 0) for r in shards) for k in ("ok", "timeout", "auth_required", "http_error")}
        assert counts["timeout"] >= 3 and counts["ok"] > 0 and counts["auth_required"] + counts["http_error"] > 0, counts
    holes = db.execute("select id from servers where remote_url like ?", [f"%:{figures.black_hole_port}/%"]).fetchall()
    assert len(holes) == 3
    for (server_id,) in holes:  # each black-holed server's fast and deep probe of the day waited out the connect deadline
        today = db.execute("select outcome, detail from probe_runs where server_id = ? and run_id is not null", [server_id]).fetchall()
        assert len(today) == 2 and {o for o, _ in today} == {"timeout"}, today
        assert all("ConnectTimeout" in d or "no connection within 1 s" in d for _, d in today), today
    assert sum(r["servers"] for r in figures.shards["judge"]) == 100
    analysed = figures.shards["analyze"]
    assert sum(r["servers"] for r in analysed) == figures.changed == 4  # 4% of the sources changed
    assert sum(r["counts"].get("analyzed", 0) for r in analysed) == 4
    fresh = db.execute("select count(*) from probe_runs where kind = 'deep' and run_id is not null").fetchone()[0]
    assert fresh == figures.remote  # the shards' deep probes, merged into the main database
    assert all(" merged" in line for line in figures.merged.values()), figures.merged
    assert (tmp_path / "site" / "index.html").is_file()
    assert 0 < figures.sizes["snapshot"] < figures.sizes["db"]  # the store's zstd snapshot, which the restore was timed on
    assert figures.timings["restore"] > 0 and figures.timings["merge empty"] > 0

    fleet_day.report(figures, args, (0.1, 0.1), say=lines.append)
    text = "\n".join(lines)
    for expected in ("black-holed", "median", "snapshot restore", "projection", "fast-probes.yml (monitor)", "publish publish", "runner-hours",
                     "calibration loop"):
        assert expected in text
    projected = fleet_projection.project(figures, plans)
    assert set(projected) == {"analyze", "monitor", "probe", "judge"}
    assert all(run.wall_s > 3 * fleet_projection.JOB_SETUP_S for run in projected.values())  # three jobs, each set up


# ---------------------------------------------------------------------------- the projection's arithmetic


def _row(servers: int, wall: float, copy: float = 0.5, mb: float = 1.0) -> dict:
    return {"shard": "1/2", "servers": servers, "wall": wall, "counts": {}, "shard_db": "x.db", "copy": copy, "extract": 0.0, "mb": mb}


def fixed_figures(per_server: float = 0.01) -> Figures:
    """1,000 servers, 300 remote: a job starts in 2 s (0.5 of it copying the database), a stage costs `per_server` a server;
    an empty shard's merge 3 s, 1 ms more a server merged."""
    shards = {"startup": [{**_row(0, 2.0), "shard_db": None}]}
    for stage, servers in (("analyze", 40), ("monitor", 300), ("probe", 300), ("judge", 1000)):
        shards[stage] = [_row(servers // 2, 2.0 + per_server * servers / 2), _row(servers // 2, 2.0 + per_server * servers / 2)]
    timings = {"restore": 10.0, "merge empty": 3.0, "check": 5.0, "publish": 20.0, "score": 10.0, "build": 20.0}
    timings |= {f"merge {stage}": 3.0 + 0.001 * sum(r["servers"] for r in shards[stage]) for stage in fleet_workflows.STAGE_WORKFLOWS}
    sizes = {"db": 100e6, "snapshot": 10e6, "site": 50e6}
    for level in {12} | {fleet_projection.level_of(plan) for plan in fleet_workflows.plans(WORKFLOWS).values()}:
        sizes[f"packed {level}"], timings[f"pack {level}"] = 10e6, 10.0
    return Figures(servers=1000, remote=300, changed=40, timings=timings, shards=shards, sizes=sizes)


def _step(run: fleet_projection.Run, job: int, label: str) -> float:
    return next(s for name, s in run.jobs[job][1] if name.startswith(label))


def test_the_merge_is_its_fixed_cost_once_plus_a_cost_per_server_merged() -> None:
    plans = fleet_workflows.plans(WORKFLOWS)
    run = fleet_projection.project(fixed_figures(), plans, servers=1000)["monitor"]
    due = 300 / 2  # a fast probe is due 20 minutes after the last, the workflow runs every 10: half the remote servers a run
    assert run.due == due and run.done == due and not run.bounded
    assert _step(run, 1, "merge") == pytest.approx(3.0 + 0.001 * due)
    many = fleet_projection.project(fixed_figures(), {"monitor": _with_shards(plans["monitor"], 20)}, servers=1000)["monitor"]
    assert _step(many, 1, "merge") == _step(run, 1, "merge")  # more shards merge the same servers: the fixed cost is not multiplied
    at_scale = fleet_projection.project(fixed_figures(), plans, servers=10_000)["monitor"]
    start = 1.5  # a process's start (the empty job's, without its copy) is not scaled; the rest grows with the database
    assert _step(at_scale, 1, "merge") == pytest.approx(start + (3.0 - start) * 10 + 0.001 * due * 10)
    assert run.fits and run.cycle_s == 20 * 60  # every remote server every 20 minutes: inside issue 18's 15-30


def test_the_budget_bounds_a_shards_stage_and_stretches_the_cycle() -> None:
    plans = fleet_workflows.plans(WORKFLOWS)
    budget = plans["monitor"].budget
    run = fleet_projection.project(fixed_figures(per_server=10.0), plans, servers=1000)["monitor"]
    assert run.bounded and run.done < run.due
    fixed = 1.5 + 0.5  # the process's start and its private copy, before the budget's clock starts
    assert _step(run, 0, "stage") == pytest.approx(fixed + budget)  # the stage takes no more servers once its budget is spent
    assert run.done == pytest.approx(plans["monitor"].shards * budget / 10.0)
    assert run.fits  # the budget keeps the run inside its interval, and the servers it leaves wait:
    assert run.cycle_s == 600 * math.ceil(300 / run.done) > 30 * 60  # every remote server once in as many runs as it takes
    assert "OUTSIDE" in "\n".join(fleet_projection.report_lines(fixed_figures(per_server=10.0), {"monitor": plans["monitor"]}, servers=1000))


def test_the_workflow_files_decide_the_projection(tmp_path: Path) -> None:
    shutil.copytree(WORKFLOWS, tmp_path, dirs_exist_ok=True)
    fast = tmp_path / "fast-probes.yml"
    fast.write_text(re.sub(r"budget: \d+", "budget: 200", re.sub(r"shard: \[[^]]*\]", "shard: [1, 2, 3, 4, 5, 6]", fast.read_text())))
    before = fleet_projection.project(fixed_figures(), fleet_workflows.plans(WORKFLOWS), servers=1000)["monitor"]
    after = fleet_projection.project(fixed_figures(), fleet_workflows.plans(tmp_path), servers=1000)["monitor"]
    assert (after.plan.shards, after.plan.budget) == (6, 200)
    assert _step(after, 0, "stage") == pytest.approx(2.0 + 0.01 * 150 / 6)
    assert _step(before, 0, "stage") == pytest.approx(2.0 + 0.01 * 150 / before.plan.shards)
    assert after.runner_s > before.runner_s  # more shard jobs, each set up and restoring


def test_a_packing_workflow_and_an_in_place_shard_are_read_from_the_files(tmp_path: Path) -> None:
    """The merge job's `snapshot pack` at the workflow's pack_level and the shard's --shard-in-place, read from the files
    (added here when the files do not have them yet)."""
    shutil.copytree(WORKFLOWS, tmp_path, dirs_exist_ok=True)
    shard = tmp_path / "shard.yml"
    if "--shard-in-place" not in shard.read_text():
        shard.write_text(shard.read_text().replace('--budget "$BUDGET"', '--shard-in-place --budget "$BUDGET"'))
    publish = tmp_path / "publish.yml"
    text = publish.read_text()
    if "pack_level" not in text:
        text = text.replace("      first_run:\n", "      pack_level:\n        type: number\n        default: 12\n      first_run:\n", 1)
    text = re.sub(r"(pack_level:\n(?:\s+\w.*\n)*?\s+default: )\d+", r"\g<1>19", text)
    if "snapshot pack" not in text:
        step = ("      - run: .venv/bin/scoreboard snapshot pack --out packed --level ${{ inputs.pack_level }}\n"
                "      - uses: actions/upload-artifact@v4\n        with:\n          name: snapshot\n          path: packed\n")
        text = text.replace("      - uses: actions/upload-pages-artifact@v3", step + "      - uses: actions/upload-pages-artifact@v3")
    publish.write_text(text)
    fast = tmp_path / "fast-probes.yml"
    text = fast.read_text()
    if "pack_level" not in text:
        text = text.replace("      full: false\n", "      full: false\n      pack_level: 1\n")
    text = re.sub(r"pack_level: \d+", "pack_level: 3", text)
    fast.write_text(text)
    plans = fleet_workflows.plans(tmp_path)
    assert "--shard-in-place" in plans["monitor"].shard_argv
    assert (plans["monitor"].pack_level, plans["probe"].pack_level) == (3, 19)
    figures = fixed_figures()
    figures.sizes |= {"packed 3": 15e6, "packed 19": 8e6}
    figures.timings |= {"pack 3": 1.5 + 4.0, "pack 19": 1.5 + 40.0}
    run = fleet_projection.project(figures, plans, servers=1000)["monitor"]
    assert _step(run, 1, "pack (zstd 3)") == pytest.approx(5.5)
    assert _step(run, 1, "upload snapshot") == pytest.approx(15 / fleet_projection.UPLOAD_MB_S)
    deep = fleet_projection.project(figures, plans, servers=1000)["probe"]
    assert _step(deep, 1, "pack (zstd 19)") == pytest.approx(41.5)


def _with_shards(plan: fleet_workflows.Plan, shards: int) -> fleet_workflows.Plan:
    from dataclasses import replace

    return replace(plan, shards=shards, jobs=[replace(plan.jobs[0], runners=shards), *plan.jobs[1:]])


def test_schedules() -> None:
    assert [fleet_workflows.cron_interval(c) for c in ("*/10 * * * *", "40 * * * *", "20 */2 * * *", "30 3 * * *", "0 6 * * 0")] == \
        [600, 3600, 7200, 86400, 7 * 86400]
