"""Every long stage says how far it has got as it goes: each progress line gives the count done of the total, the rate
and the time left, and the stage ends with one summary line. Run through the CLI, as an operator sees it, over the
embedded catalog's servers: discover, score, judge, build, and the snapshot's pack and restore (MiB of the database, so
their rate is MiB a second); the install's lines are held in tests/test_install.py, the probe's and the merge's by their own tests."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support import CATALOG_SIZE, REPO

LINE = re.compile(r"^\[(?P<stage>[a-z-]+)\] +(?P<done>\d+)/(?P<total>\d+) +(?P<rate>\d+\.\d)/s ~ *(?P<left>\d+)s left  "
                  r"(?P<item>.+?): (?P<status>.+)$")
SUMMARY = re.compile(r"^(?P<stage>[a-z-]+) done: .+; \d+\.\ds$")


def scoreboard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_each_long_stage_reports_count_rate_and_time_left_and_ends_with_a_summary_line(tmp_path):
    db = str(tmp_path / "scoreboard.db")
    stages = [("discover", ("discover",), 2),  # the embedded catalog, then the merge into one catalog
              ("score", ("score",), CATALOG_SIZE), ("judge", ("judge",), CATALOG_SIZE),
              ("build", ("build", "--site", str(tmp_path / "site")), None),  # batches of pages: the build says how many
              ("publish", ("snapshot", "pack", "--out", str(tmp_path / "packed")), 1),  # a small database: one MiB
              ("restore", ("snapshot", "restore", "--from", str(tmp_path / "store")), 1)]
    for stage, args, total in stages:
        if stage == "restore":  # the packed snapshot published to a directory store, then restored into another database
            published = scoreboard("--db", db, "snapshot", "publish", "--to", str(tmp_path / "store"), "--packed", str(tmp_path / "packed"))
            assert published.returncode == 0, published.stderr
            db = str(tmp_path / "restored.db")
        done = scoreboard("--db", db, *args)
        assert done.returncode == 0, done.stderr
        lines = [m for m in map(LINE.match, done.stderr.splitlines()) if m and m["stage"] == stage]
        assert lines, (stage, done.stderr)
        if total is None:
            total = int(re.search(rf"\[{stage}\] .*; (\d+) batches", done.stderr)[1])
        assert {int(m["total"]) for m in lines} == {total}, stage
        assert int(lines[0]["done"]) == 1 and int(lines[-1]["done"]) == total and int(lines[-1]["left"]) == 0  # the first and the last
        assert all(float(m["rate"]) > 0 for m in lines)
        summaries = [m for m in map(SUMMARY.match, done.stdout.splitlines()) if m]
        assert [m["stage"] for m in summaries] == ["pack" if stage == "publish" else stage], done.stdout
