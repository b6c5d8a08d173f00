"""The bubblewrap backend: Linux namespaces, an unprivileged uid of its own, a read-only view of the system.

Each start gets a uid (and gid) no file on the host belongs to, one per concurrent sandbox (a lock file holds it), so
RLIMIT_NPROC bounds each sandbox apart and everything a sandbox runs can be found, and killed, by its uid. The launcher
(`launcher.py`, run as root) joins the cgroups, sets the rlimits, stages the host paths the sandbox needs, drops to
that uid and execs bwrap with an empty environment. Inside: new user, pid, network, ipc, uts and mount namespaces; a
read-only /usr (and /bin, /lib*, /sbin), a minimal /etc (certificates, the loader's cache, alternatives, a fake
passwd, group and hosts), the Job's mounts at the same paths as on the host (venv scripts have absolute shebangs; a
venv's interpreter prefix is mounted too when it lies outside /usr), size-capped tmpfs for the work directory, home
and /tmp; `--die-with-parent`, `--new-session`, and only the Job's environment.

An HTTP server listens on the loopback of its own network namespace; `relay.py` reaches it through a unix socket in
a directory shared with the host (see there). A job with the network (a build) has a network namespace of its own
too: its only way out is `relay.py --egress`, which passes what reaches its proxy port inside to the host's egress
proxy (`egress.py`), which reaches the job's registries and nothing else.

Everything a sandbox started is gone when its context exits: its pid namespace ends with bwrap's helper, and the
uid's processes are killed whatever is left.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio

from pipeline.lifetime import end, guarded
from pipeline.sandbox import Completed, Job, NotStarted, ResourceLimits, Started, egress, venv_home
from pipeline.sandbox.limits import Enforcer, processes
from pipeline.sandbox.relay import host_side, open_socket

LAUNCHER = Path(__file__).with_name("launcher.py")
RELAY = Path(__file__).with_name("relay.py")
UID_BASE = 1_600_000_000  # far above any account or subordinate-id range
SLOTS = 1024
INSIDE_UID = 1000  # the server's own uid, as it sees it
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ssl", "ca-certificates", "ca-certificates.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
       "localtime", "timezone", "nsswitch.conf", "mime.types")
FAKE_ETC = {
    "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
}
SOCKET_DIR = "/run/relay"  # inside: where the relay listens, a directory the host sees too
RELAY_INSIDE = "/run/relay.py"
OUTPUT_TAIL = 4000
LAUNCH_ENV: dict[str, str] = {}  # the launcher needs nothing; bwrap gets an empty environment from it


@dataclass
class _Session:
    argv: list[str]  # the launcher's command line
    enforcer: Enforcer
    socket: Path | None  # HTTP: the relay's socket, as the host sees it
    proxy: egress.EgressProxy | None  # a job with the network: its way out


class BubblewrapBackend:
    name = "bubblewrap"

    def __init__(self, bwrap: str | None = None) -> None:
        self.bwrap = bwrap or shutil.which("bwrap")

    def unavailable(self) -> str | None:
        return _unavailable(self.bwrap)

    def describe(self) -> str:
        return f"bubblewrap {_version(self.bwrap)}" if self.bwrap else "bubblewrap"

    @asynccontextmanager
    async def start(self, job: Job, scratch: Path) -> AsyncIterator[Started]:
        if reason := self.unavailable():
            raise NotStarted(f"bubblewrap cannot run here: {reason}")
        with self._session(job, scratch) as session:
            started = Started(backend=self.describe(), env=dict(LAUNCH_ENV), limit_hit=session.enforcer.limit_hit)
            if session.socket is None:
                started.argv = tuple(session.argv)
                yield started
                return
            started.stderr_path = scratch / "stderr.log"
            with started.stderr_path.open("wb") as log:
                process = await anyio.open_process(guarded(session.argv), env=LAUNCH_ENV, stdin=subprocess.DEVNULL, stdout=log,
                                                   stderr=log, start_new_session=True)
            try:
                await _until_listening(session.socket, process, started, session.enforcer)
                async with host_side(str(session.socket)) as port:
                    started.url = f"http://127.0.0.1:{port}{job.url_path}"
                    yield started
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)

    def run(self, job: Job, scratch: Path) -> Completed:
        if reason := self.unavailable():
            raise NotStarted(f"bubblewrap cannot run here: {reason}")
        return self._run(job, scratch)

    def _run(self, job: Job, scratch: Path) -> Completed:
        with self._session(job, scratch) as session:
            log = scratch / "output.log"  # a file, capped by RLIMIT_FSIZE: a build's output is never held in memory whole
            with log.open("wb") as output:
                process = subprocess.Popen(guarded(session.argv), env=LAUNCH_ENV, stdin=subprocess.DEVNULL, stdout=output,
                                           stderr=output, start_new_session=True)
            try:
                process.wait(timeout=job.limits.wall_seconds)
            except subprocess.TimeoutExpired:
                session.enforcer.note("time")
                end(process.pid)
                process.wait()
            session.enforcer.stop()
            refused = session.proxy.summary() if session.proxy else None
            output = _tail(log, OUTPUT_TAIL) + (f"\n[sandbox egress] {refused}" if refused else "")
            return Completed(returncode=process.returncode, output=output, limit_hit=session.enforcer.limit_hit())

    @contextmanager
    def _session(self, job: Job, scratch: Path) -> Iterator[_Session]:
        scratch.mkdir(parents=True, exist_ok=True)
        with _uid_slot() as uid:
            # Everything the server may write is a directory of one size-capped tmpfs (the enforcer mounts it in the
            # scratch directory): its home and work directory, /tmp, /dev/shm and, for an HTTP server, the relay's socket.
            workdirs = (*dict.fromkeys(p for p in (job.workdir, job.env.get("HOME"), "/tmp", "/dev/shm") if p),
                        *([SOCKET_DIR] if job.port is not None else []))
            enforcer = Enforcer(f"{os.getpid()}-{uid}", uid, job.limits, scratch / "disk")
            writable = [m.source for m in job.mounts if m.writable]
            socket = scratch / "disk" / str(len(workdirs) - 1) / "relay.sock" if job.port is not None else None
            egress_dir = scratch / "egress"
            try:
                for path in writable:
                    _chown_tree(path, uid)
                spec = scratch / "launch.spec"
                spec.write_bytes(marshal.dumps(self._spec(job, uid, enforcer, workdirs, socket is not None, egress_dir)))
                argv = [sys.executable, "-I", "-S", str(LAUNCHER), str(spec)]
                with egress.serving(egress_dir, job.registries) if job.network else nullcontext() as proxy:
                    enforcer.start()
                    for i, _ in enumerate(workdirs):
                        (scratch / "disk" / str(i)).mkdir()
                        os.chown(scratch / "disk" / str(i), uid, uid)
                    yield _Session(argv=argv, enforcer=enforcer, socket=socket, proxy=proxy)
            finally:
                enforcer.stop()
                for path in writable:
                    _chown_tree(path, 0, os.getgid())

    def _spec(self, job: Job, uid: int, enforcer: Enforcer, workdirs: tuple[str, ...], relay: bool, egress_dir: Path) -> dict:
        assert self.bwrap is not None
        limits = job.limits
        stage: dict[str, str] = {}
        files = {name: text.encode().hex() for name, text in FAKE_ETC.items()}
        args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                "--clearenv", "--hostname", "sandbox", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID)]
        for path in SYSTEM:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        for entry in ETC:
            if os.path.lexists(f"/etc/{entry}"):
                args += ["--ro-bind", f"/etc/{entry}", f"/etc/{entry}"]
        for name in files:
            args += ["--ro-bind", f"@stage:files/{name}", f"/etc/{name}"]
        # The writable directories before the mounts: an install may lie under /tmp on the host, and is mounted over it.
        stage["disk"] = str(enforcer.disk)
        for i, path in enumerate(workdirs):
            args += ["--bind", f"@stage:disk/{i}", path]
        for i, (source, target) in enumerate(_interpreters(job, relay or job.network)):
            stage[f"python{i}"] = source
            args += ["--ro-bind", f"@stage:python{i}", target]
        for i, mount in enumerate(job.mounts):
            stage[f"m{i}"] = str(mount.source)
            args += ["--bind" if mount.writable else "--ro-bind", f"@stage:m{i}", mount.target]
        for i, (target, content) in enumerate(sorted(job.files.items())):
            files[f"f{i}"] = content.hex()
            target = target if target.startswith("/") else f"{job.workdir}/{target}"
            args += [arg for parent in _parents(target, job.workdir) for arg in ("--dir", parent)]
            args += ["--file", f"@fd:f{i}", target]
        command = list(job.argv)
        env = dict(job.env)
        if relay or job.network:
            stage["relay"] = str(RELAY)
            args += ["--ro-bind", "@stage:relay", RELAY_INSIDE]
        if relay:
            command = [_inside_python(), "-I", "-S", RELAY_INSIDE, f"{SOCKET_DIR}/relay.sock", str(job.port), *command]
        if job.network:
            stage["egress"] = str(egress_dir)
            args += ["--ro-bind", "@stage:egress", egress.SOCKET_DIR]
            command, env = egress.inside(command, env, _inside_python(), RELAY_INSIDE)
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", job.workdir, "--", *command]
        cpu = limits.cpu_seconds
        rlimits = {"RLIMIT_NPROC": [enforcer.nproc, enforcer.nproc], "RLIMIT_CPU": [cpu, cpu + 1], "RLIMIT_CORE": [0, 0],
                   "RLIMIT_FSIZE": [limits.disk_mb * 1024 * 1024] * 2}
        return {"cgroups": enforcer.cgroup_procs, "rlimits": rlimits, "stage": stage, "files": files, "uid": uid, "gid": uid, "bwrap": args}


def _parents(target: str, root: str) -> list[str]:
    """The directories between `root` (a tmpfs) and the file `target`, outermost first."""
    parents = []
    parent = os.path.dirname(target)
    while parent.startswith(root.rstrip("/") + "/"):
        parents.append(parent)
        parent = os.path.dirname(parent)
    return parents[::-1]


def _inside_python() -> str:
    """The interpreter the relay runs on inside: the base interpreter of the pipeline's own Python (stdlib only)."""
    return str(Path(sys.base_prefix).resolve() / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")


def _interpreters(job: Job, relay: bool) -> list[tuple[str, str]]:
    """Interpreter prefixes outside /usr the sandbox needs: those of the venvs among the mounts, and the relay's."""
    prefixes: list[Path] = [Path(sys.base_prefix).resolve()] if relay else []
    for mount in job.mounts:
        for cfg in (mount.source / "pyvenv.cfg", *mount.source.glob("*/pyvenv.cfg")):
            home = venv_home(cfg)
            if home is not None:
                prefixes.append(home.resolve().parent)
    covered = [Path(m.target) for m in job.mounts] + [Path(p) for p in SYSTEM]
    found: list[tuple[str, str]] = []
    for prefix in dict.fromkeys(prefixes):
        if not any(prefix == c or c in prefix.parents for c in covered):
            found.append((str(prefix), str(prefix)))
            covered.append(prefix)
    return found


def _chown_tree(path: Path, uid: int, gid: int | None = None) -> None:
    """Hand a writable mount to the sandbox's uid (and back afterwards): the uid owns nothing else."""
    gid = uid if gid is None else gid
    os.lchown(path, uid, gid)
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            os.lchown(os.path.join(root, name), uid, gid)


@contextmanager
def _uid_slot() -> Iterator[int]:
    """A uid no other sandbox (of this pipeline or another on the machine) holds, and that runs nothing."""
    locks = Path(tempfile.gettempdir()) / "scoreboard-sandbox-uids"
    locks.mkdir(mode=0o700, exist_ok=True)
    taken = {uid for _, uid, _ in processes()}  # a uid that still has processes (even unreaped ones) is not handed out
    for slot in range(SLOTS):
        uid = UID_BASE + slot
        if uid in taken:
            continue
        fd = os.open(locks / str(slot), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            os.close(fd)
        return
    raise NotStarted(f"all {SLOTS} sandbox uids are in use")


async def _until_listening(socket: Path, process: anyio.abc.Process, started: Started, enforcer: Enforcer) -> None:
    """Wait until the relay inside listens (it does once the server accepts connections), or the server has exited."""
    while True:
        if process.returncode is not None:
            tail = _tail(started.stderr_path, 2000)
            raise NotStarted(f"exited with code {process.returncode} before listening: {tail or 'no output'}", enforcer.limit_hit())
        if os.path.lexists(socket):
            try:
                _, writer = await open_socket(str(socket))
                writer.close()
                return
            except OSError:
                pass
        with anyio.move_on_after(0.02):
            await process.wait()


def _tail(path: Path | None, cap: int) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - cap))
        return fh.read().decode("utf-8", "replace").strip()


async def _stop(process: anyio.abc.Process) -> None:
    """The launcher's guardian kills the sandbox (bwrap's helper is pid 1 of its pid namespace: all inside die with it)."""
    for stop in (lambda: end(process.pid), lambda: os.killpg(process.pid, signal.SIGKILL)):
        if process.returncode is not None:
            break
        try:
            stop()
        except (ProcessLookupError, PermissionError):
            pass
        with anyio.move_on_after(2):
            await process.wait()


@cache
def _version(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10, env={})
    except (OSError, subprocess.TimeoutExpired):
        return "unknown version"
    return done.stdout.strip().rpartition(" ")[2] or "unknown version"


@cache
def _unavailable(bwrap: str | None) -> str | None:
    if bwrap is None:
        return "bwrap is not installed"
    if sys.platform != "linux":
        return "bubblewrap needs Linux"
    if os.geteuid() != 0:
        return "the pipeline must run as root to start each sandbox as a uid of its own"
    try:
        if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
            return "user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0)"
    except (OSError, ValueError):
        pass
    scratch = Path(tempfile.mkdtemp(prefix="scoreboard-bwrap-check-"))
    try:
        done = BubblewrapBackend(bwrap)._run(Job(argv=("/bin/true",), env={}, limits=ResourceLimits(wall_seconds=30)), scratch)
    except (OSError, NotStarted) as exc:
        return f"a trial sandbox failed: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        return f"a trial sandbox failed (exit {done.returncode}): {done.output.strip()[-300:]}"
    return None
