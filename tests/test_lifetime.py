"""Nothing outlives the pipeline: servers (and what they start), workers and the snapshot process die with it, even
when it is killed with SIGKILL; a server's leftovers die with the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

from pipeline.lifetime import descendants, guarded
from tests.support import REPO, TEST_SERVERS, alive, leftover_processes

DRIVER = TEST_SERVERS / "killed_pipeline.py"
SPAWNER = TEST_SERVERS / "spawner.py"


def sleepers(marker: str) -> list[str]:
    return [c for c in leftover_processes(marker) if "time.sleep(600)" in c]


def kill_when_ready(process: subprocess.Popen, ready: Callable[[], bool], marker: str) -> list[str]:
    """Once `ready()`, SIGKILL `process`; return the command lines of what it had started (or what carries `marker`)
    still running five seconds later."""
    deadline = time.monotonic() + 60
    try:
        while not ready():
            assert process.poll() is None, "it stopped before what the test waits for started"
            assert time.monotonic() < deadline, "what the test waits for never started"
            time.sleep(0.05)
        started = descendants(process.pid)
    finally:
        process.kill()  # SIGKILL
        process.wait(10)
    deadline = time.monotonic() + 5
    while (left := [_cmdline(pid) or str(pid) for pid in alive(started)] + leftover_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def drive(what: str, tmp_path: Path) -> tuple[subprocess.Popen, str]:
    marker = f"lifetime-{uuid.uuid4().hex}"
    process = subprocess.Popen([sys.executable, str(DRIVER), what, marker, str(tmp_path)], cwd=REPO, stdout=subprocess.DEVNULL)
    return process, marker


def test_killing_the_probe_stage_kills_its_servers_and_all_they_started(tmp_path):
    process, marker = drive("probe", tmp_path)
    # Both servers (stdio and HTTP) have started their child, their session leader and their daemon, and are being probed.
    assert kill_when_ready(process, lambda: len(sleepers(marker)) >= 6, marker) == []
    assert leftover_processes(marker) == []


def test_killing_the_build_kills_its_render_workers_and_snapshot_process(tmp_path):
    process, marker = drive("render", tmp_path)
    workers = lambda: len(leftover_processes(marker)) >= 3  # noqa: E731 - the build and its two forked workers
    copying = lambda: any("import backup" in _cmdline(p) for p in descendants(process.pid))  # noqa: E731 - the snapshot process
    assert kill_when_ready(process, lambda: workers() and copying(), marker) == []


def test_killing_the_score_stage_kills_its_workers(tmp_path):
    process, marker = drive("score", tmp_path)
    assert kill_when_ready(process, lambda: len(leftover_processes(marker)) >= 3, marker) == []


def test_killing_scoreboard_run_leaves_no_process(tmp_path, installed, settings):
    """The real command over the embedded catalog, killed while it probes an HTTP server (one that would not notice
    its stdin close). On bubblewrap, whose servers are the pipeline's descendants (a Docker container's are the
    daemon's: the pipeline killed, they are reaped at its next start, tests/test_sandbox_docker.py)."""
    env = {**os.environ, "SCOREBOARD_CACHE": str(settings.cache_dir), "SCOREBOARD_SANDBOX": "bubblewrap"}
    process = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "--db", str(tmp_path / "x.db"), "run", "--site", str(tmp_path / "site")],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def probing() -> bool:
        started = [_cmdline(p) for p in descendants(process.pid)]
        return any(str(settings.cache_dir) in c and "streamableHttp" in c and "lifetime.py" not in c for c in started)

    assert kill_when_ready(process, probing, marker=f"no-such-marker-{uuid.uuid4().hex}") == []


def test_a_server_that_exits_takes_what_it_started_with_it():
    """The probe's server exits at once; its child, the child in a session of its own and its daemon go with it."""
    marker = f"lifetime-{uuid.uuid4().hex}"
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "probe", "--stdio", f"{sys.executable} {SPAWNER} exit {marker}", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert '"outcome": "start_failed"' in done.stdout, done.stdout + done.stderr
    deadline = time.monotonic() + 5
    while leftover_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftover_processes(marker) == []


def test_the_guardian_exits_as_its_program_did(tmp_path):
    assert subprocess.run(guarded(["/bin/sh", "-c", "exit 3"])).returncode == 3
    assert subprocess.run(guarded(["/bin/sh", "-c", "kill -TERM $$"])).returncode == -signal.SIGTERM
    missing = subprocess.run(guarded([str(tmp_path / "no-such-program")]), capture_output=True, text=True)
    assert missing.returncode == 127 and "cannot execute" in missing.stderr


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
