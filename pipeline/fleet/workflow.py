"""The GitHub Actions workflow files as the local runner reads them: jobs, their order, matrices and expressions.

Only what our workflows use is understood; anything else is refused with the file and the job it is in, so a workflow
the runner cannot run faithfully never runs half-way.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_CONTEXT_PATH = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
_JOB_KEYS = {"name", "runs-on", "needs", "steps", "env", "permissions", "timeout-minutes", "strategy", "concurrency", "environment",
             "uses", "with", "secrets"}
# The actions with a local equivalent (pipeline.fleet.runner); a step using any other is refused.
ACTIONS = {"actions/checkout", "actions/setup-python", "actions/setup-node", "actions/upload-artifact", "actions/download-artifact",
           "actions/upload-pages-artifact", "actions/deploy-pages"}
_STEP_KEYS = {"name", "id", "uses", "with", "run", "env", "shell", "if", "timeout-minutes"}


class WorkflowError(Exception):
    """A workflow the local runner cannot run as GitHub would: what and where."""


@dataclass
class Workflow:
    path: Path
    name: str
    triggers: dict[str, Any]
    env: dict[str, Any]
    jobs: dict[str, dict]

    def inputs(self, event: str) -> dict[str, dict]:
        """The inputs an event declares (workflow_dispatch or workflow_call), by name."""
        trigger = self.triggers.get(event) or {}
        return dict(trigger.get("inputs") or {})

    def declared_secrets(self) -> set[str]:
        return set((self.triggers.get("workflow_call") or {}).get("secrets") or {})

    def order(self) -> list[str]:
        """Job ids in an order that respects `needs`, the file's order among independent jobs."""
        done: list[str] = []
        pending = list(self.jobs)
        while pending:
            ready = [j for j in pending if all(n in done for n in needs(self.jobs[j]))]
            if not ready:
                raise WorkflowError(f"{self.path.name}: the jobs' `needs` form a cycle: {', '.join(pending)}")
            done.append(ready[0])
            pending.remove(ready[0])
        return done


def needs(job: dict) -> list[str]:
    value = job.get("needs") or []
    return [value] if isinstance(value, str) else list(value)


def load(path: Path) -> Workflow:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise WorkflowError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise WorkflowError(f"{path}: not a workflow (no jobs)")
    # YAML 1.1 reads the key `on` as True.
    triggers = data.get("on", data.get(True))
    if isinstance(triggers, str):
        triggers = {triggers: {}}
    elif isinstance(triggers, list):
        triggers = {t: {} for t in triggers}
    workflow = Workflow(path=path, name=str(data.get("name") or path.stem), triggers=dict(triggers or {}), env=dict(data.get("env") or {}),
                        jobs=data["jobs"])
    for job_id, job in workflow.jobs.items():
        where = f"{path.name}: job {job_id}"
        unknown = set(job) - _JOB_KEYS
        if unknown:
            raise WorkflowError(f"{where}: the local runner does not understand {', '.join(sorted(unknown))}")
        missing = [n for n in needs(job) if n not in workflow.jobs]
        if missing:
            raise WorkflowError(f"{where}: needs an unknown job {', '.join(missing)}")
        if "uses" not in job:
            for step in job.get("steps") or []:
                unknown = set(step) - _STEP_KEYS
                if unknown:
                    raise WorkflowError(f"{where}: step {step.get('name') or step.get('uses') or step.get('run')!r}: "
                                        f"the local runner does not understand {', '.join(sorted(unknown))}")
                if ("uses" in step) == ("run" in step):
                    raise WorkflowError(f"{where}: a step has exactly one of `uses` and `run`")
                if "uses" in step and str(step["uses"]).split("@", 1)[0] not in ACTIONS:
                    raise WorkflowError(f"{where}: the local runner has no equivalent of {step['uses']}")
                if step.get("shell", "bash") != "bash":
                    raise WorkflowError(f"{where}: only bash steps run locally, not {step['shell']!r}")
    workflow.order()
    return workflow


def matrix(job: dict, where: str) -> list[dict[str, Any]]:
    """The job's matrix combinations (one empty one without a matrix); lists only, no include/exclude."""
    spec = (job.get("strategy") or {}).get("matrix")
    if spec is None:
        return [{}]
    if not isinstance(spec, dict) or any(not isinstance(v, list) for v in spec.values()):
        raise WorkflowError(f"{where}: the local runner expands a matrix of plain lists only, not {spec!r}")
    keys = list(spec)
    return [dict(zip(keys, values)) for values in itertools.product(*(spec[k] for k in keys))]


@dataclass
class Contexts:
    """What `${{ ... }}` can name locally: matrix, strategy, inputs, github, vars, secrets."""

    github: dict[str, Any]
    vars: dict[str, str]
    secrets: dict[str, str]
    inputs: dict[str, Any] = field(default_factory=dict)
    declared_inputs: set[str] = field(default_factory=set)
    matrix: dict[str, Any] = field(default_factory=dict)
    strategy: dict[str, Any] = field(default_factory=dict)

    def value(self, expression: str, where: str) -> Any:
        if not _CONTEXT_PATH.match(expression):
            raise WorkflowError(f"{where}: the local runner substitutes context values only, not ${{{{ {expression} }}}}")
        root, *path = expression.split(".")
        if root == "inputs":
            if path[0] not in self.declared_inputs or len(path) != 1:
                raise WorkflowError(f"{where}: ${{{{ {expression} }}}} names no declared input")
            return self.inputs.get(path[0])
        if root == "matrix":
            if len(path) != 1 or path[0] not in self.matrix:
                raise WorkflowError(f"{where}: ${{{{ {expression} }}}} is not in this job's matrix")
            return self.matrix[path[0]]
        if root == "strategy":
            if len(path) != 1 or path[0] not in self.strategy:
                raise WorkflowError(f"{where}: ${{{{ {expression} }}}} is not known (strategy.job-total, strategy.job-index)")
            return self.strategy[path[0]]
        if root in ("vars", "secrets") and len(path) == 1:
            return getattr(self, root).get(path[0], "")  # GitHub gives an empty string for one not set
        if root == "github" and path:
            value: Any = self.github
            for key in path:  # a missing property is null, as on GitHub (github.event.* differs by event)
                value = value.get(key) if isinstance(value, dict) else None
            return value
        raise WorkflowError(f"{where}: the local runner does not know the context of ${{{{ {expression} }}}}")

    def substitute(self, value: Any, where: str) -> Any:
        """Replace every `${{ ... }}` in a string (a whole-string one keeps its value's type)."""
        if isinstance(value, dict):
            return {k: self.substitute(v, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.substitute(v, where) for v in value]
        if not isinstance(value, str):
            return value
        found = list(EXPRESSION.finditer(value.strip()))
        if len(found) == 1 and found[0].span() == (0, len(value.strip())):
            return self.value(found[0].group(1), where)
        return EXPRESSION.sub(lambda m: as_text(self.value(m.group(1), where)), value)

    def condition(self, expression: Any, where: str) -> bool:
        """An `if:`: a context value, true unless empty, false, 0 or null."""
        if isinstance(expression, bool):
            return expression
        text = str(expression).strip()
        inner = EXPRESSION.fullmatch(text)
        value = self.value(inner.group(1) if inner else text, where)
        return value not in (None, "", False, 0, "false", "0")


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def typed_inputs(workflow: Workflow, event: str, given: dict[str, Any], where: str) -> dict[str, Any]:
    """The inputs a run sees: each declared one given or defaulted, typed as declared; unknown or missing ones refused."""
    declared = workflow.inputs(event)
    unknown = set(given) - set(declared)
    if unknown:
        raise WorkflowError(f"{where}: {workflow.path.name} declares no input {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        spec = spec or {}
        if name in given:
            raw = given[name]
        elif "default" in spec:
            raw = spec["default"]
        elif spec.get("required"):
            raise WorkflowError(f"{where}: {workflow.path.name} needs the input {name}")
        else:
            raw = None
        values[name] = _typed(raw, spec.get("type", "string"), f"{where}: input {name}")
    return values


def _typed(raw: Any, kind: str, where: str) -> Any:
    if raw is None:
        return {"boolean": False, "number": 0}.get(kind, "")
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if str(raw) in ("true", "false"):
            return str(raw) == "true"
        raise WorkflowError(f"{where}: {raw!r} is not a boolean")
    if kind == "number":
        try:
            number = float(raw)
        except ValueError as exc:
            raise WorkflowError(f"{where}: {raw!r} is not a number") from exc
        return int(number) if number.is_integer() else number
    return as_text(raw)
