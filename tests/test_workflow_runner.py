"""The local runner on small workflows of its own: job order, matrices, reusable calls, artifacts, Pages, and what it refuses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipeline.fleet.runner import Local, run_workflow
from pipeline.fleet.workflow import WorkflowError

CALLED = """
name: called
on:
  workflow_call:
    inputs:
      shard: {type: number, required: true}
      shards: {type: number, required: true}
    secrets:
      token: {required: false}
permissions: {}
jobs:
  work:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "shard ${{ inputs.shard }} of ${{ inputs.shards }} token=${TOKEN:-none} store=$STORE" > "out-${{ inputs.shard }}.txt"
        env:
          TOKEN: ${{ secrets.token }}
          STORE: ${{ vars.SCOREBOARD_STORE }}
      - uses: actions/upload-artifact@v4
        with:
          name: part-${{ inputs.shard }}
          path: out-${{ inputs.shard }}.txt
          if-no-files-found: error
"""

CALLER = """
name: caller
on:
  schedule:
    - cron: "0 * * * *"
  workflow_dispatch:
    inputs:
      flag: {type: boolean, default: false}
permissions: {}
jobs:
  parts:
    strategy:
      matrix:
        shard: [1, 2, 3]
    uses: ./.github/workflows/called.yml
    with:
      shard: ${{ matrix.shard }}
      shards: ${{ strategy.job-total }}
    secrets:
      token: ${{ secrets.SECRET }}
  join:
    needs: parts
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          pattern: part-*
          path: parts
          merge-multiple: true
      - run: |
          test "$(ls parts | wc -l)" -eq 3
          mkdir site
          cat parts/*.txt > site/index.html
          echo "flag=${{ inputs.flag }}" >> site/index.html
      - uses: actions/upload-pages-artifact@v3
        with:
          path: site
  deploy:
    needs: join
    runs-on: ubuntu-latest
    steps:
      - uses: actions/deploy-pages@v4
"""


def checkout(tmp_path: Path, **workflows: str) -> Path:
    root = tmp_path / "checkout"
    (root / ".github" / "workflows").mkdir(parents=True)
    for name, text in workflows.items():
        (root / ".github" / "workflows" / f"{name}.yml").write_text(textwrap.dedent(text))
    return root


def local(tmp_path: Path, root: Path, lines: list[str] | None = None) -> Local:
    return Local(checkout=root, workdir=tmp_path / "work", vars={"SCOREBOARD_STORE": "the-store"}, secrets={"SECRET": "s3"},
                 echo=(lines.append if lines is not None else lambda _: None))


def test_matrix_shards_pass_artifacts_to_a_join_that_deploys_the_site(tmp_path):
    root = checkout(tmp_path, called=CALLED, caller=CALLER)
    runner = local(tmp_path, root)
    run = run_workflow(runner, "caller.yml", event="workflow_dispatch", inputs={"flag": "true"})
    assert run.ok, run.jobs
    assert [j.name for j in run.jobs] == ["parts (1) / work", "parts (2) / work", "parts (3) / work", "join", "deploy"]
    page = (runner.published_site / "index.html").read_text().splitlines()
    assert page == [f"shard {i} of 3 token=s3 store=the-store" for i in (1, 2, 3)] + ["flag=true"]


def test_a_failed_shard_skips_the_rest_and_leaves_the_published_site(tmp_path):
    root = checkout(tmp_path, called=CALLED, caller=CALLER)
    runner = local(tmp_path, root)
    assert run_workflow(runner, "caller.yml").ok
    before = (runner.published_site / "index.html").read_bytes()
    failing = textwrap.dedent(CALLED).replace("      - run: echo", '      - run: |\n          [ "${{ inputs.shard }}" != 2 ]\n          echo')
    (root / ".github/workflows/called.yml").write_text(failing)
    run = run_workflow(runner, "caller.yml")
    assert not run.ok
    assert [(j.name, j.conclusion) for j in run.jobs] == [("parts (1) / work", "success"), ("parts (2) / work", "failure"),
                                                          ("parts (3)", "skipped"), ("join", "skipped"), ("deploy", "skipped")]
    assert (runner.published_site / "index.html").read_bytes() == before


def test_a_scheduled_run_sees_declared_inputs_empty_and_secrets_not_passed_empty(tmp_path):
    root = checkout(tmp_path, called=CALLED, caller=CALLER.replace("    secrets:\n      token: ${{ secrets.SECRET }}\n", ""))
    runner = local(tmp_path, root)
    assert run_workflow(runner, "caller.yml").ok
    assert (runner.published_site / "index.html").read_text().splitlines()[-1] == "flag="
    assert "token=none" in (runner.published_site / "index.html").read_text()


@pytest.mark.parametrize("expression", ["env.HOME", "fromJSON('[1]')", "needs.a.outputs.b", "inputs.undeclared", "matrix.nothing",
                                        "github.token || 'x'"])
def test_an_expression_it_cannot_evaluate_fails_loudly(tmp_path, expression):
    workflow = f"""
        on: workflow_dispatch
        jobs:
          one:
            runs-on: ubuntu-latest
            steps:
              - run: echo "${{{{ {expression} }}}}"
        """
    runner = local(tmp_path, checkout(tmp_path, odd=workflow))
    with pytest.raises(WorkflowError, match="odd.yml: job one: step 1"):
        run_workflow(runner, "odd.yml", event="workflow_dispatch")


@pytest.mark.parametrize("step, refused", [
    ("uses: actions/cache@v4", "no equivalent of actions/cache@v4"),
    ("run: echo\n                continue-on-error: true", "does not understand continue-on-error"),
    ("run: echo\n                shell: pwsh", "only bash steps"),
])
def test_a_step_it_cannot_run_faithfully_is_refused_before_anything_runs(tmp_path, step, refused):
    workflow = f"""
        on: workflow_dispatch
        jobs:
          one:
            runs-on: ubuntu-latest
            steps:
              - run: touch ran
              - {step}
        """
    runner = local(tmp_path, checkout(tmp_path, odd=workflow))
    with pytest.raises(WorkflowError, match=refused):
        run_workflow(runner, "odd.yml", event="workflow_dispatch")


def test_a_job_past_its_timeout_is_stopped_and_fails(tmp_path):
    workflow = """
        on: workflow_dispatch
        jobs:
          slow:
            runs-on: ubuntu-latest
            timeout-minutes: 0.02
            steps:
              - run: sleep 60
          after:
            needs: slow
            runs-on: ubuntu-latest
            steps:
              - run: echo never
        """
    runner = local(tmp_path, checkout(tmp_path, slow=workflow))
    run = run_workflow(runner, "slow.yml", event="workflow_dispatch")
    assert [(j.conclusion, "timeout-minutes" in j.error) for j in run.jobs] == [("failure", True), ("skipped", False)]


def test_a_missing_artifact_fails_the_job_as_on_github(tmp_path):
    workflow = """
        on: workflow_dispatch
        jobs:
          one:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/download-artifact@v4
                with:
                  name: database
        """
    run = run_workflow(local(tmp_path, checkout(tmp_path, one=workflow)), "one.yml", event="workflow_dispatch")
    assert run.jobs[0].conclusion == "failure" and "artifact not found: database" in run.jobs[0].error


def test_each_job_starts_from_a_fresh_checkout_without_the_database(tmp_path):
    workflow = """
        on: workflow_dispatch
        jobs:
          first:
            runs-on: ubuntu-latest
            steps:
              - run: mkdir -p data && echo x > data/scoreboard.db && test -f marker
          second:
            needs: first
            runs-on: ubuntu-latest
            steps:
              - run: test ! -e data/scoreboard.db && test -f marker && make --version > /dev/null && test -x .venv/bin/scoreboard
        """
    root = checkout(tmp_path, jobs=workflow)
    (root / "marker").write_text("a file of the checkout")
    (root / "data").mkdir()
    (root / "data" / "scoreboard.db").write_text("the developer's own database")
    assert run_workflow(local(tmp_path, root), "jobs.yml", event="workflow_dispatch").ok
    assert (root / "data" / "scoreboard.db").read_text() == "the developer's own database"


def test_two_expressions_in_one_value_are_each_substituted(tmp_path):
    workflow = """
        on: workflow_dispatch
        jobs:
          one:
            runs-on: ubuntu-latest
            strategy:
              matrix:
                shard: [7]
            steps:
              - run: echo x > "f-${{ matrix.shard }}-${{ strategy.job-total }}.txt"
              - uses: actions/upload-artifact@v4
                with:
                  name: ${{ matrix.shard }}-${{ strategy.job-total }}
                  path: f-${{ matrix.shard }}-${{ strategy.job-total }}.txt
                  if-no-files-found: error
        """
    runner = local(tmp_path, checkout(tmp_path, two=workflow))
    run = run_workflow(runner, "two.yml", event="workflow_dispatch")
    assert run.ok and (runner.workdir / "runs" / str(run.run_id) / "artifacts" / "7-1" / "f-7-1.txt").exists()
