"""A build with the network reaches its registries and nothing else: its own network namespace, and the host's egress
proxy as its only way out (each real backend, a fake registry, a listener on the host's loopback that must hear nothing)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from pipeline.sandbox import Job, Mount
from pipeline.sandbox.bubblewrap import BubblewrapBackend
from pipeline.sandbox.container import DockerBackend
from pipeline.sandbox.egress import parse
from pipeline.sandbox.installenv import registry_endpoints
from tests.registries import FakeRegistry

BACKENDS = {"bubblewrap": BubblewrapBackend(), "docker": DockerBackend()}
PYTHON = str(Path(sys.base_prefix).resolve() / "bin" / "python3")
BASE = Mount(Path(sys.base_prefix).resolve(), str(Path(sys.base_prefix).resolve()))

HOSTILE = """
import os, socket, sys, urllib.request, urllib.error
registry, port = sys.argv[1], int(sys.argv[2])
print("no_proxy", [k for k in os.environ if k.lower().endswith("no_proxy")])
for host in ("127.0.0.1", "::1"):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("direct connected", host)
    except OSError as exc:
        print("direct refused", host)
for url in (registry + "/simple/", "http://127.0.0.1:%d/" % port, registry.replace("127.0.0.1", "localhost") + "/simple/"):
    try:
        print("GET", url, urllib.request.urlopen(url, timeout=5).status)
    except urllib.error.HTTPError as exc:
        print("GET", url, exc.code)
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)[1]
with socket.create_connection(("127.0.0.1", int(proxy)), timeout=5) as s:
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n" % port)
    print("CONNECT", s.recv(100).split(b"\\r\\n")[0].decode())
"""


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_build_reaches_its_registry_and_not_the_hosts_loopback(tmp_path, name):
    backend = BACKENDS[name]
    if reason := backend.unavailable():
        pytest.skip(f"{name} cannot run here: {reason}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    with FakeRegistry() as registry:
        registry.routes["/simple/"] = ("text/html", b"<html></html>")
        allowed = registry_endpoints([registry.url])
        job = Job(argv=(PYTHON, "-I", "-c", HOSTILE, registry.url, str(port)), env={"PATH": "/usr/bin:/bin", "NO_PROXY": "*"},
                  mounts=(BASE,), workdir="/home/sandbox", network=True, registries=allowed)
        done = backend.run(job, tmp_path)
        assert done.returncode == 0, done.output
        assert [path for path, _ in registry.requests] == ["/simple/"]
    lines = done.output.splitlines()
    assert "no_proxy []" in lines
    assert "direct refused 127.0.0.1" in lines and "direct refused ::1" in lines
    assert f"GET {registry.url}/simple/ 200" in lines
    assert f"GET http://127.0.0.1:{port}/ 403" in lines
    assert f"GET {registry.url.replace('127.0.0.1', 'localhost')}/simple/ 403" in lines  # the registry's (host, port), not its address
    assert "CONNECT HTTP/1.1 403 Forbidden" in lines
    assert f"127.0.0.1:{port} (2x)" in lines[-1]
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):  # not one connection arrived
        listener.accept()
    listener.close()


def test_the_proxy_reads_both_request_forms_and_nothing_else():
    assert parse(b"CONNECT Index.Example:443 HTTP/1.1\r\nHost: x\r\n\r\n") == ("index.example", 443, None)
    assert parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n") == ("::1", 8443, None)
    host, port, forwarded = parse(b"GET http://127.0.0.1:8080/simple/a/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                  b"Proxy-Connection: keep-alive\r\nProxy-Authorization: secret\r\n\r\n")
    assert (host, port) == ("127.0.0.1", 8080)
    assert forwarded == b"GET /simple/a/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n"
    for bad in (b"GET /relative HTTP/1.1\r\n\r\n", b"GET ftp://h/x HTTP/1.1\r\n\r\n", b"CONNECT host HTTP/1.1\r\n\r\n", b"junk\r\n\r\n"):
        assert parse(bad) is None


def test_registry_endpoints_are_the_urls_hosts_and_ports():
    urls = ["https://index.example/simple", "http://127.0.0.1:8080/a http://mirror.example/b", "/local/wheels", ""]
    assert registry_endpoints(urls) == (("index.example", 443), ("127.0.0.1", 8080), ("mirror.example", 80))
