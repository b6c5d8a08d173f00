"""Run strangers' code isolated: the backends that start a server (or an install step) where it can do no harm.

A `Backend` turns a `Job` (what to run, with which mounts, environment and limits) into something the caller can talk
to: a command line to spawn whose stdin/stdout are the server's pipes (stdio servers), or a host-side URL that reaches
an HTTP server listening on the loopback of the sandbox's own network namespace. Two real backends stand behind the
one interface: bubblewrap (Linux namespaces, `bubblewrap.py`) and Docker (`container.py`). `choose` picks one
automatically and says why the others were not picked; the chosen backend is named in the evidence of every probe.

This package is shared infrastructure, not a stage: probe starts servers through it, and the installer runs its
source builds through it. It imports no stage.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Protocol

# Why a sandboxed start or run ended badly. The probe records these as the outcome of a sandbox run.
FailureKind = Literal[
    "install_failed",  # the installer failed (its reason is kept)
    "no_entry_point",  # installed, but no command to start could be found
    "crashed_on_start",  # exited (or closed its pipes) before the handshake
    "timeout",  # never answered within the time allowed
    "needs_external_service",  # wants a real database or API we do not give it
    "resource_limit",  # stopped at a limit (which one is said)
    "blocked",  # tried something the sandbox refused, where that is observable
]

LimitName = Literal["memory", "pids", "cpu", "disk", "time"]


@dataclass(frozen=True)
class ResourceLimits:
    """What one sandboxed process tree may use. Holds on every backend (cgroups where writable, else a watchdog)."""

    memory_mb: int = 512
    pids: int = 64
    cpu_seconds: int = 120
    disk_mb: int = 256  # each writable tmpfs (home, work, tmp)
    wall_seconds: float | None = None  # one-shot runs (installs) only; a server lives as long as its probe


@dataclass(frozen=True)
class Mount:
    """A host path seen inside the sandbox. Read-only unless `writable` (only an install's own prefix is)."""

    source: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class Job:
    """What to run inside the sandbox."""

    argv: tuple[str, ...]  # as seen inside (paths under the mounts' targets)
    env: dict[str, str]  # the whole environment inside: PATH, HOME, mock values; nothing from the host
    mounts: tuple[Mount, ...] = ()  # besides the system paths every backend shows read-only
    workdir: str = "/work"  # a fresh tmpfs, the server's current directory and home
    network: bool = False  # installs and source builds only; a server never gets the network
    registries: tuple[tuple[str, int], ...] = ()  # with network: the (host, port) pairs it may reach, and nothing else
    port: int | None = None  # an HTTP server inside listens on this port of its own loopback
    url_path: str = "/mcp"  # the path of that HTTP server's MCP endpoint
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    files: dict[str, bytes] = field(default_factory=dict)  # small files placed inside before the start (path -> bytes)


@dataclass
class Started:
    """A server started in the sandbox, as the probe reaches it.

    stdio: spawn `argv` with `env` (no host secret in either: the backend's own helper is the sandbox's pid 1) and
    speak JSON-RPC over its stdin/stdout; its stderr is the server's. HTTP: `url` reaches the server from the host.
    """

    backend: str  # e.g. "bubblewrap 0.8.0", "docker 20.10.24"
    argv: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    stderr_path: Path | None = None  # the server's stderr, kept outside its reach (HTTP servers; stdio: the caller's)
    limit_hit: Callable[[], LimitName | None] = lambda: None  # after the run: which limit stopped it, if one did
    blocked: Callable[[], str | None] = lambda: None  # after the run: what the sandbox refused, where observable


@dataclass(frozen=True)
class Completed:
    """A one-shot run (an install step, a source build)."""

    returncode: int
    output: str  # stdout and stderr, tail kept
    limit_hit: LimitName | None = None


class NotStarted(Exception):
    """The server did not start: it exited before it listened (`limit`: stopped at that limit), or no sandbox could
    be set up; the message says why."""

    def __init__(self, message: str, limit: LimitName | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class SandboxUnavailable(Exception):
    """This backend cannot run here; the message says why (no daemon, no user namespaces, image cannot be built)."""


class Backend(Protocol):
    name: str  # "bubblewrap" | "docker"

    def unavailable(self) -> str | None:
        """None when this backend works here; else the reason, one line."""
        ...

    def describe(self) -> str:
        """The backend and its version, as named in the evidence."""
        ...

    def start(self, job: Job, scratch: Path) -> AbstractAsyncContextManager[Started]:
        """Start a server; on exit of the context everything it started is gone (double-forked daemons too).
        `scratch` is a host directory the backend may use for its own files (sockets, logs); the server never sees it."""
        ...

    def run(self, job: Job, scratch: Path) -> Completed:
        """Run a one-shot command to its end (bounded by `job.limits.wall_seconds`)."""
        ...


def venv_home(cfg: Path) -> Path | None:
    """The `home` of a venv's pyvenv.cfg: the bin directory of the interpreter it links to, which a backend shows
    read-only inside (the venv's python is a link to it)."""
    try:
        lines = cfg.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip())
    return None
