"""The workflows as bench/fleet_day.py models them, read from .github/workflows/ with the local runner's parser
(pipeline.fleet.workflow): each per-server stage's workflow, its schedule, shard count, budget and timeouts, and the
steps of each job it runs (the shard job of shard.yml, the merge and publish jobs of publish.yml), with the inputs the
workflow passes, so the projection follows the files and the bench calls the CLI exactly as their steps do.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.fleet.workflow import Contexts, Workflow, as_text, load, matrix, typed_inputs

# The per-server stages and the workflow that runs each on its schedule.
STAGE_WORKFLOWS = {"analyze": "analysis.yml", "monitor": "fast-probes.yml", "probe": "deep-probes.yml", "judge": "judges.yml"}
SETUP_STEPS = {"actions/checkout", "actions/setup-python", "actions/setup-node"}
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


@dataclass
class Step:
    kind: str  # setup, restore, stage, command, download, merge, score, build, check, pack, publish, upload, pages, deploy, unknown
    argv: list[str] = field(default_factory=list)  # a `scoreboard` command's arguments, as the step runs it
    artifact: str = ""  # upload/download: the artifact's name or pattern
    path: str = ""  # upload: what is uploaded
    text: str = ""  # what the step is, for a line that says it is not modelled


@dataclass
class Job:
    name: str
    runners: int  # matrix jobs run at once
    timeout_min: float
    steps: list[Step]


@dataclass
class Plan:
    """One per-server stage's workflow: when it runs, how it is split, and its jobs in order (shard, merge, publish)."""

    file: str
    stage: str
    cron: str
    interval_s: float  # between two scheduled runs
    shards: int
    budget: float
    pack_level: int | None  # the workflow's `pack_level` input to publish.yml, when declared
    full: bool  # the merge job scores, builds and deploys the site too
    jobs: list[Job]

    @property
    def shard_argv(self) -> list[str]:
        return next(s.argv for s in self.jobs[0].steps if s.kind == "stage")


def plans(workflows: Path) -> dict[str, Plan]:
    return {stage: plan(workflows, name) for stage, name in STAGE_WORKFLOWS.items()}


def plan(workflows: Path, name: str) -> Plan:
    workflow = load(workflows / name)
    cron = str(workflow.triggers["schedule"][0]["cron"])
    github = {"event_name": "schedule", "event": {}, "token": "", "repository": "owner/name"}
    declared = set(workflow.inputs("workflow_dispatch"))
    outer = Contexts(github=github, vars={}, secrets={}, declared_inputs=declared)
    calls = [(job_id, job) for job_id, job in workflow.jobs.items() if "uses" in job]
    shard_id, shard_call = next((j, job) for j, job in calls if job["uses"].endswith("/shard.yml"))
    publish_call = next(job for _, job in calls if job["uses"].endswith("/publish.yml"))
    combos = matrix(shard_call, f"{name}: job {shard_id}")
    first = Contexts(**{**vars(outer), "matrix": combos[0], "strategy": {"job-total": len(combos), "job-index": 0}})
    shard_jobs = _called(workflows, shard_call, first, runners=len(combos))
    publish_jobs = _called(workflows, publish_call, outer, runners=1)
    called = load(workflows / "publish.yml")
    given = typed_inputs(called, "workflow_call", outer.substitute(dict(publish_call.get("with") or {}), name), name)
    shard_inputs = first.substitute(dict(shard_call.get("with") or {}), name)
    return Plan(file=name, stage=str(shard_inputs["stage"]), cron=cron, interval_s=cron_interval(cron), shards=len(combos),
                budget=float(shard_inputs["budget"]), pack_level=int(given["pack_level"]) if "pack_level" in given else None,
                full=bool(given.get("full")), jobs=shard_jobs + publish_jobs)


def _called(workflows: Path, call: dict, contexts: Contexts, runners: int) -> list[Job]:
    """The jobs of a reusable workflow as one call of it runs them, each step classified (its `if:` decided)."""
    workflow = load(workflows / Path(call["uses"]).name)
    where = f"{workflow.path.name}"
    inputs = typed_inputs(workflow, "workflow_call", contexts.substitute(dict(call.get("with") or {}), where), where)
    inner = Contexts(github=contexts.github, vars={}, secrets={}, inputs=inputs, declared_inputs=set(workflow.inputs("workflow_call")),
                     matrix=contexts.matrix, strategy=contexts.strategy)
    jobs = []
    for job_id in workflow.order():
        job = workflow.jobs[job_id]
        steps = [_step(workflow, step, inner, f"{where}: job {job_id}") for step in job.get("steps") or []
                 if "if" not in step or inner.condition(step["if"], where)]
        timeout = float(inner.substitute(job.get("timeout-minutes", 360), where))
        jobs.append(Job(name=f"{workflow.path.stem} {job_id}", runners=runners, timeout_min=timeout, steps=steps))
    return jobs


def _step(workflow: Workflow, step: dict, contexts: Contexts, where: str) -> Step:
    with_ = contexts.substitute(dict(step.get("with") or {}), where)
    if "uses" in step:
        action = str(step["uses"]).split("@", 1)[0]
        if action in SETUP_STEPS:
            return Step("setup", text=action)
        if action == "actions/upload-artifact":
            return Step("upload", artifact=as_text(with_.get("name")), path=as_text(with_.get("path")), text=action)
        if action == "actions/download-artifact":
            return Step("download", artifact=as_text(with_.get("name") or with_.get("pattern")), text=action)
        if action == "actions/upload-pages-artifact":
            return Step("pages", path=as_text(with_.get("path")), text=action)
        if action == "actions/deploy-pages":
            return Step("deploy", text=action)
        return Step("unknown", text=action)
    env = {k: as_text(v) for k, v in contexts.substitute({**workflow.env, **dict(step.get("env") or {})}, where).items()}
    script = contexts.substitute(str(step["run"]), where)
    lines = [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]
    if any(line == "make venv" for line in lines):
        return Step("setup", text="make venv")
    for line in lines:
        if ".github/scripts/snapshot" in line:  # restore, pack DIR, publish [DIR]: the script's scoreboard command for it
            action, *given = shlex.split(line.split(".github/scripts/snapshot", 1)[1])
            argv = _script_argv(workflow.path.parent.parent / "scripts" / "snapshot", action, given, env)
            return Step(_kind(argv), argv=argv, text=line)
        if "$COMMAND" in line:
            return Step("command", argv=shlex.split(env.get("COMMAND", "")), text=line)
        if "scoreboard" in line:
            argv = _scoreboard_argv(line, env)
            return Step(_kind(argv), argv=argv, text=line)
    return Step("unknown", text=step.get("name") or script[:60])


def _scoreboard_argv(line: str, env: dict[str, str]) -> list[str]:
    """The arguments after `…/scoreboard` on a shell line, its $VARIABLES expanded from the step's env (a bash array is kept)."""
    command = line.split(";")[0] if "then" not in line else line.split("then", 1)[1].split(";")[0]
    expanded = _VARIABLE.sub(lambda m: env.get(m.group(1), m.group(0)), command)
    words = shlex.split(expanded)
    at = next(i for i, w in enumerate(words) if w.endswith("scoreboard"))
    return words[at + 1:]


def _script_argv(script: Path, action: str, given: list[str], env: dict[str, str]) -> list[str]:
    """The `scoreboard` arguments .github/scripts/snapshot runs for `action` and its arguments: the branch's line that
    uses them (else its last), its ${NAME:-default}, $1.. and $store expanded (the store is named STORE)."""
    if not script.is_file():
        script = Path(__file__).resolve().parent.parent / ".github" / "scripts" / "snapshot"
    branch = script.read_text().split(f"\n  {action})", 1)[1].split(";;", 1)[0]
    found = [line.strip() for line in branch.splitlines() if "scoreboard" in line]
    line = next((f for f in found if "$2" in f or "${2" in f), found[-1]) if given else found[-1]
    values = {"store": "STORE", **{str(n): v for n, v in enumerate(given, 2)}, **env}

    def value(match: re.Match) -> str:
        name, rest = match.group(1), match.group(2) or ""
        return values.get(name) or (rest[2:] if rest.startswith(":-") else "")

    words = shlex.split(re.sub(r"\$\{(\w+)(:[-?][^}]*)?\}|\$(\w+)", lambda m: value(m) if m.group(1) else values.get(m.group(3), ""), line))
    return words[next(i for i, w in enumerate(words) if w.endswith("scoreboard")) + 1:]


def _kind(argv: list[str]) -> str:
    if not argv:
        return "unknown"
    if argv[0] == "snapshot" and len(argv) > 1:
        return argv[1]  # check, pack, publish, restore
    if argv[0] in ("merge", "score", "build"):
        return argv[0]
    return "stage" if argv[0] in STAGE_WORKFLOWS else "unknown"


def cron_interval(cron: str) -> float:
    """Seconds between two runs of a schedule of the forms our workflows use: */N minutes; a minute of every (N-th) hour;
    a minute of an hour of every day, or of one weekday."""
    minute, hour, day, month, weekday = cron.split()
    if minute.startswith("*/") and hour == "*":
        return int(minute[2:]) * 60.0
    if minute.isdigit() and hour == "*":
        return 3600.0
    if minute.isdigit() and hour.startswith("*/"):
        return int(hour[2:]) * 3600.0
    if minute.isdigit() and hour.isdigit() and day == month == "*":
        return 86400.0 * (7 if weekday != "*" else 1)
    raise ValueError(f"a schedule the bench does not model: {cron!r}")


def option(argv: list[str], name: str) -> str | None:
    """The value of `--name VALUE` in an argument list."""
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def runs_a_day(plan: Plan) -> float:
    return 86400.0 / plan.interval_s


def runs_until(interval_s: float, seconds: float) -> int:
    """How many scheduled runs start before `seconds` after a run's start (at least 1)."""
    return max(1, math.ceil(seconds / interval_s - 1e-9))


def inputs_note(plan: Plan) -> dict[str, Any]:
    return {"shards": plan.shards, "budget": plan.budget, "pack_level": plan.pack_level, "timeouts": [j.timeout_min for j in plan.jobs]}
