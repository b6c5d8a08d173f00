"""The Docker backend with real containers: what a hostile process inside can see and do, which limit stops it, that
nothing is left afterwards, and a real stdio MCP server probed end to end through it. Skips, saying why, where no
Docker daemon answers."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from pipeline.sandbox import Job, Mount, NotStarted, ResourceLimits, attach
from pipeline.sandbox.container import LABEL, DockerBackend, owner, reap_stale
from pipeline.sandbox.install import install_key
from tests.support import pids_with

BACKEND = DockerBackend()
WHY = BACKEND.unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"no usable Docker daemon: {WHY}")

PYTHON = str(Path(sys.base_prefix) / "bin" / "python3")  # the host's interpreter, shown read-only inside
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/work", "SANDBOX_MARK": "inside"}
CANARY = "canary-4f1d9e-not-for-the-sandbox"


def python_job(code: str, *args: str, limits: ResourceLimits = ResourceLimits(), **fields) -> Job:
    return Job(argv=(PYTHON, "-c", code, *args), env=dict(ENV), limits=limits, **fields)


def talk(argv, env: dict[str, str], stdin: bytes, timeout: float) -> subprocess.CompletedProcess:
    """Run the bridge as the probe does: write `stdin` and keep it open until the server's output ends (closing it
    means the probe is done), or `timeout` passed."""
    with subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as bridge:
        assert bridge.stdin is not None and bridge.stdout is not None and bridge.stderr is not None
        bridge.stdin.write(stdin)
        bridge.stdin.flush()
        timer = threading.Timer(timeout, bridge.kill)
        timer.start()
        errors: list[bytes] = []
        reader = threading.Thread(target=lambda: errors.append(bridge.stderr.read()))
        reader.start()
        out = bridge.stdout.read()
        code = bridge.wait()
        reader.join()
        timer.cancel()
        bridge.stdin.close()
    return subprocess.CompletedProcess(argv, code, out, errors[0])


async def run_started(job: Job, scratch: Path, stdin: bytes = b"", timeout: float = 30) -> tuple[int, str, str, str | None]:
    """Start `job`, talk to it through the bridge the backend hands out, as the probe does; (exit code, stdout,
    stderr, limit hit) once it has ended (or `timeout` passed)."""
    async with BACKEND.start(job, scratch) as started:
        assert started.argv is not None and started.backend.startswith("docker ")
        done = await anyio.to_thread.run_sync(talk, started.argv, started.env, stdin, timeout)
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"), started.limit_hit()


def labelled_containers() -> list[dict]:
    return BACKEND._client().api.containers(all=True, filters={"label": LABEL})


class Listener:
    """A TCP listener on every host address that records whether anything connected."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("0.0.0.0", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.arrived: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except OSError:
                continue
            self.arrived.append(peer)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def host_addresses() -> list[str]:
    """Where a process that escaped the network namespace would find the host: Docker's bridge gateway, its own names."""
    subnet = BACKEND._client().networks.get("bridge").attrs["IPAM"]["Config"][0]["Subnet"]
    found = {str(ipaddress.ip_network(subnet)[1]), "127.0.0.1"}
    try:
        found |= {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        pass
    return sorted(found)


CONNECT = """
import socket, sys
for host in sys.argv[2:]:
    try:
        socket.create_connection((host, int(sys.argv[1])), timeout=2).close()
        print("connected", host)
    except OSError as exc:
        print("refused", host, exc.errno)
"""


def test_no_network_reaches_a_host_listener_not_even_an_install_steps(tmp_path):
    listener = Listener()
    try:
        job = python_job(CONNECT, str(listener.port), *host_addresses())
        code, out, err, _ = anyio.run(run_started, job, tmp_path)
        assert code == 0, err
        assert "connected" not in out and out.count("refused") == len(host_addresses())
        assert listener.arrived == []
        # An install step that asks for the network has a way out to its registries only (none here), not to the host.
        opened = BACKEND.run(python_job(CONNECT, str(listener.port), *host_addresses(), network=True), tmp_path)
        assert "connected" not in opened.output and opened.output.count("refused") == len(host_addresses()), opened.output
        assert listener.arrived == []
    finally:
        listener.close()


LOOK_AROUND = """
import os, sys
print("uid", os.getuid(), os.getgid())
for path in ("/etc/written", "/usr/written", sys.argv[1] + "/written", "/work/written"):
    try:
        open(path, "w").close()
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.errno)
print("caps", [line.split()[1] for line in open("/proc/self/status") if line.startswith(("CapEff", "CapBnd", "CapPrm"))])
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        environ = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        continue
    print("environ", pid, environ.replace(b"\\0", b" ").decode())
try:
    print("outside", open(sys.argv[2]).read())
except OSError as exc:
    print("outside refused", exc.errno)
print("mounted", open(sys.argv[1] + "/inside.txt").read())
"""


def test_a_process_inside_is_unprivileged_read_only_and_sees_no_host_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    canary = tmp_path / "canary.txt"
    canary.write_text(CANARY)
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "inside.txt").write_text("shown")
    job = python_job(LOOK_AROUND, str(prefix), str(canary), mounts=(Mount(prefix, str(prefix)),))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code, out, err, hit = anyio.run(run_started, job, scratch)
    assert code == 0, err
    assert "uid 65534 65534" in out
    assert "wrote /work/written" in out and out.count("wrote") == 1  # root, system and the install prefix are read-only
    assert "caps ['0000000000000000', '0000000000000000', '0000000000000000']" in out
    assert CANARY not in out and "outside refused 2" in out and "mounted shown" in out
    environ = [line for line in out.splitlines() if line.startswith("environ 1 ")]
    assert environ and set(environ[0].split()[2:]) == {f"{k}={v}" for k, v in ENV.items()} | {"HOSTNAME=sandbox"}
    assert hit is None and not (prefix / "written").exists()


def test_the_bridge_starts_from_a_clean_environment_and_passes_stdin_stdout_and_the_exit_code(tmp_path, monkeypatch):
    monkeypatch.setenv("SMITHERY_API_KEY", CANARY)
    code = "import sys; line = sys.stdin.readline(); print('got', line.strip()); print('to stderr', file=sys.stderr); sys.exit(7)"
    job = python_job(code, files={"config.json": b"{}"})

    async def run() -> tuple:
        async with BACKEND.start(job, tmp_path) as started:
            assert CANARY not in repr(started.env)
            assert set(started.env) <= {"PYTHONPATH", "LANG", "DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"}
            return await anyio.to_thread.run_sync(talk, started.argv, started.env, b"hello\n", 30.0)

    done = anyio.run(run)
    assert (done.returncode, done.stdout, done.stderr) == (7, b"got hello\n", b"to stderr\n")


def test_a_flood_of_stderr_reaches_the_host_capped_and_stdout_still_flows(tmp_path):
    """The server's stderr is written to a log on the host's disk by the bridge, outside the container's disk limit."""
    flood = attach.STDERR_CAP + 8 * 1024 * 1024
    code = f"import sys\nfor _ in range({flood // 65536}): sys.stderr.write('e' * 65536)\nsys.stderr.flush(); print('still here', flush=True)"
    _, out, err, _ = anyio.run(run_started, python_job(code), tmp_path)
    assert out.strip() == "still here"
    assert len(err) == attach.STDERR_CAP


def test_each_spawn_of_the_bridge_is_a_new_server_and_all_are_removed(tmp_path):
    code = "import os, sys; open('/work/seen', 'a').write('x'); print(open('/work/seen').read(), sys.stdin.readline().strip(), flush=True)"

    async def run() -> list[bytes]:
        async with BACKEND.start(python_job(code), tmp_path) as started:
            answers = [await anyio.to_thread.run_sync(talk, started.argv, started.env, b"hi\n", 30.0) for _ in range(2)]
            assert len(labelled_containers_of_ours()) == 2
            return [a.stdout for a in answers]

    assert anyio.run(run) == [b"x hi\n", b"xx hi\n"]  # a new server each time, on the start's one disk (as on bubblewrap)
    assert not labelled_containers_of_ours()


HOSTILE = {
    # A child allocates 2 GB (the server itself survives its child's death: the backend must stop it).
    "memory": "import os, time\nif os.fork() == 0:\n    data = bytearray(2 << 30)\n    os._exit(0)\ntime.sleep(60)",
    "pids": "import os, time\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(60)\n    except OSError:\n        break\n"
            "time.sleep(60)",
    # Three busy processes: none reaches its own RLIMIT_CPU before the tree has used the whole allowance.
    "cpu": "import os\nos.fork(); os.fork()\nwhile True:\n    pass",
    "disk": "import time\ntry:\n    with open('/work/fill', 'wb') as f:\n        while True:\n            f.write(bytes(1 << 20))\n"
            "except OSError:\n    pass\ntime.sleep(60)",
}


async def until_a_limit(job: Job, scratch: Path) -> tuple[str | None, int | None]:
    """Start `job` and wait (20 s at most) until a limit is reached; (that limit, the bridge's exit code once the
    limit was seen: None while the server goes on)."""
    async with BACKEND.start(job, scratch) as started:
        bridge = await anyio.open_process(list(started.argv or ()), env=started.env)
        try:
            with anyio.move_on_after(20):
                while started.limit_hit() is None:
                    await anyio.sleep(0.1)
            with anyio.move_on_after(3):  # the watchdog stops it within a look or two, where it does
                await bridge.wait()
            return started.limit_hit(), bridge.returncode
        finally:
            if bridge.returncode is None:
                bridge.kill()
                await bridge.wait()


@pytest.mark.parametrize("limit", sorted(HOSTILE))
def test_a_process_tree_at_a_limit_is_held_the_limit_named_and_cpu_time_stopped(tmp_path, limit):
    limits = ResourceLimits(memory_mb=64, pids=16, cpu_seconds=2, disk_mb=8)
    hit, ended = anyio.run(until_a_limit, python_job(HOSTILE[limit], limits=limits), tmp_path)
    assert hit == limit
    if limit == "cpu":  # nothing in the kernel holds the tree's CPU time: the watchdog stops the server
        assert ended is not None and ended != 0
    else:  # the kernel held it (a killed child, failed forks, a full tmpfs); the server goes on as it was left
        assert ended is None
    assert not labelled_containers_of_ours()


def test_a_one_shot_run_past_its_time_or_a_limit_says_which(tmp_path):
    slow = BACKEND.run(python_job("import time; print('started', flush=True); time.sleep(60)", limits=ResourceLimits(wall_seconds=2)), tmp_path)
    assert (slow.returncode, slow.limit_hit) == (124, "time") and "started" in slow.output
    bomb = BACKEND.run(python_job(HOSTILE["pids"], limits=ResourceLimits(pids=16, wall_seconds=2)), tmp_path)
    assert bomb.limit_hit == "pids"  # the first limit reached, before its time ran out
    assert not labelled_containers_of_ours()


def test_a_one_shot_run_writes_its_writable_prefix_which_is_ours_again_afterwards(tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "lib").mkdir(parents=True)
    code = "import os, sys; open(sys.argv[1] + '/lib/built', 'w').write(str(os.getuid())); open('/etc/x', 'w')"
    done = BACKEND.run(python_job(code, str(prefix), mounts=(Mount(prefix, str(prefix), writable=True),)), tmp_path)
    assert done.returncode == 1 and "Read-only file system" in done.output  # the prefix was writable, the rest is not
    built = prefix / "lib" / "built"
    assert built.read_text() == "65534"
    assert {(p.stat().st_uid, p.stat().st_gid) for p in (prefix, prefix / "lib", built)} == {(os.getuid(), os.getgid())}


def test_a_one_shot_run_filling_its_writable_prefix_is_stopped_at_the_disk_limit(tmp_path):
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    code = "import sys, time\nfor n in range(64):\n    open(f'{sys.argv[1]}/blob{n}', 'wb').write(bytes(1 << 20))\ntime.sleep(30)"
    job = python_job(code, str(prefix), mounts=(Mount(prefix, str(prefix), writable=True),), limits=ResourceLimits(disk_mb=16))
    done = BACKEND.run(job, tmp_path)
    assert done.limit_hit == "disk" and done.returncode != 0


DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(1)
    os._exit(0)
print("forked", flush=True)
sys.stdin.read()
"""


def test_nothing_outlives_the_context_not_even_a_double_forked_daemon(tmp_path):
    marker = f"daemon-{os.getpid()}-{tmp_path.name}"

    async def run() -> None:
        async with BACKEND.start(python_job(DAEMON, marker), tmp_path) as started:
            bridge = await anyio.open_process(list(started.argv or ()), env=started.env)
            assert bridge.stdout is not None
            assert b"forked" in await bridge.stdout.receive()
            assert pids_with(marker)  # the daemon runs (the test can see it)
            bridge.kill()
            await bridge.wait()

    anyio.run(run)
    assert not pids_with(marker)
    assert not labelled_containers_of_ours()


KILLED_PIPELINE = """
import sys
from pathlib import Path
import anyio
from pipeline.sandbox import Job
from pipeline.sandbox.container import DockerBackend

async def main():
    server = "import http.server; http.server.HTTPServer(('127.0.0.1', 3001), http.server.BaseHTTPRequestHandler).serve_forever()"
    job = Job(argv=(sys.argv[1], "-c", server), env={"PATH": "/usr/bin:/bin"}, port=3001)
    async with DockerBackend().start(job, Path(sys.argv[2])):
        print("started", flush=True)
        await anyio.sleep(60)

anyio.run(main)
"""


def test_the_containers_of_a_pipeline_killed_outright_are_reaped_at_the_next_start(tmp_path):
    client = BACKEND._client()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen([sys.executable, "-c", KILLED_PIPELINE, PYTHON, str(tmp_path)], env=env, stdout=subprocess.PIPE) as pipeline:
        assert pipeline.stdout is not None and pipeline.stdout.readline() == b"started\n"
        pipeline.kill()
    left = [c for c in labelled_containers() if c["Labels"][LABEL].split()[1] == str(pipeline.pid)]
    assert [c["State"] for c in left] == ["running"] and os.path.ismount(tmp_path / "disk")  # the test can see what it left

    async def reap_while_mine_runs() -> tuple[set[str], list[dict]]:
        async with BACKEND.start(python_job("pass"), tmp_path):
            reap_stale(client)
            return {c["Id"] for c in labelled_containers()}, labelled_containers_of_ours()

    ids, mine = anyio.run(reap_while_mine_runs)
    assert left[0]["Id"] not in ids and mine and mine[0]["Id"] in ids  # a live owner's container stays
    assert not os.path.ismount(tmp_path / "disk")  # the disk of the one reaped


def catalog_job(installed, server_id: str, **fields) -> Job:
    """The local catalog's server `server_id` as a sandbox job: its install prefix shown read-only at its own path."""
    from pipeline.discover.local import LocalCatalogSource

    spec = next(e.launch for e in LocalCatalogSource().read().entries if e.id == server_id and e.launch)
    found = installed[install_key(spec)]
    assert found.executable is not None and found.prefix is not None
    env = {"PATH": os.pathsep.join([*found.path_dirs, "/usr/bin", "/bin"]), "HOME": "/work", **fields.pop("env", {})}
    return Job(argv=(str(found.executable), *spec.args), env=env, mounts=(Mount(found.prefix, str(found.prefix)),), **fields)


async def probe_started(job: Job, scratch: Path, transport: str = "stdio"):
    async with BACKEND.start(job, scratch) as started:
        if transport == "stdio":
            running = Running(transport="stdio", command=started.argv[0], args=started.argv[1:], env=started.env)
        else:
            running = Running(transport=transport, url=started.url)
        result = await deep_probe("sandboxed", running, limits=Limits(timeout=15, allow_private=True), total_timeout=60,
                                  now=datetime.now(timezone.utc))
        return result, started.limit_hit()


def test_a_real_stdio_server_is_probed_end_to_end_through_the_container(tmp_path, installed):
    result, hit = anyio.run(probe_started, catalog_job(installed, "mcp-server-time"), tmp_path)
    assert result.outcome == ProbeOutcome.ok, result.error
    assert {t["name"] for t in result.tools or []} >= {"get_current_time"}
    assert hit is None
    assert not labelled_containers_of_ours()


def test_a_real_http_server_inside_is_probed_through_the_relay(tmp_path, installed):
    job = catalog_job(installed, "server-everything-http", env={"PORT": "3001"}, port=3001)
    result, hit = anyio.run(probe_started, job, tmp_path, "streamable-http")
    assert result.outcome == ProbeOutcome.ok, result.error
    assert {t["name"] for t in result.tools or []} >= {"echo"}
    assert hit is None
    assert not labelled_containers_of_ours()


async def run_until_started(job: Job, scratch: Path) -> None:
    async with BACKEND.start(job, scratch):
        raise AssertionError("started")


def test_an_http_server_that_exits_before_listening_did_not_start_and_says_why(tmp_path):
    job = python_job("import sys; print('no port for me', file=sys.stderr); sys.exit(3)", port=3001)
    with pytest.raises(NotStarted, match="exited with code 3 before listening: no port for me") as failed:
        anyio.run(run_until_started, job, tmp_path)
    assert failed.value.limit is None
    big = python_job("data = bytearray(1 << 30)", port=3001, limits=ResourceLimits(memory_mb=64))
    with pytest.raises(NotStarted, match="exited with code 137 before listening") as failed:
        anyio.run(run_until_started, big, tmp_path)
    assert failed.value.limit == "memory"
    assert not labelled_containers_of_ours()


SHARED_FILLER = """
import http.server, threading, time
def fill():
    time.sleep(0.5)
    for n in range(64):
        try:
            with open(f"/run/relay/junk{n}", "wb") as f:
                f.write(bytes(1 << 20))
        except OSError:
            pass
threading.Thread(target=fill).start()
http.server.HTTPServer(("127.0.0.1", 3001), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def test_the_relay_directory_is_a_small_tmpfs_and_filling_it_reaches_the_disk_limit(tmp_path):
    async def run():
        async with BACKEND.start(python_job(SHARED_FILLER, port=3001, limits=ResourceLimits(disk_mb=8)), tmp_path) as started:
            for _ in range(50):
                if started.limit_hit() is not None:
                    break
                await anyio.sleep(0.1)
            return started.limit_hit()

    assert anyio.run(run) == "disk"
    assert not list(tmp_path.rglob("junk*"))  # nothing of it on the host's disk


def labelled_containers_of_ours() -> list[dict]:
    return [c for c in labelled_containers() if c["Labels"][LABEL] == owner()]
