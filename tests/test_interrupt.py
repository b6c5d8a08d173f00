"""Interrupting a run (Ctrl-C or kill) loses nothing committed; the next run resumes cleanly."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from pipeline.store import open_db
from tests.support import REPO, TEST_SERVERS, leftover_processes

SCRIPT = TEST_SERVERS / "interruptible_probe.py"


def _interruptible() -> None:
    # A shell starts a background job (`make test &`, `nohup … &`) with SIGINT ignored, its children inherit that, and Python
    # installs no Ctrl-C handler where SIGINT is ignored at its start: the child is given SIGINT's default, as a terminal's is.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(db_path: Path, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPT), str(db_path), mode], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)


def wait_for_committed_probe(db_path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        if db_path.exists():
            try:
                with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
                    if conn.execute("select count(*) from probe_runs where server_id = 'mcp-server-time'").fetchone()[0]:
                        return
            except sqlite3.OperationalError:
                pass  # tables not created yet
        time.sleep(0.05)
    raise AssertionError("no probe was committed in time")


def stats(db_path: Path) -> dict:
    db = open_db(db_path)
    return {
        "runs": {r["status"]: r["n"] for r in db.query("select status, count(*) n from runs group by status")},
        "probes": db.execute("select count(*) from probe_runs").fetchone()[0],
        "time_probes": db.execute("select count(*) from probe_runs where server_id = 'mcp-server-time' and outcome = 'ok'").fetchone()[0],
        "integrity": db.execute("pragma integrity_check").fetchone()[0],
    }


def test_ctrl_c_keeps_committed_results_and_resumes(tmp_path, installed):
    db_path = tmp_path / "scoreboard.db"
    process = start(db_path, "slow")
    wait_for_committed_probe(db_path, process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, out + err
    assert "probe interrupted" in out
    after = stats(db_path)
    assert after["integrity"] == "ok"
    assert after["runs"] == {"interrupted": 1}
    assert after["time_probes"] == 1  # the finished probe survived the interruption
    assert leftover_processes(str(TEST_SERVERS / "raw_stdio.py")) == []
    again = start(db_path, "quick")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    resumed = stats(db_path)
    assert resumed["runs"] == {"interrupted": 1, "ok": 1} and resumed["time_probes"] == 2


def test_kill_leaves_a_usable_database(tmp_path, installed):
    db_path = tmp_path / "scoreboard.db"
    process = start(db_path, "slow")
    wait_for_committed_probe(db_path, process)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    after = stats(db_path)
    assert after["integrity"] == "ok" and after["time_probes"] == 1
    assert after["runs"] == {"running": 1}
    again = start(db_path, "quick")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    resumed = stats(db_path)
    assert resumed["runs"] == {"abandoned": 1, "ok": 1}, "the killed run is marked abandoned by the next one"
    assert resumed["time_probes"] == 2
