"""The Docker backend: each server (or install step) in a container of its own, made with the Docker SDK.

Every container runs with no network (`network_mode="none"`; a one-shot install step that asks for it reaches its
registries through `egress.py`'s proxy, as on bubblewrap: its socket directory bound read-only), a read-only root
filesystem (the base image of `container_image`: the host's system paths shown read-only), size-capped tmpfs for the
work directory (also home) and /tmp, all capabilities dropped, no-new-privileges, the unprivileged `SANDBOX_UID` (no
user namespace remap: it is the host's uid 65534, which owns nothing), the memory limit without swap, one CPU
(`nano_cpus`), a pids limit, and RLIMIT_CPU / RLIMIT_FSIZE. The job's mounts (install prefixes) are seen read-only
at their own paths. The container's environment is exactly the job's (Docker adds only HOSTNAME, set to "sandbox"):
its pid 1 is the server itself, so /proc/1/environ holds nothing else.

A stdio server is reached through `attach` (a bridge command the probe spawns in place of the server). An HTTP server
runs under `relay.py` inside (the base interpreter, always shown): it listens on the container's own loopback, the
relay on a unix socket in a tiny tmpfs at SOCKET_DIR, which the host reaches as /proc/<pid>/root/... (no host directory
is writable from inside, so no server can fill the host's disk through it), and `relay.host_side` gives the host a
loopback port; the server's output is copied from the daemon's (capped) log to `scratch`/stderr.log. Containers are
labelled with their owner (boot, pid, start time of the process that made them); each backend start first removes
containers whose owner is gone, so a pipeline killed outright leaves nothing running past its next start. When the
context ends the container is force-removed, which kills everything in it, double-forked daemons included.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
import time
import uuid
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path, PurePosixPath
from typing import AsyncIterator

import anyio

from pipeline.sandbox import Completed, Job, LimitName, NotStarted, ResourceLimits, Started, egress, relay
from pipeline.sandbox.container_image import SANDBOX_GID, SANDBOX_UID, ensure_image, system_mounts
from pipeline.sandbox.container_limits import INTERVAL, Watch
from pipeline.sandbox.limits import mount_disk
from pipeline.sandbox.relay import host_side

LABEL = "mcp-scoreboard.sandbox"  # its value: the owner, "boot-id pid start-time"
SESSION = "mcp-scoreboard.session"  # one start's containers (a stdio server started again gets a new one)
PING_SECONDS = 3.0  # a daemon that does not answer this soon is not there
API_SECONDS = 60.0
OUTPUT_TAIL = 4000  # characters of a one-shot run's output kept
LOG_CAP = {"max-size": "1m", "max-file": "1"}  # what the daemon keeps of a container's output (HTTP servers, one-shot runs)
SOCKET_DIR = "/run/relay"  # inside: where the relay listens (HTTP servers), in the container's disk; the host reaches
# it through /proc/<pid>/root, so no host directory is ever writable from inside
EGRESS = "egress"  # in scratch: the directory of the egress proxy's socket (a build with the network)
DISK = "disk"  # in scratch: the host tmpfs that holds all a container may write
MNT_DETACH = 2
RELAY_INSIDE = "/run/relay.py"
RELAY = Path(relay.__file__)


class DockerBackend:
    name = "docker"

    def __init__(self) -> None:
        self._client_cache = None
        self._image: str | None = None
        self._version: str | None = None
        self._smoke: str | None = None  # why it cannot run here, "" when it can: found once

    def unavailable(self) -> str | None:
        if self._smoke is None:
            self._smoke = self._try()
        return self._smoke or None

    def _try(self) -> str:
        """Why this backend cannot run here ("" when it can): a daemon must answer, the base image be there or be made,
        and a container with every setting of a sandbox run a command (a daemon inside an unprivileged container may
        answer and still fail there)."""
        try:
            import docker

            docker.from_env(timeout=PING_SECONDS).ping()
            client = self._client()
            self._image = self._image or ensure_image(client)
        except ImportError:
            return "the docker Python package is not installed"
        except Exception as exc:  # the SDK raises many kinds (connection, API, requests' own): each one means "not here"
            return f"docker: {_one_line(exc)}"
        with tempfile.TemporaryDirectory(prefix="scoreboard-docker-") as scratch:
            done = self.run(Job(argv=("true",), env={"PATH": "/usr/bin:/bin"}, limits=ResourceLimits(wall_seconds=30)), Path(scratch))
        return "" if done.returncode == 0 else f"docker: a sandbox container cannot run here: {_one_line(Exception(done.output))}"

    def describe(self) -> str:
        if self._version is None:
            self._version = str(self._client().version().get("Version", "?"))
        return f"docker {self._version}"

    @asynccontextmanager
    async def start(self, job: Job, scratch: Path) -> AsyncIterator[Started]:
        client = self._client()
        try:
            reap_stale(client)
            spec, watch = self._prepare(job, scratch, stdin=job.port is None)
            container = client.api.create_container(**spec)["Id"]
        except Exception as exc:  # the daemon refused the container (or went away): the server did not start
            _unmount(scratch / DISK)
            raise NotStarted(f"docker: {_one_line(exc)}") from exc
        session = spec["labels"][SESSION]
        started = Started(backend=self.describe(), limit_hit=lambda: watch.hit or watch.now(client, _latest(client, session, container)))
        stop = threading.Event()
        threading.Thread(target=_guard, args=(client, session, container, watch, stop), daemon=True).start()
        try:
            if job.port is None:
                started.argv = (sys.executable, "-s", "-m", "pipeline.sandbox.attach", container)
                started.env = _bridge_env()
                yield started
            else:
                started.stderr_path = scratch / "stderr.log"
                await anyio.to_thread.run_sync(_start_logging, client, container, started.stderr_path)
                socket = await _until_listening(client, container, started.stderr_path, watch)
                async with host_side(str(socket)) as port:
                    started.url = f"http://127.0.0.1:{port}{job.url_path}"
                    yield started
        finally:
            stop.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_last_look_and_remove, client, session, container, watch, scratch / DISK)

    def run(self, job: Job, scratch: Path) -> Completed:
        client = self._client()
        reap_stale(client)
        writable = [m.source for m in job.mounts if m.writable]
        for source in writable:
            _chown_tree(source, SANDBOX_UID, SANDBOX_GID)  # the sandbox user writes the prefix; it is ours again after
        timed_out, container, watch = False, None, None
        with egress.serving(scratch / EGRESS, job.registries) if job.network else nullcontext() as proxy:
            try:
                spec, watch = self._prepare(job, scratch, stdin=False, writable=tuple(writable))
                container = client.api.create_container(**spec)["Id"]
                client.api.start(container)
                deadline = time.monotonic() + (job.limits.wall_seconds or 3600)
                while watch.look(client, container) and not watch.stop:
                    if time.monotonic() > deadline:
                        timed_out = True
                        break
                    time.sleep(INTERVAL)
                if watch.stop or timed_out:
                    _kill(client, container)
                code = int(client.api.wait(container, timeout=30).get("StatusCode", 1))
                output = client.api.logs(container, stdout=True, stderr=True, tail=200).decode("utf-8", "replace")[-OUTPUT_TAIL:]
                watch.look(client, container)
                if refused := proxy.summary() if proxy else None:
                    output += f"\n[sandbox egress] {refused}"
            except Exception as exc:
                code, output = 1, f"docker: {_one_line(exc)}"
            finally:
                if container is not None:
                    _remove(client, container)
                _unmount(scratch / DISK)
                for source in writable:
                    _chown_tree(source, os.getuid(), os.getgid())
        found = watch.hit if watch is not None else None
        hit: LimitName | None = "time" if timed_out and found is None else found
        return Completed(returncode=code if not timed_out else 124, output=output, limit_hit=hit)

    # -- the container

    def _client(self):
        if self._client_cache is None:
            import docker

            self._client_cache = docker.from_env(timeout=API_SECONDS)
        return self._client_cache

    def _prepare(self, job: Job, scratch: Path, stdin: bool, writable: tuple[Path, ...] = ()) -> tuple[dict, Watch]:
        """The container's settings, and the watch over its limits."""
        import docker.types

        client = self._client()
        self._image = self._image or ensure_image(client)
        limits = job.limits
        places = _writable_places(job)
        disk = scratch / DISK
        tmpfs: dict[str, str] = {}
        mounts = []
        if _mount_disk(disk, limits.disk_mb):  # one size for all it may write, as on bubblewrap
            for index, place in enumerate((*places, "/dev/shm")):
                folder = disk / str(index)
                folder.mkdir()
                os.chown(folder, SANDBOX_UID, SANDBOX_GID)
                folder.chmod(0o1777 if place in ("/tmp", "/dev/shm") else 0o700)
                mounts.append(docker.types.Mount(place, str(folder), type="bind"))
        else:  # not allowed to mount here: a tmpfs of that size for each
            owned = f"uid={SANDBOX_UID},gid={SANDBOX_GID},mode=0700"
            tmpfs = {p: f"rw,nosuid,nodev,exec,size={limits.disk_mb}m,{'mode=1777' if p == '/tmp' else owned}" for p in places}
        own = {m.target for m in job.mounts}
        mounts += [docker.types.Mount(p, p, type="bind", read_only=True) for p in system_mounts([m.source for m in job.mounts]) if p not in own]
        mounts += [docker.types.Mount(m.target, str(m.source), type="bind", read_only=not m.writable) for m in job.mounts]
        mounts += _file_mounts(job, scratch)
        command, env = list(job.argv), dict(job.env)
        if job.port is not None or job.network:
            mounts.append(docker.types.Mount(RELAY_INSIDE, str(RELAY), type="bind", read_only=True))
        if job.port is not None:
            command = [_inside_python(), "-I", "-S", RELAY_INSIDE, f"{SOCKET_DIR}/relay.sock", str(job.port), *command]
        if job.network:
            mounts.append(docker.types.Mount(egress.SOCKET_DIR, str(scratch / EGRESS), type="bind", read_only=True))
            command, env = egress.inside(command, env, _inside_python(), RELAY_INSIDE)
        host_config = client.api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs=tmpfs,
            mounts=mounts,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=limits.memory_mb * 1024 * 1024,
            memswap_limit=limits.memory_mb * 1024 * 1024,
            nano_cpus=1_000_000_000,
            pids_limit=limits.pids,
            shm_size=min(limits.disk_mb, 64) * 1024 * 1024,
            # A stdio server's output goes to the bridge alone; what the daemon keeps of other output is capped.
            log_config=docker.types.LogConfig(type="none") if stdin else docker.types.LogConfig(type="json-file", config=LOG_CAP),
            ulimits=[
                docker.types.Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds + 1),
                docker.types.Ulimit(name="fsize", soft=limits.disk_mb * 1024 * 1024, hard=limits.disk_mb * 1024 * 1024),
                docker.types.Ulimit(name="core", soft=0, hard=0),
            ],
        )
        spec = dict(
            image=self._image,
            command=command,
            environment=env,
            working_dir=job.workdir,
            user=f"{SANDBOX_UID}:{SANDBOX_GID}",
            hostname="sandbox",
            labels={LABEL: owner(), SESSION: uuid.uuid4().hex},
            # The server's stdin stays open when the bridge's ends (no StdinOnce): a server that would exit then would
            # take its cgroup and tmpfs along, and with them what says which limit it reached; it is removed instead.
            stdin_open=stdin,
            detach=True,
            tty=False,
            host_config=host_config,
        )
        return spec, Watch(limits, places, disk=disk if os.path.ismount(disk) else None, writable=writable)


def owner(pid: int | None = None) -> str:
    """Who made a container: this boot, a pid and that process's start time (a reused pid is another process)."""
    pid = pid or os.getpid()
    return f"{_boot_id()} {pid} {_start_time(pid)}"


def reap_stale(client) -> None:
    """Remove the sandbox containers whose owner no longer runs (a pipeline killed before it could remove them), and
    unmount their disks."""
    try:
        found = client.api.containers(all=True, filters={"label": LABEL})
    except Exception:
        return
    for summary in found:
        boot, _, rest = (summary.get("Labels") or {}).get(LABEL, "").partition(" ")
        pid = rest.partition(" ")[0]
        alive = boot == _boot_id() and pid.isdigit() and _start_time(int(pid)) != "" and owner(int(pid)) == summary["Labels"][LABEL]
        if not alive:
            disks = {Path(m["Source"]).parent for m in summary.get("Mounts") or [] if Path(m.get("Source", "/")).parent.name == DISK}
            _remove(client, summary["Id"])
            for disk in disks:  # its host tmpfs, which its owner did not live to unmount
                _unmount(disk)


def _guard(client, session: str, container: str, watch: Watch, stop: threading.Event) -> None:
    """A thread, while the context lasts: look at the container every INTERVAL; stop it at a limit only the watch holds."""
    while not stop.wait(INTERVAL):
        current = _latest(client, session, container)
        watch.look(client, current)
        if watch.stop:
            _kill(client, current)
            return


def _latest(client, session: str, first: str) -> str:
    """The session's latest container: the bridge makes a new one for each later start of a stdio server."""
    try:
        found = client.api.containers(all=True, filters={"label": f"{SESSION}={session}"})
    except Exception:
        return first
    return max(found, key=lambda c: c.get("Created", 0))["Id"] if found else first


def _start_logging(client, container: str, path: Path) -> None:
    """Start the container and copy its output to `path` (capped by the daemon's log options) until it is removed."""
    client.api.start(container)
    stream = client.api.logs(container, stdout=True, stderr=True, stream=True, follow=True)

    def copy() -> None:
        with path.open("ab") as log:
            try:
                for chunk in stream:
                    log.write(chunk)
                    log.flush()
            except Exception:
                pass  # removed: the stream ends

    threading.Thread(target=copy, daemon=True).start()


async def _until_listening(client, container: str, log: Path, watch: Watch) -> Path:
    """Wait until the relay inside listens (it does once the server accepts connections), or the server has exited.
    The relay's socket, as the host reaches it: through the container's root, seen from the host's /proc."""
    while True:
        state = (await anyio.to_thread.run_sync(client.api.inspect_container, container))["State"]
        socket = Path(f"/proc/{state.get('Pid') or 0}/root{SOCKET_DIR}/relay.sock")
        if state.get("Running") and socket.exists():
            try:
                await (await anyio.connect_unix(socket)).aclose()
                return socket
            except OSError:
                pass
        if not state.get("Running"):
            tail = log.read_bytes()[-2000:].decode("utf-8", "replace").strip() if log.exists() else ""
            limit = await anyio.to_thread.run_sync(watch.now, client, container)
            raise NotStarted(f"exited with code {state.get('ExitCode')} before listening: {tail or 'no output'}", limit)
        await anyio.sleep(0.05)


def _inside_python() -> str:
    """The relay's interpreter inside: the base interpreter of the pipeline's own Python (its prefix is always shown)."""
    return str(Path(sys.base_prefix).resolve() / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")


def _last_look_and_remove(client, session: str, container: str, watch: Watch, disk: Path) -> None:
    watch.look(client, _latest(client, session, container))
    try:
        made = [c["Id"] for c in client.api.containers(all=True, filters={"label": f"{SESSION}={session}"})]
    except Exception:
        made = []
    for each in dict.fromkeys([container, *made]):
        _remove(client, each)
    _unmount(disk)


def _mount_disk(path: Path, size_mb: int) -> bool:
    """A tmpfs of the disk limit's size on the host, for all the container may write; False where mounting is not
    allowed (a pipeline that is not root)."""
    try:
        mount_disk(path, SANDBOX_UID, size_mb)
    except OSError:
        return False
    return True


def _unmount(path: Path) -> None:
    if os.path.ismount(path):
        ctypes.CDLL(None, use_errno=True).umount2(str(path).encode(), MNT_DETACH)


def _kill(client, container: str) -> None:
    try:
        client.api.kill(container)
    except Exception:
        pass  # it exited meanwhile


def _remove(client, container: str) -> None:
    try:
        client.api.remove_container(container, force=True, v=True)
    except Exception:
        pass  # gone already, or being removed by another owner's reaping


def _writable_places(job: Job) -> tuple[str, ...]:
    """Where the container may write, inside: its work directory, /tmp, its home, the relay's directory."""
    home = job.env.get("HOME")
    targets = [job.workdir, "/tmp", *([SOCKET_DIR] if job.port is not None else [])]
    if home and not any(PurePosixPath(t) == PurePosixPath(home) or PurePosixPath(t) in PurePosixPath(home).parents for t in targets):
        targets.append(home)
    return tuple(dict.fromkeys(targets))


def _file_mounts(job: Job, scratch: Path) -> list:
    """Job.files, written under `scratch` and each bound read-only at its path (a tmpfs cannot be written before the
    container starts: Docker copies into the image's layer, beneath the mount)."""
    import docker.types

    mounts = []
    for index, (path, data) in enumerate(sorted(job.files.items())):
        staged = scratch / "files" / str(index)
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(data)
        staged.chmod(0o644)
        target = str(PurePosixPath(job.workdir) / path)  # an absolute path stays as it is
        mounts.append(docker.types.Mount(target, str(staged), type="bind", read_only=True))
    return mounts


def _bridge_env() -> dict[str, str]:
    """The bridge's whole environment: where to import this package and the Docker SDK from, and where the daemon is
    (the SDK's own variables, when set), nothing else."""
    import docker

    roots = dict.fromkeys(str(Path(module.__file__).resolve().parents[1]) for module in (sys.modules["pipeline"], docker))
    daemon = {name: os.environ[name] for name in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH") if os.environ.get(name)}
    return {"PYTHONPATH": os.pathsep.join(roots), "LANG": "C.UTF-8", **daemon}


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for path in [root, *root.rglob("*")]:
        try:
            os.chown(path, uid, gid, follow_symlinks=False)
        except OSError:
            pass


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""  # no such process


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
