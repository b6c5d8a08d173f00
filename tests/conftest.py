"""Shared fixtures: real SQLite files in tmp dirs, and the real local-catalog servers installed once."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from pipeline.config import Settings
from pipeline.discover.local import LocalCatalogSource
from pipeline.models import LaunchSpec
from pipeline.probe.install import Installed, Installer, install_key
from pipeline.store import open_db

REPO = Path(__file__).resolve().parent.parent
TEST_SERVERS = Path(__file__).resolve().parent / "servers"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
CATALOG_SIZE = len(LocalCatalogSource().read().entries)  # the embedded default catalog
# Real snapshots of the discovery sources, read in place; absent in a clone elsewhere, so tests skip.
SOURCE_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "sources"


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Settings for the run: the real cache (SCOREBOARD_CACHE or the user cache), short timeouts."""
    return Settings.from_env().model_copy(update={"call_timeout": 5.0, "probe_timeout": 30.0, "start_timeout": 20.0})


@pytest.fixture(scope="session")
def installed(settings: Settings) -> dict[str, Installed]:
    """Install the embedded catalog's real servers once per session (a no-op when cached)."""
    batch = LocalCatalogSource().read()
    results = Installer(settings.cache_dir, settings.install_timeout).install([e.launch for e in batch.entries if e.launch])
    failed = {k: v.error for k, v in results.items() if not v.ok}
    assert not failed, f"the local catalog must install for these tests: {failed}"
    return results


@pytest.fixture
def db(tmp_path: Path):
    database = open_db(tmp_path / "scoreboard.db")
    yield database
    database.close()


class StaticInstaller:
    """Installer test twin: returns prepared results, so test servers need no registry."""

    def __init__(self, results: dict[str, Installed]) -> None:
        self.results = results

    def install(self, specs):
        return {install_key(s): self.results.get(install_key(s), Installed(ok=False, error="not prepared")) for s in specs}


def raw_server_spec(fault: str) -> LaunchSpec:
    return LaunchSpec(registry="pypi", package=f"raw-{fault}", command="python", args=[str(TEST_SERVERS / "raw_stdio.py"), fault], transport="stdio")


def python_installed() -> Installed:
    return Installed(ok=True, executable=Path(sys.executable), version="test", path_dirs=(str(Path(sys.executable).parent),))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def python_server(script: str, *args: str, path: str = "/mcp"):
    """Run tests/servers/SCRIPT PORT ARGS... and yield its URL once it answers HTTP; stop it afterwards."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TEST_SERVERS / script), str(port), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with httpx.stream("GET", f"http://127.0.0.1:{port}/", timeout=0.5):
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        process.wait(10)
