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
