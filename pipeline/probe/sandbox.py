"""Start local servers for probing.

`IsolatedSandbox` starts every server installed from a registry: in a sandbox backend (pipeline.sandbox: bubblewrap
or Docker), with no network, nothing of the host's environment or files, and bounded memory, pids, CPU time and disk.
Where no backend can run, `NoSandbox` refuses every start with the reason: a package is never run unsandboxed.

`LocalProcessSandbox` runs only a command the user names themselves (`probe --stdio`, `check --stdio`) and tests'
own servers: a child process with a scrubbed environment in a throw-away dir, each file it writes capped (its stderr
log included), under a guardian (pipeline.lifetime) that kills whatever it started when it stops, or when the
pipeline dies. It does not cut the network or cap memory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Callable, Protocol, TextIO

import anyio

from pipeline.lifetime import end, guarded
from pipeline.models import LaunchSpec, Transport
from pipeline.sandbox import Backend, Job, LimitName, Mount, NotStarted, ResourceLimits
from pipeline.sandbox.install import Installed

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
MAX_FILE_BYTES = 64 * 1024 * 1024  # any one file a server writes; past it the kernel stops the server (SIGXFSZ; a
# Python server, which ignores that signal, gets "File too large" errors instead)


INSIDE_HOME = "/home/sandbox"  # the server's home and working directory inside the sandbox (a tmpfs)
INSIDE_PORT = 8000  # an HTTP server's port on the loopback of its own network namespace


class StartFailed(Exception):
    """The server could not be started; the message says why (with its stderr tail), `limit` which sandbox limit stopped it."""

    def __init__(self, message: str, limit: LimitName | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class SandboxRefused(Exception):
    """No sandbox can run here, so no package is started; the message says why."""


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
    sandbox: str | None = None  # the backend the server runs in, as named in the evidence (None: not sandboxed)
    limit_hit: Callable[[], LimitName | None] = lambda: None  # after the run: the limit that stopped it, if one did
    blocked: Callable[[], str | None] = lambda: None  # after the run: what the sandbox refused, where observable

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


class IsolatedSandbox:
    """Start each server in a sandbox backend: its install read-only at its own path, a tmpfs home, no network."""

    def __init__(self, backend: Backend, start_timeout: float = 30.0, limits: ResourceLimits | None = None) -> None:
        self.backend = backend
        self.start_timeout = start_timeout
        self.limits = limits or ResourceLimits()

    @asynccontextmanager
    async def start(self, spec: LaunchSpec, installed: Installed) -> AsyncIterator[Running]:
        if not installed.ok or installed.executable is None:
            raise StartFailed(installed.error or "not installed")
        scratch = Path(tempfile.mkdtemp(prefix="scoreboard-sandbox-"))
        try:
            async with AsyncExitStack() as stack:
                job = self.job(spec, installed, scratch)
                try:
                    with anyio.fail_after(self.start_timeout):
                        started = await stack.enter_async_context(self.backend.start(job, scratch))
                except NotStarted as exc:
                    raise StartFailed(str(exc), exc.limit) from exc
                except TimeoutError as exc:
                    raise StartFailed(f"did not listen on its port within {self.start_timeout:.0f}s") from exc
                running = Running(transport=spec.transport, env=started.env, url=started.url, sandbox=started.backend,
                                  limit_hit=started.limit_hit, blocked=started.blocked)
                if started.argv is not None:  # stdio: the probe spawns it; its stderr kept here, out of the server's reach
                    running.command, running.args = started.argv[0], started.argv[1:]
                    running.stderr_path = scratch / "stderr.log"
                    running.errlog = stack.enter_context(running.stderr_path.open("w", encoding="utf-8"))
                    running.cwd = scratch
                else:
                    running.stderr_path = started.stderr_path
                yield running
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def job(self, spec: LaunchSpec, installed: Installed, scratch: Path) -> Job:
        assert installed.executable is not None
        values = {"workdir": INSIDE_HOME, "port": str(INSIDE_PORT)}
        files = _git_repository(scratch / "repository") if spec.workdir == "git-repository" else {}
        mounts = (Mount(installed.prefix, str(installed.prefix)),) if installed.prefix else ()
        argv = (str(installed.executable), *installed.entry_args, *(_expand(a, values) for a in spec.args))
        return Job(argv=argv, env=server_environment(spec, installed, values),
                   mounts=mounts, workdir=INSIDE_HOME, port=INSIDE_PORT if spec.transport != "stdio" else None,
                   url_path=_url_path(spec, values), limits=self.limits, files=files)


class NoSandbox:
    """Where no sandbox backend can run: every start is refused, with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def start(self, spec: LaunchSpec, installed: Installed) -> AbstractAsyncContextManager[Running]:
        raise SandboxRefused(f"not run: {self.reason}")


def server_environment(spec: LaunchSpec, installed: Installed, values: dict[str, str]) -> dict[str, str]:
    """The whole environment a sandboxed server sees, assembled here and nowhere else: what any program needs to run,
    and the launch's own variables. Nothing comes from the host."""
    env = {
        "PATH": os.pathsep.join([*installed.path_dirs, *SYSTEM_PATH]),
        "HOME": INSIDE_HOME,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.update({k: _expand(v, values) for k, v in spec.env.items()})
    return env


def _url_path(spec: LaunchSpec, values: dict[str, str]) -> str:
    if not spec.url:
        return "/mcp"
    path = _expand(spec.url, values).split("://", 1)[-1].partition("/")[2]
    return "/" + path


def _git_repository(path: Path) -> dict[str, bytes]:
    """A throw-away git repository, made on the host with the host's git, as files to place in the sandbox's home."""
    path.mkdir()
    _make_git_repository(path)
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file() and f.suffix != ".sample"}


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
