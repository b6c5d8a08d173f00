"""Which limit a container reached, and when it must be stopped: at a limit the kernel does not hold on the tree.

The kernel holds memory (the cgroup's limit, no swap: the OOM killer), pids (the cgroup's pids.max: a fork bomb's
forks fail) and the size of each tmpfs (writes fail); RLIMIT_CPU holds each process's CPU time. Those are recorded,
and the server goes on as the kernel left it, as on the bubblewrap backend with cgroups. What nothing in the kernel
holds is the CPU time of the tree as a whole, and the host directories a one-shot run may write (an install's prefix,
on the host's disk, held to the disk limit): there `stop` is set and the caller stops the container. `Watch` reads all
this every `INTERVAL` while the container runs, and once more when asked, from the daemon (inspect, one-shot stats:
any daemon) and, where the host shows them, from the container's cgroup files and its tmpfs mounts (through
/proc/<pid>/root); the writable directories are measured once a second.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.sandbox import LimitName, ResourceLimits

INTERVAL = 0.2  # seconds between two looks at a running container
DISK_SLACK = 64 * 1024  # a tmpfs with less free than this is full
MEASURE_EVERY = 1.0  # seconds between two walks of the writable host directories


@dataclass
class Watch:
    limits: ResourceLimits
    tmpfs: tuple[str, ...]  # the container's size-capped mounts, inside paths
    disk: Path | None = None  # the host tmpfs holding all the container may write, where there is one
    writable: tuple[Path, ...] = ()  # host directories a one-shot run may write (an install's prefix): host disk, measured
    hit: LimitName | None = None
    stop: bool = False  # a limit only this watch holds was reached: the container must be stopped
    _stats: dict = field(default_factory=dict, repr=False)  # the last one-shot stats, read once per look
    _cgroups: dict[str, Path] | None = field(default=None, repr=False)
    _measured: float = field(default=0.0, repr=False)

    def now(self, client, container_id: str) -> LimitName | None:
        """The limit reached so far, looking once more first (a server may reach one, then answer, within one INTERVAL)."""
        self.look(client, container_id)
        return self.hit

    def look(self, client, container_id: str) -> bool:
        """Look at the container once; True while it runs. Records the first limit seen reached; sets `stop` at one
        only this watch holds."""
        try:
            state = client.api.inspect_container(container_id)["State"]
        except Exception:  # removed meanwhile: nothing more to see
            return False
        if state.get("OOMKilled"):
            self._record("memory")
        if self.disk is not None and _full(str(self.disk)):  # still there after the container has gone
            self._record("disk")
        pid = int(state.get("Pid") or 0)
        if not state.get("Running") or pid <= 0:
            return False
        for limit in (self._from_cgroups(client, container_id, pid), self._full_tmpfs(pid)):
            self._record(limit)
        for limit in (self._cpu_time(client, container_id), self._writable_full()):
            if limit is not None:
                self._record(limit)
                self.stop = True
        return True

    def _record(self, limit: LimitName | None) -> None:
        if self.hit is None:
            self.hit = limit

    def _from_cgroups(self, client, container_id: str, pid: int) -> LimitName | None:
        if self._cgroups is None:
            self._cgroups = _cgroup_dirs(pid)
        if _oom_kills(self._cgroups) or _failed_forks(self._cgroups):
            return "memory" if _oom_kills(self._cgroups) else "pids"
        self._stats = _stats(client, container_id)
        memory, pids = self._stats.get("memory_stats") or {}, self._stats.get("pids_stats") or {}
        if memory.get("limit") and memory.get("max_usage", 0) >= memory["limit"]:
            return "memory"
        if pids.get("limit") and pids.get("current", 0) >= pids["limit"]:
            return "pids"
        return None

    def _cpu_time(self, client, container_id: str) -> LimitName | None:
        stats = self._stats or _stats(client, container_id)
        self._stats = {}
        used_ns = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage", 0)
        return "cpu" if used_ns >= self.limits.cpu_seconds * 1e9 else None

    def _full_tmpfs(self, pid: int) -> LimitName | None:
        return "disk" if any(_full(f"/proc/{pid}/root{mount}") for mount in self.tmpfs) else None

    def _writable_full(self) -> LimitName | None:
        if not self.writable or time.monotonic() - self._measured < MEASURE_EVERY:
            return None
        self._measured = time.monotonic()
        return "disk" if sum(map(_used_bytes, self.writable)) > self.limits.disk_mb * 1024 * 1024 else None


def _stats(client, container_id: str) -> dict:
    try:
        return client.api.stats(container_id, stream=False, one_shot=True) or {}
    except Exception:
        return {}


def _full(path: str) -> bool:
    try:
        usage = os.statvfs(path)
    except OSError:
        return False
    return usage.f_bavail * usage.f_frsize < DISK_SLACK


def _used_bytes(root: Path) -> int:
    used = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                used += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return used


def _cgroup_dirs(pid: int) -> dict[str, Path]:
    """The container's cgroup directories on this host, by controller ("" for cgroup v2); empty when not visible."""
    found: dict[str, Path] = {}
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            roots = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] if not controller else [f"/sys/fs/cgroup/{controller}"]
            for root in roots:
                if Path(root + path).is_dir():
                    found[controller] = Path(root + path)
                    break
    return found


def _counter(path: Path | None, name: str) -> int:
    """The value of `name` in a cgroup file of "name value" lines; 0 when it cannot be read."""
    if path is None:
        return 0
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _oom_kills(cgroups: dict[str, Path]) -> int:
    v1, v2 = cgroups.get("memory"), cgroups.get("")
    return _counter(v1 and v1 / "memory.oom_control", "oom_kill") + _counter(v2 and v2 / "memory.events", "oom_kill")


def _failed_forks(cgroups: dict[str, Path]) -> int:
    v1, v2 = cgroups.get("pids"), cgroups.get("")
    return _counter(v1 and v1 / "pids.events", "max") + _counter(v2 and v2 / "pids.events", "max")
