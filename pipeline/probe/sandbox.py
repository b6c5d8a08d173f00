"""Start local servers for probing: a child process with a scrubbed environment in a throw-away dir.

`LocalProcessSandbox` is the default Sandbox. It scrubs the environment (no host secrets reach
the server), gives each start a fresh working and home directory, caps the size of each file the
server writes (its stderr log included, so no endless log can fill the disk; it is a cap per file,
not a disk quota), and runs it under a guardian (pipeline.lifetime) that kills whatever the server
started when it stops, or when the pipeline dies. It does not cut the network or cap memory: that
is the Docker/namespace sandbox's job (a later stage); the interface is the same.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Protocol, TextIO

import anyio

from pipeline.lifetime import end, guarded
from pipeline.models import LaunchSpec, Transport
from pipeline.sandbox.install import Installed

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
MAX_FILE_BYTES = 64 * 1024 * 1024  # any one file a server writes; past it the kernel stops the server (SIGXFSZ; a
# Python server, which ignores that signal, gets "File too large" errors instead)


class StartFailed(Exception):
    """The server could not be started; the message says why (with its stderr tail)."""


@dataclass
class Running:
    """A started server, ready to be connected to."""

    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: Path | None = None
    url: str | None = None
    errlog: TextIO | None = None
    stderr_path: Path | None = None
    max_file_bytes: int | None = None  # the cap on each file the server (and all it starts) writes

    def stderr_tail(self, cap: int) -> str | None:
        if self.stderr_path is None or not self.stderr_path.exists():
            return None
        size = self.stderr_path.stat().st_size
        with self.stderr_path.open("rb") as fh:
            fh.seek(max(0, size - cap))
            text = fh.read().decode("utf-8", "replace").strip()
        return text or None


class Sandbox(Protocol):
    def start(self, spec: LaunchSpec, installed: Installed) -> AbstractAsyncContextManager[Running]: ...


class LocalProcessSandbox:
    def __init__(self, start_timeout: float = 30.0) -> None:
        self.start_timeout = start_timeout

    @asynccontextmanager
    async def start(self, spec: LaunchSpec, installed: Installed) -> AsyncIterator[Running]:
        if not installed.ok or installed.executable is None:
            raise StartFailed(installed.error or "not installed")
        # The server sees only `work/`; its stderr is kept beside it, out of its reach.
        scratch = Path(tempfile.mkdtemp(prefix="scoreboard-run-"))
        workdir = scratch / "work"
        workdir.mkdir()
        process: subprocess.Popen[bytes] | None = None
        errlog = (scratch / "stderr.log").open("w", encoding="utf-8")
        try:
            if spec.workdir == "git-repository":
                _make_git_repository(workdir)
            port = _free_port() if spec.transport != "stdio" else None
            values = {"workdir": str(workdir), "port": str(port or "")}
            args = (*installed.entry_args, *(_expand(a, values) for a in spec.args))
            env = scrubbed_environment(installed.path_dirs, workdir)
            env.update({k: _expand(v, values) for k, v in spec.env.items()})
            running = Running(
                transport=spec.transport,
                command=str(installed.executable),
                args=args,
                env=env,
                cwd=workdir,
                errlog=errlog,
                stderr_path=scratch / "stderr.log",
                max_file_bytes=MAX_FILE_BYTES,
            )
            if spec.transport != "stdio":
                assert spec.url and port
                running.url = _expand(spec.url, values)
                process = _spawn(running, errlog)
                await _wait_for_port(process, port, self.start_timeout, running)
            yield running
        finally:
            if process is not None:
                _kill_group(process)
            errlog.close()
            shutil.rmtree(scratch, ignore_errors=True)


def scrubbed_environment(path_dirs: tuple[str, ...], home: Path) -> dict[str, str]:
    """Only what a server needs to run; nothing from the host that could be a secret."""
    return {
        "PATH": os.pathsep.join([*path_dirs, *SYSTEM_PATH]),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _expand(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spawn(running: Running, errlog: TextIO) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            guarded([running.command or "", *running.args], running.max_file_bytes),
            env=running.env,
            cwd=running.cwd,
            stdin=subprocess.DEVNULL,
            stdout=errlog,
            stderr=errlog,
            start_new_session=True,  # its own process group, whose SIGTERM is the server's to answer
        )
    except OSError as exc:
        raise StartFailed(f"cannot execute {running.command}: {exc}") from exc


async def _wait_for_port(process: subprocess.Popen[bytes], port: int, timeout: float, running: Running) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = running.stderr_tail(2000) or "no output"
            raise StartFailed(f"exited with code {process.returncode} before listening: {tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            await anyio.sleep(0.05)
    raise StartFailed(f"did not listen on port {port} within {timeout:.0f}s")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's group; then its guardian ends everything the server started; SIGKILL to the group last."""
    for stop in (lambda: os.killpg(process.pid, signal.SIGTERM), lambda: end(process.pid), lambda: os.killpg(process.pid, signal.SIGKILL)):
        if process.poll() is not None:
            return
        try:
            stop()
            process.wait(timeout=3)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def _make_git_repository(path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        raise StartFailed("this server needs a git repository to serve and git is not installed")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(path), "GIT_CONFIG_NOSYSTEM": "1"}
    (path / "README.md").write_text("A throw-away repository for probing a git MCP server.\n")
    for argv in (
        [git, "init", "-q"],
        [git, "add", "README.md"],
        [git, "-c", "user.name=scoreboard", "-c", "user.email=probe@invalid", "commit", "-q", "-m", "initial"],
    ):
        done = subprocess.run(argv, cwd=path, env=env, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise StartFailed(f"could not prepare a git repository: {done.stderr.strip()[:500]}")
