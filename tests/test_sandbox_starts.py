"""Real servers that fail to start, run through the probe's isolated sandbox: each failure gets its class and its log,
and a server that starts sees mock values for what it declares, never the host's.

The server (tests/servers/failing_starts.py) is installed as a PyPI package would be: a venv of its own holding the
script. Runs on every sandbox backend that works here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import anyio
import pytest

from pipeline.config import Settings
from pipeline.models import EnvVar, LaunchSpec, ProbeOutcome, Server
from pipeline.probe import probe_server
from pipeline.probe.install import Installed
from pipeline.probe.sandbox import IsolatedSandbox
from pipeline.sandbox import ResourceLimits
from pipeline.sandbox.choice import available
from tests.support import NOW, TEST_SERVERS

SETTINGS = Settings(call_timeout=2.0, probe_timeout=4.0, start_timeout=20.0)
LIMITS = ResourceLimits(memory_mb=256, pids=32, cpu_seconds=10, disk_mb=16)
BACKENDS = [pytest.param(found, id=name, marks=pytest.mark.skipif(isinstance(found, str), reason=f"{name}: {found}"))
            for name, found in available().items()]
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Installed:
    prefix = tmp_path_factory.mktemp("failing-starts")
    prefix.chmod(0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix / "venv")], check=True)
    shutil.copy(TEST_SERVERS / "failing_starts.py", prefix / "failing_starts.py")
    return Installed(ok=True, executable=prefix / "venv" / "bin" / "python", version="1.0", path_dirs=(str(prefix / "venv" / "bin"),),
                     prefix=prefix)


def start(backend, package: Installed, case: str, env_vars=()):
    launch = LaunchSpec(registry="pypi", package="failing-starts", command="python", transport="stdio",
                        args=[str(package.prefix / "failing_starts.py"), case])
    server = Server(id=f"fails-{case}", name="failing starts", transport="stdio", launch=launch, env_vars=list(env_vars),
                    first_seen_at=NOW, last_seen_at=NOW)
    return anyio.run(lambda: probe_server(server, package, IsolatedSandbox(backend, SETTINGS.start_timeout, LIMITS), SETTINGS, NOW, "deep"))


@pytest.mark.parametrize("case, outcome, evidence", [
    ("needs-db", ProbeOutcome.needs_external_service, "Connection refused"),
    ("needs-api", ProbeOutcome.needs_external_service, "gaierror"),
    ("needs-key", ProbeOutcome.needs_external_service, "UNDECLARED_API_KEY"),
    ("writes-install", ProbeOutcome.blocked, "Read-only file system"),
    ("crashes", ProbeOutcome.crashed_on_start, "unexpected None in config loader"),
    ("silent", ProbeOutcome.timeout, "never answered"),
])
def test_a_failed_start_gets_its_class_and_its_log(backend, package, case, outcome, evidence):
    result = start(backend, package, case, env_vars=[EnvVar(name="DATABASE_URL", required=True)])
    assert result.kind == "sandbox" and result.sandbox == backend.describe()
    assert result.outcome == outcome, (result.outcome, result.detail, result.stderr_tail)
    assert evidence in f"{result.detail}\n{result.stderr_tail}"
    assert result.mocked_env == ["DATABASE_URL"]


def test_a_server_that_starts_sees_mock_values_and_no_host_secret(backend, package, monkeypatch):
    real = "ghp_" + "R" * 36
    monkeypatch.setenv("GITHUB_TOKEN", real)
    result = start(backend, package, "env", env_vars=[EnvVar(name="GITHUB_TOKEN", secret=True), EnvVar(name="DATABASE_URL")])
    assert result.outcome == ProbeOutcome.ok, result.detail
    seen = json.loads(result.tools[0]["description"])
    assert seen["GITHUB_TOKEN"].startswith("ghp_") and seen["GITHUB_TOKEN"] != real
    assert seen["DATABASE_URL"] == "postgres://mock:mock@127.0.0.1:5432/mock"
    assert real not in result.tools[0]["description"] and result.mocked_env == ["DATABASE_URL", "GITHUB_TOKEN"]
