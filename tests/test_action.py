"""The GitHub Action for server authors: action.yml at the top of the repository, thin, running `python -m pipeline.action`,
which runs `scoreboard check` on a real server, keeps its JSON, writes the job summary and the step outputs, and fails
below min-score. Run here as the runner runs it, with GITHUB_STEP_SUMMARY and GITHUB_OUTPUT pointed at files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.action import check_argv, inputs_from_env, shown_argv, summary_markdown
from pipeline.discover.local import LocalCatalogSource
from pipeline.exit_codes import exit_codes
from pipeline.sandbox.install import install_key
from pipeline.score.registry import infos
from tests.support import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())


@pytest.fixture(scope="module")
def time_command(installed):
    spec = next(e.launch for e in LocalCatalogSource().read().entries if e.id == "mcp-server-time")
    return str(installed[install_key(spec)].executable)


def workspace(root: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A job's workspace and the environment the runner gives the action's step. The workspace holds a package named
    `pipeline` of its own, as an author's repository may: the action must not import it in place of ours."""
    folder = root / name
    (folder / "pipeline").mkdir(parents=True)
    (folder / "pipeline" / "__init__.py").write_text("raise SystemExit('the workspace package was imported')\n")
    (folder / "runner-temp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "RUNNER_TEMP": str(folder / "runner-temp"),
           "GITHUB_STEP_SUMMARY": str(folder / "summary.md"), "GITHUB_OUTPUT": str(folder / "output.txt")}
    return folder, env


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_the_action_checks_a_real_server_summarises_every_rubric_and_lost_point_and_gates(time_command, tmp_path):
    runs = {}
    for name, min_score in (("above", "10"), ("below", "99.9")):
        folder, env = workspace(tmp_path, name)
        env.update({"INPUT_COMMAND": time_command, "INPUT_MIN_SCORE": min_score, "INPUT_URL": "", "INPUT_SOURCE": "", "INPUT_ARGS": "--timeout 10"})
        # Both at once: each is a whole check (a start, a probe, four rubrics).
        runs[name] = folder, subprocess.Popen([sys.executable, "-P", "-m", "pipeline.action"], cwd=folder, env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True)
    done = {name: (folder, child, *child.communicate(timeout=120)) for name, (folder, child) in runs.items()}

    folder, above, stdout, stderr = done["above"]
    assert above.returncode == 0, stderr
    assert "::notice title=MCP Scoreboard::Passed" in stdout
    written = outputs(folder / "output.txt")
    report = json.loads(Path(written["json"]).read_text())  # the JSON written, where the output says
    assert Path(written["json"]).is_relative_to(folder / "runner-temp")
    assert report["probe"]["outcome"] == "ok" and [c["rubric"] for c in report["scores"]] == [r.name for r in infos()]
    headline = report["scores"][0]
    assert written["passed"] == "true" and written["exit-code"] == "0"
    assert written["score"] == f"{headline['composite']:.1f}" and written["grade"] == headline["grade"]
    assert set(ACTION["outputs"]) <= set(written)  # every output action.yml declares is one the script writes

    summary = (folder / "summary.md").read_text()
    assert f"**Passed**: the Scoreboard (headline) score {headline['composite']:.1f} is at least min-score 10." in summary
    table = summary.split("| rubric | score | grade | visibility | dimensions scored |\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    rows = {row.split("|")[1].strip().strip("*"): [cell.strip() for cell in row.split("|")[2:-1]] for row in table}
    assert list(rows) == [r.label for r in infos()]  # all four rubrics, the headline first
    for card in report["scores"]:
        score, grade, visibility, _ = rows[next(r.label for r in infos() if r.name == card["rubric"])]
        if card["visibility"] == "not applicable":
            assert score == "not applicable"
        else:
            assert score.startswith(f"{card['composite']:.1f}") and grade == (card["grade"] or "–") and visibility == card["visibility"]
    lost = [(c, r) for c in report["scores"] if c["visibility"] != "not applicable" for r in c["rules"]
            if r["measured"] and r["max_points"] > r["points"]]
    assert len(lost) >= 5  # the time server leaves points on the table: no title, description, icon, instructions...
    for card, rule in lost:
        gap = rule["max_points"] - rule["points"]
        row = next(line for line in summary.splitlines() if f"| `{rule['rule']}` | " in line and "points lost" not in line)
        assert f"{gap:g} of {rule['max_points']:g}" in row and rule["reason"][:40] in row
        assert (rule["how_to_gain"] or "–")[:40] in row
    assert "### Not measured by this check" in summary and "give the action `source:`" in summary
    assert all(f"`{item['rule']}`" in summary for item in report["not_measured"])
    assert "the workspace package was imported" not in stderr

    folder, below, stdout, stderr = done["below"]
    assert below.returncode == 1, stderr
    assert "below --min-score 99.9" in stderr  # check's own words reach the log
    assert "::error title=MCP Scoreboard::Failed: the Scoreboard (headline) score" in stdout
    assert outputs(folder / "output.txt")["passed"] == "false"
    assert "**Failed**: the Scoreboard (headline) score" in (folder / "summary.md").read_text()
    assert json.loads(Path(outputs(folder / "output.txt")["json"]).read_text())["scores"]


def test_a_server_not_met_fails_with_its_exit_code_and_says_why(tmp_path):
    folder, env = workspace(tmp_path, "unreached")
    env.update({"INPUT_URL": "http://127.0.0.1:9/mcp", "INPUT_ARGS": "--timeout 2", "INPUT_MIN_SCORE": "0"})
    done = subprocess.run([sys.executable, "-P", "-m", "pipeline.action"], cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4, done.stderr
    summary = (folder / "summary.md").read_text()
    assert f"**Failed** (exit 4): {dict(exit_codes(gate=True))[4]}." in summary
    assert "Probe: unreachable" in summary
    assert outputs(folder / "output.txt")["exit-code"] == "4"


@pytest.mark.parametrize("inputs,message", [({}, "exactly one of `command`"), ({"INPUT_COMMAND": "x", "INPUT_URL": "http://x"}, "exactly one"),
                                            ({"INPUT_COMMAND": "x", "INPUT_MIN_SCORE": "high"}, "min-score must be a number")])
def test_inputs_it_cannot_run_with_are_one_error_line(tmp_path, inputs, message):
    folder, env = workspace(tmp_path, "bad")
    done = subprocess.run([sys.executable, "-P", "-m", "pipeline.action"], cwd=folder, env={**env, **inputs}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout.startswith("::error title=MCP Scoreboard::") and message in done.stdout


def test_the_check_command_line_from_the_inputs():
    given = inputs_from_env({"INPUT_COMMAND": "node dist/index.js", "INPUT_SOURCE": "src", "INPUT_MIN_SCORE": "70", "INPUT_RUBRIC": "review",
                             "INPUT_ARGS": "--env 'A=b c' --timeout 20", "RUNNER_TEMP": "/runner"})
    assert check_argv(given) == ["check", "--stdio", "node dist/index.js", "--source", "src", "--json", "--rubric", "review", "--min-score", "70",
                                 "--env", "A=b c", "--timeout", "20"]
    assert given.json_path == Path("/runner/mcp-scoreboard/check.json")
    assert check_argv(inputs_from_env({"INPUT_URL": "https://x/mcp"}))[:2] == ["check", "https://x/mcp"]
    assert shown_argv(check_argv(given))[-4:] == ["--env", "A=***", "--timeout", "20"]  # a credential's value never reaches the log
    assert shown_argv(["--env=KEY=secret"]) == ["--env=KEY=***"]


def test_server_text_cannot_break_the_summary():
    hostile = "a | b\n\n## injected\n<img src=x onerror=alert(1)>"
    card = {"rubric": "scoreboard", "composite": 40.0, "uncapped": 40.0, "grade": "D", "visibility": "limited", "dimension_indicator": "2/4",
            "flags": [], "rules": [{"rule": "tool_docs", "measured": True, "points": 1, "max_points": 10, "reason": hostile, "how_to_gain": hostile}]}
    text = summary_markdown({"probe": {"outcome": "ok"}, "scores": [card], "not_measured": []}, target="x | y", rubric="scoreboard",
                            min_score=50, exit_code=1, rubrics=infos())
    row = next(line for line in text.splitlines() if "`tool_docs`" in line)
    assert len(re.split(r"(?<!\\)\|", row)) == 7  # five cells (and the empty ends): the reason's pipes are escaped
    assert "<img" not in text and "&lt;img" in row and not any(line.startswith("## injected") for line in text.splitlines())
    assert "| 9 of 10 |" in row and "**Failed**: the Scoreboard (headline) score 40.0 is below min-score 50." in text


def test_action_yml_is_thin_and_every_reference_in_it_is_declared():
    assert ACTION["runs"]["using"] == "composite"
    steps = ACTION["runs"]["steps"]
    text = (REPO / "action.yml").read_text()
    used_inputs = set(re.findall(r"\binputs\.([A-Za-z0-9_-]+)", text))
    assert used_inputs and used_inputs <= set(ACTION["inputs"]), used_inputs - set(ACTION["inputs"])
    assert set(ACTION["inputs"]) <= used_inputs  # no input declared and never used
    ids = {step.get("id") for step in steps}
    assert set(re.findall(r"steps\.([A-Za-z0-9_-]+)\.outputs", text)) <= ids
    for step in steps:
        if "uses" in step:
            assert re.fullmatch(r"actions/[a-z-]+@v\d+", step["uses"]), step["uses"]  # pinned by major version
        else:
            assert step["shell"] == "bash" and "${{" not in step["run"]  # inputs reach a script only through env
    check = next(step for step in steps if step.get("id") == "check")
    assert "-P -m pipeline.action" in check["run"]
    read = set(re.findall(r'given\("([A-Z_]+)"\)', (REPO / "pipeline" / "action.py").read_text()))
    assert {f"INPUT_{name}" for name in read} == {k for k in check["env"] if k.startswith("INPUT_")}
    assert all(check["env"][f"INPUT_{name}"] == f"${{{{ inputs.{name.lower().replace('_', '-')} }}}}" for name in read)
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"].startswith("always()")  # the JSON is kept when the gate fails the step before


def test_the_readme_documents_the_action_and_every_input():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## A GitHub Action for server authors", 1)[1].split("\n## ", 1)[0]
    assert "uses: " in section and "min-score:" in section
    assert all(f"`{name}`" in section for name in ACTION["inputs"]), [n for n in ACTION["inputs"] if f"`{n}`" not in section]
    assert all(f"`{name}`" in section for name in ACTION["outputs"])
