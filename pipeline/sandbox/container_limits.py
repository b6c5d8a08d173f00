"""Which limit stopped a container, and stopping one that reached a limit the kernel does not enforce on the tree.

The kernel holds memory (the cgroup's limit, no swap), pids (the cgroup's pids.max: a fork bomb's forks fail) and disk
(each tmpfs has a size); RLIMIT_CPU holds each process's CPU time. What the kernel does not do is stop the server when
a child was OOM-killed, when its forks fail, or when its tree as a whole used more CPU time than allowed; nor does it
say which limit was reached. `Watch` reads that, every `INTERVAL` while the container runs and once more before it is
removed, from the daemon (inspect, one-shot stats: this works with any daemon) and, where the host shows them, from the
container's cgroup files and its tmpfs mounts (through /proc/<pid>/root); and, once a second, the size of the host
directories a one-shot run may write (an install's prefix, held to the same disk limit as a tmpfs). A limit reached is
kept; the caller stops the container.
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
    writable: tuple[Path, ...] = ()  # host directories a one-shot run may write (an install's prefix): host disk, measured
    hit: LimitName | None = None
    _cgroups: dict[str, Path] | None = field(default=None, repr=False)
    _measured: float = field(default=0.0, repr=False)

    def now(self, client, container_id: str) -> LimitName | None:
        """The limit reached so far, looking once more first (a server may reach one, then answer, within one INTERVAL)."""
        self.look(client, container_id)
        return self.hit

    def look(self, client, container_id: str) -> bool:
        """Look at the container once; True while it runs. Sets `hit` the first time a limit is seen reached."""
        try:
            state = client.api.inspect_container(container_id)["State"]
        except Exception:  # removed meanwhile: nothing more to see
            return False
        if self.hit is None and state.get("OOMKilled"):
            self.hit = "memory"
        pid = int(state.get("Pid") or 0)
        if not state.get("Running") or pid <= 0:
            return False
        if self.hit is None:
            self.hit = self._memory_or_pids_or_cpu(client, container_id, pid) or self._disk(pid)
        return True

    def _memory_or_pids_or_cpu(self, client, container_id: str, pid: int) -> LimitName | None:
        if self._cgroups is None:
            self._cgroups = _cgroup_dirs(pid)
        if _oom_kills(self._cgroups) or _failed_forks(self._cgroups):
            return "memory" if _oom_kills(self._cgroups) else "pids"
        try:
            stats = client.api.stats(container_id, stream=False, one_shot=True)
        except Exception:
            return None
        memory, pids = stats.get("memory_stats") or {}, stats.get("pids_stats") or {}
        if memory.get("limit") and memory.get("max_usage", 0) >= memory["limit"]:
            return "memory"
        if pids.get("limit") and pids.get("current", 0) >= pids["limit"]:
            return "pids"
        used_ns = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage", 0)
        return "cpu" if used_ns >= self.limits.cpu_seconds * 1e9 else None

    def _disk(self, pid: int) -> LimitName | None:
        if self.writable and time.monotonic() - self._measured >= MEASURE_EVERY:
            self._measured = time.monotonic()
            if sum(map(_used_bytes, self.writable)) > self.limits.disk_mb * 1024 * 1024:
                return "disk"
        for mount in self.tmpfs:
            try:
                usage = os.statvfs(f"/proc/{pid}/root{mount}")
            except OSError:
                continue
            if usage.f_bavail * usage.f_frsize < DISK_SLACK:
                return "disk"
        return None


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
