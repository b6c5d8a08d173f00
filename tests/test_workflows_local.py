"""Acceptance: the job graph of .github/workflows/ run end to end on this machine (`scoreboard workflows run`) on the embedded
default catalog, shards and merges included; and a restore that fails, a shard that fails and a stage that leaves a broken
database each stop the publish, leaving the published site and the snapshot store byte for byte as they were.

The faults are put into a copy of the workflows (a line added to one step), so everything else runs as written.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
def scoreboard(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout)


def digest(directory: Path) -> dict[str, str]:
    """Every file under a directory by its path and content hash (an absent directory is empty)."""
    if not directory.exists():
        return {}
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def tail(result: subprocess.CompletedProcess, lines: int = 60) -> str:
    return "\n".join((result.stdout + result.stderr).splitlines()[-lines:])


# A day of the job graph but for the deep probes of remote servers, which are shaped as the sandbox probes and select no
# server of the embedded default (its HTTP servers are packages we start, so they are probed in the sandbox).
# Jobs per workflow: shards, then merge and publish (discovery: merge and publish).
JOBS = {"discovery.yml": 2, "analysis.yml": 6, "sandbox-probes.yml": 6, "fast-probes.yml": 6, "judges.yml": 4}


@pytest.fixture(scope="module")
def day(tmp_path_factory, installed):
    """A first day: discovery (the explicit first run), analysis, sandbox probes, fast probes, judges."""
    work = tmp_path_factory.mktemp("fleet")
    result = scoreboard("workflows", "run", "--workdir", str(work), "--first-run", *JOBS)
    assert result.returncode == 0, tail(result)
    return work, result.stdout


def restored(work: Path, target: Path) -> Path:
    """The newest published snapshot, as the next run restores it."""
    result = scoreboard("--db", str(target), "snapshot", "restore", "--from", str(work / "snapshots"))
    assert result.returncode == 0, tail(result)
    return target


def test_a_day_of_the_job_graph_runs_end_to_end_with_shards_and_merges(day, tmp_path):
    work, output = day
    for workflow, jobs in JOBS.items():
        assert f"{workflow} run " in output and f": success; jobs succeeded {jobs}, failed 0, skipped 0" in output, workflow
    assert output.count("[shard (4) / shard] started") == 3 and output.count("[shard (2) / shard] started") == 4
    site = work / "published-site"
    assert digest(work / "snapshots"), "every run published a snapshot to the local store"
    with sqlite3.connect(restored(work, tmp_path / "scoreboard.db")) as db:
        active = db.execute("select count(*) from servers where is_active = 1").fetchone()[0]
        scored = db.execute("select count(distinct server_id) from scores").fetchone()[0]
        probed = db.execute("select count(distinct server_id) from probe_runs").fetchone()[0]
        analysed = db.execute("select count(distinct server_id) from analyses").fetchone()[0]
        stages = {s for (s,) in db.execute("select distinct stage from runs where status = 'ok'")}
        ids = [i for (i,) in db.execute("select id from servers")]
    assert active == scored == probed == analysed == 9
    # Every stage's own run, the build's too (the last commit before the database is handed to the publish job).
    assert {"discover", "analyze", "probe", "monitor", "judge", "merge", "score", "build", "restore"} <= stages
    assert all((site / "servers" / f"{server_id}.html").exists() for server_id in ids)
    assert (site / "index.html").exists()


def with_fault(tmp_path: Path, workflow: str, after: str, line: str) -> Path:
    """A checkout whose workflow has one line added after the line holding `after`: the repository's files linked, .github copied."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for entry in REPO.iterdir():
        if entry.name != ".github":
            (checkout / entry.name).symlink_to(entry)
    shutil.copytree(REPO / ".github", checkout / ".github", symlinks=True)
    path = checkout / ".github" / "workflows" / workflow
    lines = path.read_text().splitlines()
    found = [n for n, text in enumerate(lines) if after in text]
    assert len(found) == 1, f"{after!r} is not on one line of {workflow}"
    lines.insert(found[0] + 1, line)
    path.write_text("\n".join(lines) + "\n")
    return checkout


def run_stopped(work: Path, *args: str) -> str:
    """Run a workflow against the day's store and site; it must fail and change neither."""
    before = digest(work / "snapshots"), digest(work / "published-site")
    result = scoreboard("workflows", "run", "--workdir", str(work), *args)
    assert result.returncode != 0, tail(result)
    assert "the published site and snapshot are the last good ones" in result.stderr
    assert (digest(work / "snapshots"), digest(work / "published-site")) == before
    assert before[0] and before[1]
    return result.stdout


def test_a_restore_that_fails_stops_the_publish(day, tmp_path):
    work, _ = day
    # A store with no snapshot, and no first_run: the restore fails loudly instead of starting from an empty database.
    output = run_stopped(work, "--store", str(tmp_path / "empty-store"), "fast-probes.yml")
    assert "(Restore the last published snapshot): exit code" in output and "[publish] skipped" in output
    assert digest(tmp_path / "empty-store") == {}


def test_a_damaged_snapshot_store_stops_the_publish(day, tmp_path):
    work, _ = day
    damaged = tmp_path / "damaged-store"
    shutil.copytree(work / "snapshots", damaged)
    for path in (p for p in damaged.rglob("*") if p.is_file()):
        path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])
    before = digest(damaged)
    output = run_stopped(work, "--store", str(damaged), "fast-probes.yml")
    assert "Restore the last published snapshot): exit code" in output
    assert digest(damaged) == before


def test_a_shard_that_fails_stops_the_publish(day, tmp_path):
    work, _ = day
    checkout = with_fault(tmp_path, "shard.yml", "# shellcheck disable=SC2086", '          if [ "$SHARD" = 2 ]; then exit 3; fi')
    output = run_stopped(work, "--checkout", str(checkout), "fast-probes.yml")
    assert "[shard (2) / shard] failed" in output
    assert "[publish] skipped" in output


def test_a_truncated_shard_database_stops_the_publish(day, tmp_path):
    work, _ = day
    fault = '          if [ "$SHARD" = 2 ]; then truncate -s 8192 "shard-$SHARD.db"; fi'
    checkout = with_fault(tmp_path, "shard.yml", '.venv/bin/scoreboard "$STAGE" --shard', fault)
    # The shard itself succeeds (it did its work and uploaded what it has); the merge or the soundness check refuses it.
    output = run_stopped(work, "--checkout", str(checkout), "fast-probes.yml")
    assert "publish / merge] failed" in output and "publish / publish] skipped" in output


def test_a_database_whose_scores_were_emptied_is_not_published(day, tmp_path):
    work, _ = day
    fault = ("""      - run: .venv/bin/python -c 'import sqlite3; db = sqlite3.connect("data/scoreboard.db"); """
             """db.execute("delete from score_cards"); db.commit()'""")
    checkout = with_fault(tmp_path, "publish.yml", ".venv/bin/scoreboard build", fault)
    output = run_stopped(work, "--checkout", str(checkout), "fast-probes.yml")
    assert "(Check the database before it is published, and pack it): exit code" in output
