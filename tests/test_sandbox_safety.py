"""Hostile servers against every sandbox backend that can run here: each escape finds nothing or is stopped, and
is recorded; the host and the next server are unaffected.

The hostile server (tests/servers/escape_artist.py) is installed as a registry package would be: a venv of its own
holding the script, started through the probe's IsolatedSandbox and probed for real. Limits are small so each case
takes seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import anyio
import pytest

from pipeline.config import Settings
from pipeline.models import LaunchSpec, ProbeOutcome, ProbeResult, Server
from pipeline.probe import probe_server
from pipeline.probe.sandbox import IsolatedSandbox
from pipeline.sandbox import ResourceLimits
from pipeline.sandbox.choice import available
from pipeline.sandbox.install import Installed
from tests.support import NOW, TEST_SERVERS, pids_with

LIMITS = ResourceLimits(memory_mb=160, pids=32, cpu_seconds=2, disk_mb=16)
SETTINGS = Settings(call_timeout=5.0, probe_timeout=15.0, start_timeout=20.0)
BACKENDS = [pytest.param(found, id=name, marks=pytest.mark.skipif(isinstance(found, str), reason=f"{name}: {found}"))
            for name, found in available().items()]

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


@pytest.fixture(scope="module")
def artist(tmp_path_factory) -> Installed:
    """The escape artist installed like a PyPI package: its own venv (the base interpreter's), the script inside."""
    prefix = tmp_path_factory.mktemp("escape-artist")
    prefix.chmod(0o755)  # as an install's directory is; pytest makes its own private
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix / "venv")], check=True)
    shutil.copy(TEST_SERVERS / "escape_artist.py", prefix / "escape_artist.py")
    return Installed(ok=True, executable=prefix / "venv" / "bin" / "python", version="1.0", path_dirs=(str(prefix / "venv" / "bin"),),
                     prefix=prefix)


def attempt(backend, artist: Installed, case: str, *args: str) -> ProbeResult:
    launch = LaunchSpec(registry="pypi", package="escape-artist", command="python", transport="stdio",
                        args=[str(artist.prefix / "escape_artist.py"), case, *args])
    server = Server(id=f"escape-{case}", name="escape artist", transport="stdio", launch=launch, first_seen_at=NOW, last_seen_at=NOW)
    sandbox = IsolatedSandbox(backend, SETTINGS.start_timeout, LIMITS)
    return anyio.run(lambda: probe_server(server, artist, sandbox, SETTINGS, NOW, "deep"))


def findings(result: ProbeResult) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool in result.tools or []:
        if tool["name"].startswith("found_"):
            found.update(json.loads(tool["description"]))
    return found


def assert_recorded(result: ProbeResult, backend) -> None:
    assert result.kind == "sandbox"
    assert result.sandbox == backend.describe()


def assert_next_server_runs(backend, artist: Installed) -> None:
    result = attempt(backend, artist, "benign")
    assert result.outcome == ProbeOutcome.ok, result.detail
    assert [t["name"] for t in result.tools or []] == ["hello"]


def test_canaries_outside_cannot_be_read(backend, artist, tmp_path):
    secret = f"canary-{uuid.uuid4()}"
    canaries = [tmp_path / "canary.txt", Path.home() / f".scoreboard-canary-{uuid.uuid4().hex}"]
    try:
        for canary in canaries:
            canary.write_text(secret)
            canary.chmod(0o600)
        result = attempt(backend, artist, "read", *map(str, canaries), "/etc/shadow", str(Path.home() / ".bash_history"))
    finally:
        canaries[1].unlink()
    assert result.outcome == ProbeOutcome.ok, result.detail
    assert_recorded(result, backend)
    found = findings(result)
    assert set(found) == {*map(str, canaries), "/etc/shadow", str(Path.home() / ".bash_history")}
    assert all(text.startswith("error") for text in found.values()), found
    assert secret not in result.model_dump_json()


def test_no_host_environment_is_readable_anywhere(backend, artist, monkeypatch):
    token = f"ghp_{uuid.uuid4().hex}"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("SMITHERY_API_KEY", token)
    result = attempt(backend, artist, "environ")
    assert result.outcome == ProbeOutcome.ok, result.detail
    found = findings(result)
    assert "/proc/1/environ" in found and found["/proc/1/environ"].startswith("READ: "), found  # it did read them
    assert token not in result.model_dump_json()
    environments = " ".join(text for key, text in found.items() if key.endswith("/environ"))
    assert "GITHUB_TOKEN" not in environments and os.environ["HOME"] + "\0" not in environments


def test_database_venv_and_cache_are_not_writable(backend, artist, tmp_path):
    database = tmp_path / "scoreboard.db"
    database.write_bytes(b"SQLite format 3\0")
    cache = Settings.from_env().cache_dir
    hidden = [str(database), str(tmp_path), sys.prefix, str(Path(sys.prefix) / "bin"), str(cache)]
    visible = [str(artist.prefix), str(artist.prefix / "escape_artist.py"), "/usr/lib", "/etc/passwd"]  # its own install, the system
    before = {p: sorted(os.listdir(p)) for p in hidden[1:] if os.path.isdir(p)}
    result = attempt(backend, artist, "write", *hidden, *visible)
    assert result.outcome == ProbeOutcome.ok, result.detail
    found = findings(result)
    assert set(found) == {*hidden, *visible}
    assert all(found[p].startswith("error") for p in visible), found
    # What it does not see it may create in its own throw-away /tmp; nothing of it reaches the host.
    assert database.read_bytes() == b"SQLite format 3\0"
    assert before == {p: sorted(os.listdir(p)) for p in before}
    assert not (artist.prefix / "escape_artist.py").read_bytes().endswith(b"escaped\n")


def test_no_connection_reaches_the_host(backend, artist):
    arrived: list[bytes] = []
    listener = socket.create_server(("0.0.0.0", 0))
    port = listener.getsockname()[1]

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            with connection:
                arrived.append(connection.recv(100) or b"(connected)")

    stop = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_route:
        probe_route.connect(("192.0.2.1", 9))  # no packet is sent: this finds the host's own address
        host_ip = probe_route.getsockname()[0]
    try:
        result = attempt(backend, artist, "connect", f"127.0.0.1:{port}", f"{host_ip}:{port}", "1.1.1.1:53")
        with socket.create_connection(("127.0.0.1", port)) as control:  # the listener does record what arrives
            control.sendall(b"control\n")
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert result.outcome == ProbeOutcome.ok, result.detail
    found = findings(result)
    assert len(found) == 3 and all(text.startswith("error") for text in found.values()), found
    assert arrived == [b"control\n"]


def test_a_fork_bomb_stops_at_the_pids_limit(backend, artist):
    result = attempt(backend, artist, "forkbomb")
    assert result.outcome == ProbeOutcome.resource_limit, (result.outcome, result.detail)
    assert "pids limit" in (result.detail or "")
    found = findings(result)
    assert int(found["forks"]) < LIMITS.pids and found["stopped"] != "never", found
    assert_next_server_runs(backend, artist)


def test_allocating_2_gb_is_stopped_at_the_memory_limit(backend, artist):
    result = attempt(backend, artist, "allocate", "2048")
    assert result.outcome == ProbeOutcome.resource_limit, (result.outcome, result.detail)
    assert "memory limit" in (result.detail or "")
    assert result.tools is None  # killed before it answered
    assert_next_server_runs(backend, artist)


def test_spinning_is_stopped_at_the_cpu_limit(backend, artist):
    result = attempt(backend, artist, "spin")
    assert result.outcome == ProbeOutcome.resource_limit, (result.outcome, result.detail)
    assert "cpu limit" in (result.detail or "")


def test_filling_the_disk_stops_at_its_size(backend, artist):
    places = ["/tmp", "/dev/shm", "/home/sandbox"]  # everything it may write shares the one disk limit
    result = attempt(backend, artist, "fill", *places)
    assert result.outcome == ProbeOutcome.resource_limit, (result.outcome, result.detail)
    assert "disk limit" in (result.detail or "")
    found = findings(result)
    assert set(found) == set(places) and not [text for text in found.values() if "never" in text], found
    assert sum(int(text.split()[0]) for text in found.values()) <= LIMITS.disk_mb, found
    assert_next_server_runs(backend, artist)


def test_a_double_forked_daemon_does_not_outlive_the_probe(backend, artist):
    marker = f"daemon-{uuid.uuid4().hex}"
    result = attempt(backend, artist, "daemon", marker)
    assert result.outcome == ProbeOutcome.ok, result.detail
    assert findings(result) == {"daemon": "started", "marker": marker}
    assert not pids_with(marker)
    assert_next_server_runs(backend, artist)
