"""One install step, bounded: a wall-clock deadline for the whole install and a disk cap on its prefix.

A step runs on the host (resolving, downloading, installing wheels and npm packages with scripts ignored: no package
code runs) or, when it would run a package's code (a source build, npm install scripts), inside a sandbox backend with
the network and the prefix writable. Either way a failure comes back as `StepFailed` with a short reason: the
installer's output tail, cleaned of terminal controls.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pipeline.clean import terminal_text
from pipeline.lifetime import end, guarded
from pipeline.sandbox import Backend, Job

OUTPUT_TAIL = 2000  # characters of installer output kept as the failure reason
MAX_STDOUT = 4_000_000  # bytes of a step's standard output read back (npm view's JSON)
DISK_CHECK_EVERY = 1.0  # seconds between measurements of the prefix while a step runs


class StepFailed(Exception):
    """An install step failed; the message is the reason recorded."""


@dataclass(frozen=True)
class Bounds:
    deadline: float  # time.monotonic() by which the whole install must be done
    disk_bytes: int  # the prefix's size cap
    timeout: float  # the whole install's allowance, as said in a failure

    def remaining(self, what: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StepFailed(f"{what}: timed out (the install may take {self.timeout:.0f}s)")
        return left


def run_step(argv: Sequence[str], what: str, env: dict[str, str], bounds: Bounds, watched: Path | None = None) -> str:
    """Run `argv` on the host to its end; return its standard output. `watched` is the prefix under the disk cap."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(guarded(list(argv)), stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=env["HOME"])
        except OSError as exc:
            raise StepFailed(f"{what}: {exc}") from exc
        stopped = _wait(process, what, bounds, watched)
        out.seek(0)
        err.seek(0)
        stdout = out.read(MAX_STDOUT).decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if stopped:
        raise StepFailed(stopped)
    if process.returncode != 0:
        raise StepFailed(f"{what}: exit {process.returncode}: {tail(stderr.strip() or stdout)}")
    return stdout


def run_sandboxed(backend: Backend, job: Job, what: str, bounds: Bounds, watched: Path) -> None:
    """Run a step that executes a package's code inside `backend` (network on, only `watched` writable)."""
    with tempfile.TemporaryDirectory(prefix="scoreboard-build-") as scratch:
        done = backend.run(job, Path(scratch))
    if done.limit_hit:
        raise StepFailed(f"{what}: stopped at the sandbox's {done.limit_hit} limit: {tail(done.output)}")
    over = over_cap(watched, bounds.disk_bytes)
    if over:
        raise StepFailed(f"{what}: {over}")
    if done.returncode != 0:
        raise StepFailed(f"{what} (in the sandbox): exit {done.returncode}: {tail(done.output)}")


def _wait(process: subprocess.Popen[bytes], what: str, bounds: Bounds, watched: Path | None) -> str | None:
    """Wait for the step; stop it (and all it started) at the deadline or the disk cap, and say why."""
    while True:
        left = bounds.deadline - time.monotonic()
        try:
            process.wait(timeout=max(0.01, min(DISK_CHECK_EVERY, left)))
        except subprocess.TimeoutExpired:
            pass
        over = over_cap(watched, bounds.disk_bytes) if watched is not None else None
        if process.returncode is not None:
            return f"{what}: {over}" if over else None
        if over or left <= 0:
            end(process.pid)  # the installer and whatever it started
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return f"{what}: {over}" if over else f"{what}: timed out after {bounds.timeout:.0f}s"


def over_cap(root: Path, cap: int) -> str | None:
    size = disk_usage(root)
    return f"the install takes more than its disk cap of {cap / 1e6:.0f} MB ({size / 1e6:.0f} MB and counting)" if size > cap else None


def disk_usage(root: Path) -> int:
    """Bytes under `root`, symbolic links not followed."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def tail(output: str) -> str:
    return terminal_text(output.strip())[-OUTPUT_TAIL:] or "no output"
