"""The CLI: every stage has help and takes --db; user errors are one clear line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import CATALOG_SIZE, REPO

COMMANDS = ["discover", "analyze", "probe", "monitor", "judge", "rescore", "score", "build", "merge", "serve", "run", "install", "status"]


def scoreboard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_takes_db(command):
    done = scoreboard(command, "--help")
    assert done.returncode == 0 and "--db" in done.stdout and f"scoreboard {command}" in done.stdout


def test_unknown_server_is_a_clear_error(tmp_path):
    done = scoreboard("probe", "--db", str(tmp_path / "x.db"), "--server", "no-such-server")
    assert done.returncode == 2 and "no active server with id: no-such-server" in done.stderr
    assert "Traceback" not in done.stderr


def test_db_before_or_after_the_command(tmp_path):
    for args in (["--db", str(tmp_path / "a.db"), "discover"], ["discover", "--db", str(tmp_path / "b.db")]):
        done = scoreboard(*args)
        assert done.returncode == 0 and f"discover done: new {CATALOG_SIZE}" in done.stdout
    assert (tmp_path / "a.db").exists() and (tmp_path / "b.db").exists()


def test_the_database_file_alone_holds_every_commit_when_a_command_ends(tmp_path):
    """Jobs copy and upload `scoreboard.db` alone: a command leaves nothing of its own in the write-ahead log (the build
    keeps a reader open, and left its `runs` row only in the log)."""
    import shutil
    import sqlite3

    db = tmp_path / "s.db"
    assert scoreboard("--db", str(db), "discover").returncode == 0
    done = scoreboard("--db", str(db), "build", "--site", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    shutil.copy(db, tmp_path / "alone.db")
    copied = sqlite3.connect(tmp_path / "alone.db")
    assert copied.execute("select stage, status from runs order by id").fetchall() == [("discover", "ok"), ("build", "ok")]
