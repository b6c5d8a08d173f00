"""The bubblewrap backend on its own: one-shot runs (wall clock, a writable prefix, the network only through the egress proxy), an
HTTP server reached through the relay, the watchdog where cgroups cannot be used, nothing left after a context, and
how the backend is chosen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import httpx
import pytest

from pipeline import store
from pipeline.config import Settings
from pipeline.discover import run_discover
from pipeline.probe import run_probe
from pipeline.sandbox import Job, Mount, ResourceLimits, SandboxUnavailable, choice, limits
from pipeline.sandbox.bubblewrap import UID_BASE, BubblewrapBackend
from pipeline.sandbox.container import DockerBackend
from pipeline.sandbox.install import install_key
from pipeline.sandbox.limits import processes_of
from tests.support import NOW, ListSource, StaticInstaller, faulty_entry, pids_with, python_installed, quiet, raw_server_spec

BACKEND = BubblewrapBackend()
pytestmark = pytest.mark.skipif(BACKEND.unavailable() is not None, reason=f"bubblewrap: {BACKEND.unavailable()}")
PYTHON = str(Path(sys.base_prefix).resolve() / "bin" / "python3")
BASE = Mount(Path(sys.base_prefix).resolve(), str(Path(sys.base_prefix).resolve()))
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/sandbox"}


def python_job(code: str, **fields) -> Job:
    return Job(argv=(PYTHON, "-I", "-c", code), env=ENV, mounts=(BASE, *fields.pop("mounts", ())), workdir="/home/sandbox", **fields)


def test_a_one_shot_run_is_bounded_by_the_wall_clock(tmp_path):
    done = BACKEND.run(Job(argv=("/bin/sleep", "30"), env=ENV, limits=ResourceLimits(wall_seconds=0.5)), tmp_path)
    assert done.limit_hit == "time" and done.returncode != 0


def test_a_one_shot_run_writes_only_its_prefix_and_hands_it_back_to_root(tmp_path):
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "old").write_text("old")
    code = "open('%s/new', 'w').write('built'); import os; print(os.getuid(), sorted(os.environ))" % prefix
    done = BACKEND.run(python_job(code, mounts=(Mount(prefix, str(prefix), writable=True),)), tmp_path / "scratch")
    assert done.returncode == 0, done.output
    assert done.output.split(" ", 1)[0] == "1000"
    assert (prefix / "new").read_text() == "built"
    assert {p.stat().st_uid for p in (prefix, prefix / "old", prefix / "new")} == {0}


@pytest.mark.parametrize("network", [False, True])
def test_no_job_shares_the_hosts_network_one_that_asks_gets_a_proxy(tmp_path, network):
    code = "import os, socket; print([n for _, n in socket.if_nameindex()], 'HTTPS_PROXY' in os.environ)"
    done = BACKEND.run(python_job(code, network=network), tmp_path)
    assert done.output.strip() == f"['lo'] {network}", done.output


def test_an_http_server_inside_is_reached_through_the_relay(tmp_path):
    server = ("import http.server, os\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        body = repr((os.getuid(), self.client_address[0])).encode()\n"
              "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)\n"
              "http.server.HTTPServer(('127.0.0.1', 8000), H).serve_forever()\n")

    async def fetch() -> str:
        async with BACKEND.start(python_job(server, port=8000, url_path="/mcp"), tmp_path) as started:
            assert started.url and started.url.startswith("http://127.0.0.1:") and started.url.endswith("/mcp")
            async with httpx.AsyncClient() as client:
                return (await client.get(started.url)).text

    assert anyio.run(fetch) == "(1000, '127.0.0.1')"


def test_an_http_server_that_exits_before_listening_says_so(tmp_path):
    async def start() -> None:
        async with BACKEND.start(python_job("import sys; print('no config', file=sys.stderr); sys.exit(3)", port=8000), tmp_path):
            pass

    with pytest.raises(Exception, match="exited with code 3 before listening: no config"):
        anyio.run(start)


def test_nothing_outlives_the_context_even_when_bwrap_is_killed(tmp_path):
    """A double-forked daemon inside, then bwrap killed outright: the pid namespace ends, and the context's exit
    finds nothing of the sandbox's uid."""
    marker = uuid.uuid4().hex
    daemon = ("import os, sys, time\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    if os.fork() == 0:\n"
              f"        os.execv(sys.executable, [sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)', '{marker}'])\n"
              "    os._exit(0)\n"
              "os.wait(); print('ready', flush=True); time.sleep(60)\n")

    async def scenario() -> tuple[list[int], list[int], int]:
        async with BACKEND.start(python_job(daemon), tmp_path) as started:
            assert started.argv is not None
            process = subprocess.Popen(started.argv, env=started.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
            assert process.stdout is not None and process.stdout.readline() == b"ready\n"
            alive = pids_with(marker)
            uid = os.stat(f"/proc/{alive[0]}").st_uid
            os.kill(process.pid, signal.SIGKILL)  # bwrap itself, outright: its helper (pid 1 inside) dies with it
            process.wait()
        return alive, pids_with(marker), uid

    alive, left, uid = anyio.run(scenario)
    assert alive and not left
    assert UID_BASE <= uid and not processes_of(uid)


def test_without_cgroups_the_watchdog_holds_memory_and_pids(tmp_path, monkeypatch):
    monkeypatch.setattr(limits.Cgroups, "create", classmethod(lambda cls, name, limits: None))
    small = ResourceLimits(memory_mb=100, pids=16, cpu_seconds=10, disk_mb=8)
    hog = BACKEND.run(python_job("b = b'x' * (1 << 30); print('survived')", limits=small), tmp_path / "a")
    assert hog.limit_hit == "memory" and "survived" not in hog.output
    bomb = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(30)\n        n += 1\n"
            "except OSError as e:\n    print('forks', n, e.strerror, flush=True)\ntime.sleep(0.5)\n")
    done = BACKEND.run(python_job(bomb, limits=small), tmp_path / "b")
    assert done.limit_hit == "pids", done.output
    assert "Resource temporarily unavailable" in done.output


def test_cgroups_are_removed_afterwards(tmp_path):
    before = _sandbox_cgroups()
    done = BACKEND.run(python_job("print('hi')"), tmp_path)
    assert done.returncode == 0 and "hi" in done.output
    # none of this run's is left (an earlier test's may be removed meanwhile, as its own processes end)
    assert set(_sandbox_cgroups()) - set(before) == set()


def test_choose_names_every_reason_when_none_can_run(monkeypatch):
    assert choice.choose("bubblewrap") is not None
    assert choice.choose("auto").name == "bubblewrap"  # where it runs, it comes first: a tenth of a Docker start
    monkeypatch.setattr(BubblewrapBackend, "unavailable", lambda self: "no user namespaces")
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap: no user namespaces"):
        choice.choose("bubblewrap")
    # Docker's own answer is fixed too: asked twice, a daemon under load may answer once and not the other time
    monkeypatch.setattr(DockerBackend, "unavailable", lambda self: "no daemon")
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap: no user namespaces; docker: no daemon"):
        choice.choose("auto")
    with pytest.raises(ValueError):
        choice.choose("chroot")


def _sandbox_cgroups() -> list[str]:
    root = limits.CGROUP_ROOT
    return sorted(str(p) for p in root.glob(f"*/{limits.GROUP}/*") if p.is_dir())


def test_without_a_sandbox_every_package_is_refused_never_run_unsandboxed(db, monkeypatch):
    monkeypatch.setattr(BubblewrapBackend, "unavailable", lambda self: "no user namespaces")
    spec = raw_server_spec("good")
    run_discover(db, sources=[ListSource("test", [faulty_entry("package", spec)])], now=NOW, progress=quiet(1))
    settings = Settings(sandbox="bubblewrap", probe_timeout=5.0)
    report = run_probe(db, servers=store.active_servers(db), installer=StaticInstaller({install_key(spec): python_installed()}),
                       settings=settings, now=NOW, progress=quiet(1))
    _, result = store.latest_probe(db, "package")
    assert report.counts == {"refused": 1}
    assert result.outcome.value == "refused" and "bubblewrap: no user namespaces" in result.detail


def test_the_host_side_of_the_relay_follows_no_symlink_the_sandbox_leaves(tmp_path):
    """The relay's socket directory is the sandbox's to write: a symlink in the socket's place, to a socket of the
    host's, must not be followed."""
    import asyncio
    import socket

    from pipeline.sandbox.relay import host_side

    host_socket = tmp_path / "host.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(host_socket))
    listener.listen()
    listener.setblocking(False)
    planted = tmp_path / "relay.sock"
    planted.symlink_to(host_socket)

    async def attempt() -> bytes:
        async with host_side(str(planted)) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            try:
                return await reader.read()
            except ConnectionResetError:
                return b""
            finally:
                writer.close()

    assert anyio.run(attempt) == b""
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the host's socket
    listener.close()
