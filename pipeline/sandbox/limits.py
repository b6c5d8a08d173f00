"""Hold a sandbox's process tree to its ResourceLimits, and say afterwards which limit stopped it.

Memory and pids are held by cgroups where this process may create them (cgroup v1 `memory` and `pids` hierarchies,
or a cgroup v2 tree with both controllers), else by a watchdog that sums the memory (proportional set sizes: shared
pages count once) and counts the tasks of the sandbox's uid (every sandbox runs as a uid of its own) and kills them
all past a limit; RLIMIT_NPROC bounds
forks on its own either way. CPU time: RLIMIT_CPU per process (SIGXCPU, then SIGKILL), and the watchdog kills the
tree once the CPU time of its processes together passes the limit (a server cannot dodge it by forking). Disk: one
tmpfs of the limit's size holds everything the sandbox may write (`mount_disk`), RLIMIT_FSIZE caps each file, and
the tmpfs, mounted on the host, says afterwards whether it was filled.

`Enforcer` is one sandbox's: `start` before the launch (the launcher joins `cgroup_procs`), `stop` afterwards: it
kills whatever of the uid is still alive and removes the cgroups.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from pathlib import Path

from pipeline.sandbox import LimitName, ResourceLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "scoreboard-sandbox"
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
POLL = 0.05  # seconds between two looks at the tree
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
_libc = ctypes.CDLL(None, use_errno=True)


class Cgroups:
    """One sandbox's cgroups: a memory and a pids cgroup (v1), or one cgroup with both controllers (v2)."""

    def __init__(self, dirs: dict[str, Path], version: int) -> None:
        self.dirs, self.version = dirs, version

    @classmethod
    def create(cls, name: str, limits: ResourceLimits) -> Cgroups | None:
        """None where cgroups cannot be written here (not root, read-only, no such controller)."""
        memory, pids = str(limits.memory_mb * 1024 * 1024), str(limits.pids)
        v1 = {"memory": CGROUP_ROOT / "memory", "pids": CGROUP_ROOT / "pids"}
        if all((root / "cgroup.procs").exists() for root in v1.values()):
            made = cls({c: root / GROUP / name for c, root in v1.items()}, 1)
            return made if made._make({"memory": {"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory},
                                       "pids": {"pids.max": pids}}) else None
        v2 = _cgroup2_root()
        if v2 is not None:
            try:
                if not {"memory", "pids"} <= set((v2 / "cgroup.controllers").read_text().split()):
                    return None
                (v2 / "cgroup.subtree_control").write_text("+memory +pids")
                (v2 / GROUP).mkdir(exist_ok=True)
                (v2 / GROUP / "cgroup.subtree_control").write_text("+memory +pids")
            except OSError:
                return None
            made = cls({"memory": v2 / GROUP / name, "pids": v2 / GROUP / name}, 2)
            return made if made._make({"memory": {"memory.max": memory, "memory.swap.max": "0"}, "pids": {"pids.max": pids}}) else None
        return None

    def _make(self, settings: dict[str, dict[str, str]]) -> bool:
        try:
            for controller, path in self.dirs.items():
                path.mkdir(parents=True, exist_ok=True)
                for key, value in settings[controller].items():
                    if (path / key).exists() or key in ("memory.limit_in_bytes", "memory.max", "pids.max"):
                        (path / key).write_text(value)
        except OSError:
            self.remove()
            return False
        return True

    @property
    def procs(self) -> list[str]:
        return sorted({str(path / "cgroup.procs") for path in self.dirs.values()})

    def pids(self) -> list[int]:
        return _read_pids(self.dirs["pids"])

    def hit(self) -> LimitName | None:
        memory = _keyed(self.dirs["memory"] / ("memory.oom_control" if self.version == 1 else "memory.events"))
        if memory.get("oom_kill", 0):
            return "memory"
        if _keyed(self.dirs["pids"] / "pids.events").get("max", 0):
            return "pids"
        return None

    def remove(self) -> None:
        for path in {*self.dirs.values()}:
            deadline = time.monotonic() + 2
            while path.exists():
                _kill_all(_read_pids(path))
                try:
                    path.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)


class Enforcer:
    """The limits of one sandbox: its cgroups (where possible) and a watchdog thread over its uid's processes."""

    def __init__(self, name: str, uid: int, limits: ResourceLimits, disk: Path | None = None) -> None:
        self.uid, self.limits, self.disk = uid, limits, disk
        self.cgroups = Cgroups.create(name, limits)
        self._hit: LimitName | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{name}", daemon=True)

    @property
    def mode(self) -> str:
        return f"cgroup v{self.cgroups.version}" if self.cgroups else "watchdog"

    @property
    def nproc(self) -> int:
        """RLIMIT_NPROC for the sandbox's uid: with a pids cgroup, a backstop above it (so the cgroup is the limit that
        fails a fork, and counts it); without, the limit itself."""
        return self.limits.pids * 2 if self.cgroups else self.limits.pids

    @property
    def cgroup_procs(self) -> list[str]:
        return self.cgroups.procs if self.cgroups else []

    def start(self) -> None:
        if self.disk is not None:
            mount_disk(self.disk, self.uid, self.limits.disk_mb)
        self._thread.start()

    def note(self, limit: LimitName) -> None:
        """A limit the caller saw hit (the wall clock of a one-shot run)."""
        self._hit = self._hit or limit

    def limit_hit(self) -> LimitName | None:
        if self._hit is None and self.cgroups is not None:
            self._hit = self.cgroups.hit()
        if self._hit is None and self.disk is not None and os.path.ismount(self.disk) and _full(self.disk):
            self._hit = "disk"
        return self._hit

    def stop(self) -> None:
        """Kill everything the sandbox's uid still runs, and remove the cgroups; `limit_hit` keeps its answer."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        self.limit_hit()
        deadline = time.monotonic() + 2
        while (left := processes_of(self.uid)) and time.monotonic() < deadline:
            _kill_all(left)
            time.sleep(0.01)
        if self.cgroups is not None:
            self.cgroups.remove()
        if self.disk is not None and os.path.ismount(self.disk):
            _check(_libc.umount2(str(self.disk).encode(), MNT_DETACH), f"umount {self.disk}")

    def _watch(self) -> None:
        cpu_limit = self.limits.cpu_seconds * TICKS
        while not self._stopped.wait(POLL):
            pids = self.cgroups.pids() if self.cgroups else processes_of(self.uid)
            if not pids:
                continue
            samples = [s for s in map(_sample, pids) if s is not None]
            rss, ticks, tasks = sum(s[0] for s in samples), [s[1] for s in samples], sum(s[2] for s in samples)
            exceeded: LimitName | None = None
            if self.cgroups is None and rss > self.limits.memory_mb * 1024 * 1024:
                exceeded = "memory"
            elif self.cgroups is None and tasks >= self.limits.pids - 1:  # RLIMIT_NPROC fails the next fork
                exceeded = "pids"
            elif sum(ticks) >= cpu_limit or any(t >= cpu_limit - TICKS // 5 for t in ticks):  # RLIMIT_CPU kills the latter now
                exceeded = "cpu"
            if exceeded is not None:
                self.note(exceeded)
                if exceeded != "pids":  # at the pids limit forks fail: the server may well go on without them
                    _kill_all(pids)


def mount_disk(path: Path, uid: int, size_mb: int) -> None:
    """The sandbox's writable space (its home, work directory and /tmp are directories in it): a tmpfs of the disk
    limit's size, owned by the sandbox's uid, mounted on the host so it can be looked at after the sandbox has gone."""
    path.mkdir(exist_ok=True)
    options = f"size={size_mb * 1024 * 1024},mode=0755,uid={uid},gid={uid}".encode()
    _check(_libc.mount(b"sandbox-disk", str(path).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"mount {path}")


def _full(path: Path) -> bool:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize < 64 * 1024


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def processes_of(uid: int, zombies: bool = False) -> list[int]:
    """The processes whose real uid is `uid` (as this process's namespace sees it); with `zombies`, those not yet
    reaped too (they still count against RLIMIT_NPROC; one whose parent has gone is init's to reap)."""
    return [pid for pid, owner, state in processes() if owner == uid and (zombies or state not in "ZX")]


def processes() -> list[tuple[int, int, str]]:
    """(pid, real uid, state) of every process. The real uid, from status: a process that makes itself non-dumpable
    shows its /proc directory as root's."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status", "rb") as status:
                    head = status.read(1024)
                state = head.split(b"\nState:", 1)[1].split(None, 1)[0].decode()
                uid = int(head.split(b"\nUid:", 1)[1].split(None, 1)[0])
            except (OSError, IndexError, ValueError):
                continue
            found.append((int(entry), uid, state))
    return found


def _sample(pid: int) -> tuple[int, int, int] | None:
    """(memory, CPU ticks, threads) of one process. Memory is its proportional set size: pages shared with the
    processes it forked count once among them all, as they do against a cgroup."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    memory = int(fields[21]) * PAGE
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            memory = next((int(line.split()[1]) * 1024 for line in rollup if line.startswith(b"Pss:")), memory)
    except (OSError, ValueError):
        pass
    return memory, int(fields[11]) + int(fields[12]), int(fields[17])


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _read_pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _keyed(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines() if len(line.split()) == 2)}
    except (OSError, ValueError):
        return {}


def _cgroup2_root() -> Path | None:
    """The cgroup v2 mount, when the whole of /sys/fs/cgroup is one (hybrid setups keep v1 for the controllers)."""
    return CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else None
