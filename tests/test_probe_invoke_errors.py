"""Issue 16, "A correct error is not a failure": arguments come from the schema's own values where it offers them; a
domain error to arguments we made up is handled (rejected_input), while a crash, a timeout, a protocol error, or an error
to the schema's own values, still fails; and the rules and their advice read it so (methodology deviation 65)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from pipeline import check
from pipeline.discover.local import LocalCatalogSource
from pipeline.models import Invocation
from pipeline.probe.invoke import arguments_for, given_by_schema
from pipeline.sandbox.install import install_key
from pipeline.score import score_all
from pipeline.score.facts import Facts, RunRow
from tests.support import NOW, TEST_SERVERS, probe, server

CASES = TEST_SERVERS / "invoke_cases.py"


@pytest.fixture(scope="module")
def probed(installed, settings, tmp_path_factory):
    """One real probe per server, each started as the catalog starts it: filesystem on a directory it may read (so
    read_file's made-up path "." is that directory), git on a fresh repository (so git_diff's made-up ref does not exist)."""
    executables = {e.id: str(installed[install_key(e.launch)].executable) for e in LocalCatalogSource().read().entries if e.launch}
    root = tmp_path_factory.mktemp("fsroot")
    (root / "notes.txt").write_text("hello\n")
    repository = tmp_path_factory.mktemp("repository")
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    started = {"server-filesystem": ([executables["server-filesystem"], str(root)], root),
               "mcp-server-git": ([executables["mcp-server-git"], "--repository", str(repository)], repository),
               "invoke-cases": ([sys.executable, str(CASES)], Path.cwd())}
    seen = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, (command, cwd) in started.items():
            patch.chdir(cwd)  # a --stdio server runs in the current directory, as the sandbox runs it in its work directory
            result = anyio.run(check._probe, check.target_server(None, command, NOW), command, {}, settings, NOW)
            assert result.outcome.value == "ok", (name, result.detail)
            seen[name] = {i.tool: i for i in result.invocations}
    return seen


@pytest.mark.parametrize("case, name, tool, outcome, arguments", [
    ("a correct error: read_file on a directory (a path we made up)", "server-filesystem", "read_file", "rejected_input", "made_up"),
    ("a correct error: git_diff against a ref that does not exist", "mcp-server-git", "git_diff", "rejected_input", "made_up"),
    ("a made-up path that works is still ok", "server-filesystem", "list_directory", "ok", "made_up"),
    ("the schema's example is what is sent, and it works", "invoke-cases", "get_forecast", "ok", "schema"),
    ("defaults and an enum: nothing made up", "invoke-cases", "get_listing", "ok", "schema"),
    ("an unknown id we made up, refused: handled", "invoke-cases", "get_record", "rejected_input", "made_up"),
    ("an error to the schema's own example still fails", "invoke-cases", "get_product", "is_error", "schema"),
    ("a crash on made-up input still fails", "invoke-cases", "get_image_size", "crash", "made_up"),
])
def test_item_a_correct_error_is_not_a_failure(probed, case, name, tool, outcome, arguments):
    call = probed[name][tool]
    assert (call.outcome, call.arguments) == (outcome, arguments), (case, call)
    assert (call.functional is not None) == (outcome == "ok")


@pytest.mark.parametrize("case, schema, expected, given", [
    ("an example wins over a made-up value", {"properties": {"city": {"type": "string", "examples": ["Paris"]}}, "required": ["city"]},
     {"city": "Paris"}, True),
    ("an example wins over a name hint", {"properties": {"path": {"type": "string", "examples": ["docs/a.md"]}}, "required": ["path"]},
     {"path": "docs/a.md"}, True),
    ("an example that breaks the schema is not taken",
     {"properties": {"n": {"type": "integer", "minimum": 5, "examples": [1, 7]}}, "required": ["n"]}, {"n": 7}, True),
    ("an example naming a mutation is not taken",
     {"properties": {"mode": {"type": "string", "examples": ["delete_all", "preview"]}}, "required": ["mode"]}, {"mode": "preview"}, True),
    ("a default", {"properties": {"page": {"type": "integer", "default": 3}}, "required": ["page"]}, {"page": 3}, True),
    ("a const", {"properties": {"kind": {"const": "summary"}}, "required": ["kind"]}, {"kind": "summary"}, True),
    ("no arguments needed: nothing made up", {"type": "object", "properties": {"q": {"type": "string"}}}, {}, True),
    ("a name hint is ours", {"properties": {"path": {"type": "string"}}, "required": ["path"]}, {"path": "."}, False),
    ("one made-up value makes the call ours", {"properties": {"a": {"enum": ["x"]}, "b": {"type": "string"}}, "required": ["a", "b"]},
     {"a": "x", "b": "test"}, False),
])
def test_item_arguments_come_from_the_schema_where_it_offers_them(case, schema, expected, given):
    arguments = arguments_for({"type": "object", **schema})
    assert arguments == expected, case
    assert given_by_schema({"type": "object", **schema}, arguments) is given, case


def _calls(*spec: tuple[str, str, str | None]) -> tuple:
    return spec


@pytest.mark.parametrize("case, calls, points, gain, not_in_gain", [
    ("filesystem: read_file rightly refused a directory", _calls(("read_file", "rejected_input", "made_up"), ("list_directory", "ok", "made_up")),
     20, None, None),
    ("git: git_diff rightly refused a ref that does not exist", _calls(("git_diff", "rejected_input", "made_up"), ("git_status", "ok", "made_up")),
     20, None, None),
    ("an error to the schema's own example fails", _calls(("get_product", "is_error", "schema"), ("get_forecast", "ok", "schema")),
     10, "offer values a call can use: get_product", "without error"),
    ("a crash on made-up input fails", _calls(("get_image_size", "crash", "made_up"), ("get_forecast", "ok", "schema")),
     10, "an example for each parameter lets a caller build a valid call: get_image_size", "without error"),
    ("a protocol error on made-up input fails", _calls(("get_x", "jsonrpc_error", "made_up"), ("get_y", "ok", "schema")),
     10, "not a crash, a timeout or a protocol error", "without error"),
    ("an error recorded before arguments were traced still fails, advised with examples", _calls(("get_x", "is_error", None), ("get_y", "ok", None)),
     10, "examples in their input schemas would let a caller build a valid call: get_x", "without error"),
])
def test_item_the_invocation_rules_count_a_correct_error_as_handled(case, calls, points, gain, not_in_gain):
    calls = [Invocation(tool=tool, outcome=outcome, arguments=arguments, functional=True if outcome == "ok" else None)
             for tool, outcome, arguments in calls]
    seen = probe()
    seen.invocations = calls
    facts = Facts(server=server(), now=NOW, probe=seen, probe_ref="probe_runs:1",
                  runs=[RunRow("deep", NOW, "ok", 50.0, len(calls), calls)])
    cards = {c.rubric: c for c in score_all(facts)}
    rule = next(r for r in cards["scoreboard"].rules if r.rule == "invocation_smoke_test")
    assert rule.points == points, (case, rule.reason)
    assert (rule.how_to_gain is None) == (gain is None), (case, rule.how_to_gain)
    if gain:
        assert gain in rule.how_to_gain and not_in_gain not in rule.how_to_gain
    if any(c.outcome == "rejected_input" for c in calls):
        assert "examples in their input schemas would let a caller build a valid call" in rule.reason
    outside = cards["outside-in"]
    tool_success = next(r for r in outside.rules if r.rule == "tool_success")
    assert f"invoke {100 * points // 20}%" in tool_success.reason, (case, tool_success.reason)
    assert outside.extra["status"] != "tool calls fail"
