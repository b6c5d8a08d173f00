"""Run the workflows of .github/workflows/ on this machine, job graph and all, as GitHub Actions would.

Each job gets a fresh workspace (the checkout's files, no database, no site), its `run:` steps run in bash with the
job's environment, and jobs pass files only through artifacts, as on GitHub. The actions our workflows use map to local
equivalents: checkout and setup-* prepare the workspace, the artifact actions use a directory per run, the Pages
actions copy the site into a local "published site" directory. A workflow that needs anything else is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pipeline.fleet.workflow import EXPRESSION, Contexts, Workflow, WorkflowError, as_text, load, matrix, needs, typed_inputs

WORKFLOWS = Path(".github") / "workflows"
# Files of the checkout a job never gets: they are made by runs (the database, the site), or are the machine's.
_NOT_CHECKED_OUT = {".git", ".venv", "data", "_site", "node_modules", ".pytest_cache", ".ruff_cache", "build"}
_PAGES_ARTIFACT = "github-pages"


@dataclass
class Local:
    """Where a local run lives and what it is given in place of GitHub's."""

    checkout: Path  # the repository whose workflows and code run
    workdir: Path  # workspaces, artifacts and the published site
    vars: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # added to every step's environment (e.g. SCOREBOARD_CACHE)
    repository: str = "local/scoreboard"
    python: str = sys.executable  # `.venv/bin/scoreboard` in a workspace runs this interpreter on the checkout's code
    echo: Callable[[str], None] = print

    @property
    def published_site(self) -> Path:
        return self.workdir / "published-site"


@dataclass
class JobResult:
    name: str
    conclusion: str  # success, failure or skipped
    error: str = ""
    seconds: float = 0.0  # wall time of a job that ran (the bench's per-shard figures)


@dataclass
class WorkflowRun:
    workflow: str
    run_id: int
    jobs: list[JobResult]

    @property
    def ok(self) -> bool:
        return all(j.conclusion == "success" for j in self.jobs)

    def summary_line(self) -> str:
        counts = {c: sum(j.conclusion == c for j in self.jobs) for c in ("success", "failure", "skipped")}
        return (f"workflow {self.workflow} run {self.run_id}: {'success' if self.ok else 'failure'}; jobs succeeded {counts['success']}, "
                f"failed {counts['failure']}, skipped {counts['skipped']}; {sum(j.seconds for j in self.jobs):.1f}s")


class JobFailed(Exception):
    pass


def run_workflow(local: Local, name: str, *, event: str = "schedule", inputs: dict[str, Any] | None = None) -> WorkflowRun:
    """Run one workflow file (by file name, e.g. analysis.yml) for an event; its called workflows run inside it."""
    workflow = load(local.checkout / WORKFLOWS / name)
    if event not in workflow.triggers:
        raise WorkflowError(f"{name} is not triggered by {event}")
    run_id = _next_run_id(local.workdir)
    github = {"repository": local.repository, "repository_owner": local.repository.split("/")[0], "event_name": event, "run_id": run_id,
              "run_number": run_id, "token": local.secrets.get("GITHUB_TOKEN", ""), "workflow": workflow.name,
              "event": {"repository": {"name": local.repository.split("/")[-1]}, "inputs": inputs or {}}}
    declared = workflow.inputs("workflow_dispatch") if "workflow_dispatch" in workflow.triggers else {}
    given = typed_inputs(workflow, "workflow_dispatch", inputs or {}, name) if event == "workflow_dispatch" else {}
    contexts = Contexts(github=github, vars=local.vars, secrets=dict(local.secrets), inputs=given, declared_inputs=set(declared))
    local.echo(f"[{name}] run {run_id} ({event})")
    results = _run_jobs(local, workflow, contexts, run_dir=local.workdir / "runs" / str(run_id), prefix="")
    run = WorkflowRun(workflow=name, run_id=run_id, jobs=results)
    local.echo(run.summary_line())
    return run


def _next_run_id(workdir: Path) -> int:
    runs = workdir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    return 1 + max((int(p.name) for p in runs.iterdir() if p.name.isdigit()), default=0)


def _run_jobs(local: Local, workflow: Workflow, contexts: Contexts, run_dir: Path, prefix: str) -> list[JobResult]:
    results: list[JobResult] = []
    concluded: dict[str, str] = {}
    for job_id in workflow.order():
        job = workflow.jobs[job_id]
        where = f"{workflow.path.name}: job {job_id}"
        if any(concluded[n] != "success" for n in needs(job)):
            concluded[job_id] = "skipped"
            results.append(JobResult(prefix + job_id, "skipped"))
            local.echo(f"[{prefix}{job_id}] skipped: a job it needs did not succeed")
            continue
        combinations = matrix(job, where)
        conclusion = "success"
        for index, combination in enumerate(combinations):
            job_contexts = replace(contexts, matrix=combination, strategy={"job-total": len(combinations), "job-index": index})
            label = prefix + job_id + (f" ({', '.join(as_text(v) for v in combination.values())})" if combination else "")
            if conclusion == "failure":  # fail-fast: the rest of the matrix is cancelled
                results.append(JobResult(label, "skipped"))
                continue
            started = time.monotonic()
            try:
                if "uses" in job:
                    inner = _call(local, job, job_contexts, run_dir, label, where)
                    results += inner
                    if any(r.conclusion != "success" for r in inner):
                        conclusion = "failure"
                    continue
                _run_steps(local, workflow, job, job_contexts, run_dir, label, where, index)
                results.append(JobResult(label, "success", seconds=time.monotonic() - started))
                local.echo(f"[{label}] succeeded in {results[-1].seconds:.1f}s")
            except JobFailed as exc:
                results.append(JobResult(label, "failure", str(exc), seconds=time.monotonic() - started))
                local.echo(f"[{label}] failed after {results[-1].seconds:.1f}s: {exc}")
                conclusion = "failure"
        concluded[job_id] = conclusion
    return results


def _call(local: Local, job: dict, contexts: Contexts, run_dir: Path, label: str, where: str) -> list[JobResult]:
    """A job that calls a reusable workflow of this repository: its jobs run in this run, with the inputs and secrets given."""
    target = str(job["uses"])
    if not target.startswith("./"):
        raise WorkflowError(f"{where}: only this repository's reusable workflows run locally, not {target}")
    called = load(local.checkout / target)
    if "workflow_call" not in called.triggers:
        raise WorkflowError(f"{where}: {target} is not a reusable workflow (no workflow_call)")
    given = contexts.substitute(dict(job.get("with") or {}), where)
    secrets_spec = job.get("secrets") or {}
    if secrets_spec == "inherit":
        secrets = dict(contexts.secrets)
    else:
        unknown = set(secrets_spec) - called.declared_secrets()
        if unknown:
            raise WorkflowError(f"{where}: {target} declares no secret {', '.join(sorted(unknown))}")
        secrets = {k: as_text(v) for k, v in contexts.substitute(dict(secrets_spec), where).items()}
    inner = replace(contexts, secrets=secrets, inputs=typed_inputs(called, "workflow_call", given, where),
                    declared_inputs=set(called.inputs("workflow_call")), matrix={}, strategy={})
    return _run_jobs(local, called, inner, run_dir, prefix=f"{label} / ")


def _run_steps(local: Local, workflow: Workflow, job: dict, contexts: Contexts, run_dir: Path, label: str, where: str, index: int) -> None:
    workspace = _workspace(local, run_dir / "jobs" / f"{index + 1}-{label.replace(' / ', '.').split(' ')[0]}-{time.monotonic_ns()}")
    deadline = time.monotonic() + 60 * float(contexts.substitute(job.get("timeout-minutes", 360), where))
    env = {**{k: as_text(v) for k, v in contexts.substitute(workflow.env, where).items()},
           **{k: as_text(v) for k, v in contexts.substitute(dict(job.get("env") or {}), where).items()}}
    local.echo(f"[{label}] started")
    for number, step in enumerate(job.get("steps") or [], 1):
        step_where = f"{where}: step {number} ({step.get('name') or step.get('uses') or 'run'})"
        if "if" in step and not contexts.condition(step["if"], step_where):
            continue
        if "uses" in step:
            _action(local, str(step["uses"]), contexts.substitute(dict(step.get("with") or {}), step_where), workspace, run_dir, step_where)
            continue
        step_env = {**env, **{k: as_text(v) for k, v in contexts.substitute(dict(step.get("env") or {}), step_where).items()}}
        script = contexts.substitute(str(step["run"]), step_where)
        _shell(local, script, step_env, workspace, run_dir, label, deadline, step_where)


def _workspace(local: Local, path: Path) -> Path:
    """A fresh checkout: links to the repository's files, and a `.venv` that runs this interpreter on them.

    `make venv` finds its stamp newer than pyproject.toml and does nothing; `.venv/bin/scoreboard` is the checkout's CLI.
    """
    path.mkdir(parents=True)
    for entry in local.checkout.iterdir():
        if entry.name not in _NOT_CHECKED_OUT:
            (path / entry.name).symlink_to(entry)
    bin_dir = path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, module in (("scoreboard", "pipeline.cli"), ("python", None)):
        target = bin_dir / name
        command = f'exec "{local.python}" -m {module} "$@"' if module else f'exec "{local.python}" "$@"'
        target.write_text(f'#!/bin/sh\nPYTHONPATH="{local.checkout}${{PYTHONPATH:+:$PYTHONPATH}}" {command}\n')
        target.chmod(0o755)
    (path / ".venv" / ".installed-stamp").touch()
    return path


def _shell(local: Local, script: str, env: dict[str, str], workspace: Path, run_dir: Path, label: str, deadline: float, where: str) -> None:
    script_file = run_dir / "scripts" / f"{time.monotonic_ns()}.sh"
    script_file.parent.mkdir(parents=True, exist_ok=True)
    script_file.write_text(script)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    environment.update(local.env)
    environment.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": local.repository, "GITHUB_WORKSPACE": str(workspace),
                        "GITHUB_RUN_ID": str(run_dir.name), "GITHUB_STEP_SUMMARY": str(run_dir / "step-summary.md"),
                        "RUNNER_TEMP": str(run_dir / "tmp")})
    environment.update(env)
    (run_dir / "tmp").mkdir(exist_ok=True)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise JobFailed(f"{where}: the job's timeout-minutes ran out")
    process = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)], cwd=workspace, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    reader = threading.Thread(target=_relay, args=(process, local.echo, label), daemon=True)
    reader.start()
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    if process.poll() is None:
        os.killpg(process.pid, 9)
        process.wait()
        raise JobFailed(f"{where}: the job's timeout-minutes ran out")
    reader.join()
    if process.returncode != 0:
        raise JobFailed(f"{where}: exit code {process.returncode}")


def _relay(process: subprocess.Popen, echo: Callable[[str], None], label: str) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        echo(f"[{label}] {line.rstrip()}")


def _action(local: Local, uses: str, inputs: dict[str, Any], workspace: Path, run_dir: Path, where: str) -> None:
    action = uses.split("@", 1)[0]
    artifacts = run_dir / "artifacts"
    if action in ("actions/checkout", "actions/setup-python", "actions/setup-node"):
        return  # the workspace is the checkout; this interpreter and node are the machine's
    if action == "actions/upload-artifact":
        _upload(artifacts / str(inputs["name"]), workspace, str(inputs["path"]), str(inputs.get("if-no-files-found", "warn")), where)
    elif action == "actions/download-artifact":
        _download(artifacts, workspace / str(inputs.get("path") or "."), inputs, where)
    elif action == "actions/upload-pages-artifact":
        _upload(artifacts / _PAGES_ARTIFACT, workspace, str(inputs.get("path") or "_site"), "error", where)
    elif action == "actions/deploy-pages":
        _deploy(artifacts / _PAGES_ARTIFACT, local.published_site, where)
    else:
        raise WorkflowError(f"{where}: the local runner has no equivalent of {uses}")


def _upload(target: Path, workspace: Path, paths: str, if_none: str, where: str) -> None:
    if target.exists():
        raise JobFailed(f"{where}: an artifact named {target.name} was already uploaded in this run")
    found = [p for line in paths.splitlines() if line.strip() for p in sorted(workspace.glob(line.strip()))]
    if not found:
        if if_none == "error":
            raise JobFailed(f"{where}: no files were found with the provided path: {paths.strip()}")
        return
    target.mkdir(parents=True)
    for source in found:  # a directory uploads its contents, a file itself, as upload-artifact does with one path
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target / source.name)


def _download(artifacts: Path, target: Path, inputs: dict[str, Any], where: str) -> None:
    available = sorted(p for p in artifacts.iterdir()) if artifacts.exists() else []
    if inputs.get("name"):
        chosen = [p for p in available if p.name == inputs["name"]]
        if not chosen:
            raise JobFailed(f"{where}: artifact not found: {inputs['name']}")
        shutil.copytree(chosen[0], target, dirs_exist_ok=True)
        return
    pattern = str(inputs.get("pattern") or "*")
    target.mkdir(parents=True, exist_ok=True)
    for artifact in (p for p in available if p.match(pattern)):
        shutil.copytree(artifact, target if inputs.get("merge-multiple") else target / artifact.name, dirs_exist_ok=True)


def _deploy(artifact: Path, site: Path, where: str) -> None:
    """Replace the published site with the run's Pages artifact in one rename, as a deploy replaces the whole site."""
    if not artifact.is_dir():
        raise JobFailed(f"{where}: no github-pages artifact was uploaded in this run")
    staged = site.with_name(site.name + ".new")
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(artifact, staged)
    if site.exists():
        retired = site.with_name(site.name + ".old")
        shutil.rmtree(retired, ignore_errors=True)
        site.rename(retired)
        staged.rename(site)
        shutil.rmtree(retired)
    else:
        staged.rename(site)


def validate(checkout: Path) -> list[str]:
    """Load every workflow and check what the runner would refuse before running anything: the file names that load."""
    names = []
    for path in sorted((checkout / WORKFLOWS).glob("*.y*ml")):
        workflow = load(path)
        declared = set(workflow.inputs("workflow_dispatch")) | set(workflow.inputs("workflow_call"))
        for expression in _expressions([workflow.env, workflow.jobs]):
            root, _, rest = expression.partition(".")
            if not _CONTEXT.match(expression) or root not in _ROOTS or (root == "inputs" and rest not in declared):
                raise WorkflowError(f"{path.name}: the local runner cannot evaluate ${{{{ {expression} }}}}")
        for job_id, job in workflow.jobs.items():
            if "uses" in job and str(job["uses"]).startswith("./"):
                called = load(checkout / job["uses"])
                unknown = set(job.get("with") or {}) - set(called.inputs("workflow_call"))
                if unknown:
                    raise WorkflowError(f"{path.name}: job {job_id}: {job['uses']} declares no input {', '.join(sorted(unknown))}")
        names.append(path.name)
    return names


_CONTEXT = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
_ROOTS = {"matrix", "strategy", "inputs", "github", "vars", "secrets"}


def _expressions(value: Any, key: str | None = None) -> list[str]:
    """Every expression in a workflow's values; an `if:` may be one without ${{ }}."""
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in _expressions(v, k)]
    if isinstance(value, list):
        return [e for v in value for e in _expressions(v)]
    if not isinstance(value, str):
        return []
    return [m.group(1) for m in EXPRESSION.finditer(value)] or ([value.strip()] if key == "if" else [])
