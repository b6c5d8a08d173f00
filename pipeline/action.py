"""The GitHub Action for server authors (`action.yml` at the top of the repository): `scoreboard check` on the author's
server, its JSON kept for an artifact, a job summary with every rubric and every point lost, the job failed below
`min-score`.

The action's YAML stays thin: it hands its inputs over as INPUT_* environment variables (never into a script's text,
where an input could become shell) and runs `python -m pipeline.action`. Everything else is here, so a test runs it as
the runner does, with GITHUB_STEP_SUMMARY and GITHUB_OUTPUT pointed at files. The check itself runs as the `scoreboard
check --json` command an author runs locally, so the action can never score differently from it, and its exit codes
(0 met, 1 below min-score, 3-10 the server not met) are the action's.
"""

from __future__ import annotations

import html
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.exit_codes import EXIT_BELOW_MIN_SCORE, exit_codes
from pipeline.models import RubricInfo

CELL = 300  # characters of one table cell: reasons quote server text (tool names), which a summary need not carry whole
DEFAULT_RUBRIC = "scoreboard"


@dataclass(frozen=True)
class ActionInputs:
    command: str | None
    url: str | None
    source: Path | None
    min_score: float | None
    rubric: str
    args: tuple[str, ...]
    json_path: Path

    @property
    def target(self) -> str:
        return self.url or self.command or ""


class InputError(ValueError):
    """An input the action cannot run with: said in one line, as a workflow error."""


def inputs_from_env(env: Mapping[str, str]) -> ActionInputs:
    """The action's inputs as action.yml hands them over (empty strings are inputs not given)."""
    def given(name: str) -> str | None:
        value = env.get(f"INPUT_{name}", "").strip()
        return value or None

    command, url = given("COMMAND"), given("URL")
    if bool(command) == bool(url):
        raise InputError("give the action exactly one of `command` (a stdio server's command line) and `url` (an MCP endpoint)")
    min_score = given("MIN_SCORE")
    try:
        threshold = float(min_score) if min_score is not None else None
    except ValueError:
        raise InputError(f"min-score must be a number, not {min_score!r}") from None
    try:
        args = tuple(shlex.split(given("ARGS") or ""))
    except ValueError as exc:
        raise InputError(f"args cannot be split into words: {exc}") from None
    source = given("SOURCE")
    default_json = Path(env.get("RUNNER_TEMP") or tempfile.gettempdir()) / "mcp-scoreboard" / "check.json"
    return ActionInputs(command=command, url=url, source=Path(source) if source else None, min_score=threshold,
                        rubric=given("RUBRIC") or DEFAULT_RUBRIC, args=args, json_path=Path(given("JSON_PATH") or default_json))


def check_argv(inputs: ActionInputs) -> list[str]:
    """The `scoreboard check` command line: the author's extra `args` last, so they may add --env or --timeout."""
    argv = ["check", inputs.url] if inputs.url else ["check", "--stdio", inputs.command or ""]
    if inputs.source is not None:
        argv += ["--source", str(inputs.source)]
    argv += ["--json", "--rubric", inputs.rubric]
    if inputs.min_score is not None:
        argv += ["--min-score", f"{inputs.min_score:g}"]
    return argv + list(inputs.args)


def shown_argv(argv: Sequence[str]) -> list[str]:
    """The command line as the log shows it: the value of each --env KEY=VALUE hidden (a credential the server needs)."""
    shown = list(argv)
    for i, word in enumerate(shown):
        if word.startswith("--env="):
            shown[i] = f"--env={word[6:].split('=', 1)[0]}=***"
        elif i and shown[i - 1] == "--env" and "=" in word:
            shown[i] = f"{word.split('=', 1)[0]}=***"
    return shown


# -- the job summary (pure)


def _cell(value: object, limit: int = CELL) -> str:
    """One markdown table cell of text that may come from the server: no row or column it could break, no HTML."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=False).replace("|", "\\|")


def _score(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.1f}"


def _points(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def gate_line(report: Mapping[str, Any] | None, rubric: str, min_score: float | None, exit_code: int, labels: Mapping[str, str]) -> str:
    """Whether the job passes, and why, from `check`'s exit code (the one verdict) and its report."""
    card = next((c for c in (report or {}).get("scores", []) if c.get("rubric") == rubric), None)
    shown = f"the {labels.get(rubric, rubric)} score {_score(card.get('composite') if card else None)}"
    if exit_code == 0:
        return f"**Passed**: {shown} is at least min-score {min_score:g}." if min_score is not None else f"**Checked**: {shown}."
    if exit_code == EXIT_BELOW_MIN_SCORE:
        return f"**Failed**: {shown} is below min-score {min_score:g}." if min_score is not None else f"**Failed**: {shown}."
    meaning = dict(exit_codes(gate=True)).get(exit_code, "scoreboard check failed")
    return f"**Failed** (exit {exit_code}): {_cell(meaning)}."


def _probe_line(report: Mapping[str, Any]) -> str:
    probe = report.get("probe") or {}
    line = f"Probe: {_cell(probe.get('outcome', 'not run'))}"
    if probe.get("detail"):
        line += f" ({_cell(probe['detail'], 200)})"
    if probe.get("handshake"):
        tools = probe.get("tools")
        line += (f"; {_cell(probe.get('era'))} protocol {_cell(probe.get('protocol_version'))} via {_cell(probe.get('handshake'))} over "
                 f"{_cell(probe.get('transport'))}, {'tools not measured' if tools is None else f'{len(tools)} tools'}")
    source = "yes" if report.get("source_analysed") else "no (give the action `source:` to score what needs the source)"
    return f"{line}. Source analysed: {source}."


def summary_markdown(report: Mapping[str, Any] | None, *, target: str, rubric: str, min_score: float | None, exit_code: int,
                     rubrics: Sequence[RubricInfo], stderr_tail: str = "") -> str:
    """The job summary of one check: the verdict; a table of every rubric (the headline first, as `check` lists them);
    the caps standing; every point lost (rule, points lost of its maximum, reason, how to gain it); and the rules this
    check could not measure, which count as neither gained nor lost."""
    labels = {r.name: r.label for r in rubrics}
    lines = [f"## MCP Scoreboard check: <code>{_cell(target, 200)}</code>", "", gate_line(report, rubric, min_score, exit_code, labels), ""]
    if not report:
        lines += ["`scoreboard check` wrote no report."]
        if stderr_tail:
            lines += ["", "```text", stderr_tail.replace("```", "'''"), "```"]
        return "\n".join(lines) + "\n"
    lines += [_probe_line(report), ""]
    cards = [c for c in report.get("scores", []) if isinstance(c, dict)]
    lines += ["| rubric | score | grade | visibility | dimensions scored |", "| --- | ---: | :---: | --- | :---: |"]
    for card in cards:
        name = card.get("rubric", "")
        label = _cell(labels.get(name, name))
        if name == rubric:
            label = f"**{label}**"
        if card.get("visibility") == "not applicable":
            lines.append(f"| {label} | not applicable | – | not applicable | – |")
            continue
        score = _score(card.get("composite"))
        uncapped = card.get("uncapped")
        if uncapped is not None and card.get("composite") is not None and uncapped > card["composite"]:
            score += f" (capped; {uncapped:.1f} without caps)"
        lines.append(f"| {label} | {score} | {_cell(card.get('grade') or '–')} | {_cell(card.get('visibility', ''))} | "
                     f"{_cell(card.get('dimension_indicator', ''))} |")
    caps = [(card, flag) for card in cards if card.get("visibility") != "not applicable"
            for flag in card.get("flags", []) if flag.get("cap") is not None]
    if caps:
        lines += ["", "### Caps", "", "A standing flag caps its rubric's score, whatever the rules give: fix these first.", ""]
        lines += [f"- {_cell(labels.get(card['rubric'], card['rubric']))}: **{_cell(flag.get('label', ''))}** caps the score at "
                  f"{_points(float(flag['cap']))}: {_cell(flag.get('reason', ''), 500)}" for card, flag in caps]
    lost = [(card, rule) for card in cards if card.get("visibility") != "not applicable" for rule in card.get("rules", [])
            if rule.get("measured") and rule.get("max_points", 0) > rule.get("points", 0)]
    lines += ["", "### Points lost", ""]
    if lost:
        lines += ["Each rule's points are out of its own maximum within its dimension; the rubric weighs the dimensions.", "",
                  "| rubric | rule | points lost | reason | how to gain them |", "| --- | --- | ---: | --- | --- |"]
        for card, rule in sorted(lost, key=lambda cr: (cards.index(cr[0]), cr[1]["points"] - cr[1]["max_points"])):
            gap = float(rule["max_points"]) - float(rule["points"])
            lines.append(f"| {_cell(labels.get(card['rubric'], card['rubric']))} | `{_cell(rule.get('rule', ''))}` | "
                         f"{_points(gap)} of {_points(float(rule['max_points']))} | {_cell(rule.get('reason', ''))} | "
                         f"{_cell(rule.get('how_to_gain') or '–')} |")
    else:
        lines.append("None: every rule this check measured gave all its points.")
    how = {(card.get("rubric"), rule.get("rule")): rule.get("how_to_gain") for card in cards for rule in card.get("rules", [])}
    unmeasured = report.get("not_measured") or []
    if unmeasured:
        lines += ["", "### Not measured by this check", "",
                  "Left out of the scores above, counted as neither gained nor lost; the site, which holds more evidence (the "
                  "published source, probes over days), may score them."
                  + ("" if report.get("source_analysed") else " No `source` was given, so nothing that needs the source was "
                     "measured: give the action `source:` (the server's source directory) to include it."), "",
                  "| rubric | rule | why | how to include it |", "| --- | --- | --- | --- |"]
        lines += [f"| {_cell(labels.get(item.get('rubric'), item.get('rubric', '')))} | `{_cell(item.get('rule', ''))}` | "
                  f"{_cell(item.get('reason', ''))} | {_cell(how.get((item.get('rubric'), item.get('rule'))) or '–')} |" for item in unmeasured]
    return "\n".join(lines) + "\n"


# -- the runner's files


def write_outputs(path: str | None, values: Mapping[str, str]) -> None:
    """Step outputs, appended to GITHUB_OUTPUT (one `name=value` line each; none of these values holds a newline)."""
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        for name, value in values.items():
            fh.write(f"{name}={' '.join(value.split())}\n")


def append_summary(path: str | None, markdown: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown)


def _run_check(argv: list[str]) -> tuple[int, str, str]:
    """Run `scoreboard check`: its JSON (stdout) kept in a file, so no pipe fills while its progress and notes (stderr)
    reach the log as they are written; the last of them kept for a summary when no report came."""
    tail: list[str] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        with subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace") as child:
            assert child.stderr is not None
            for line in child.stderr:
                sys.stderr.write(line)
                sys.stderr.flush()
                tail = [*tail[-39:], line]
        out.seek(0)
        return child.returncode, out.read(), "".join(tail)


def run(inputs: ActionInputs, env: Mapping[str, str], rubrics: Sequence[RubricInfo]) -> int:
    """Run the check, keep its JSON, write the summary and the outputs; the exit code is `check`'s."""
    # -P: the workspace (the current directory) is not put on the path, so an author's own `pipeline` package is not ours.
    argv = [sys.executable, "-P", "-m", "pipeline.cli", *check_argv(inputs)]
    print(f"scoreboard {shlex.join(shown_argv(argv[4:]))}", flush=True)
    returncode, stdout, stderr_tail = _run_check(argv)
    try:
        report = json.loads(stdout) if stdout.strip() else None
    except json.JSONDecodeError:
        report = None
    outputs = {"exit-code": str(returncode), "passed": "true" if returncode == 0 else "false"}
    if report is not None:
        inputs.json_path.parent.mkdir(parents=True, exist_ok=True)
        inputs.json_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        card = next((c for c in report.get("scores", []) if c.get("rubric") == inputs.rubric), {})
        outputs.update({"json": str(inputs.json_path), "score": "" if card.get("composite") is None else f"{card['composite']:.1f}",
                        "grade": card.get("grade") or ""})
    write_outputs(env.get("GITHUB_OUTPUT"), outputs)
    markdown = summary_markdown(report, target=inputs.target, rubric=inputs.rubric, min_score=inputs.min_score, exit_code=returncode,
                                rubrics=rubrics, stderr_tail=stderr_tail)
    append_summary(env.get("GITHUB_STEP_SUMMARY"), markdown)
    verdict = gate_line(report, inputs.rubric, inputs.min_score, returncode, {r.name: r.label for r in rubrics}).replace("**", "")
    # A workflow command: the verdict shows as the run's annotation, not only in the log (written here, with the score a number).
    print(f"::{'notice' if returncode == 0 else 'error'} title=MCP Scoreboard::{verdict}", flush=True)
    return returncode


def main(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        inputs = inputs_from_env(env)
    except InputError as exc:
        print(f"::error title=MCP Scoreboard::{exc}", flush=True)
        return 2
    from pipeline.score.registry import infos

    return run(inputs, env, infos())


if __name__ == "__main__":
    sys.exit(main())
