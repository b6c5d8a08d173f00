"""A server we started is reached at its own port and nowhere else: a redirect to another port of the host's loopback
(a service of ours, not the stranger's) is refused, never followed, and said."""

from __future__ import annotations

import socket
import threading

import anyio

from pipeline.config import Settings
from pipeline.models import LaunchSpec, Server
from pipeline.probe import probe_server
from pipeline.probe.sandbox import LocalProcessSandbox
from tests.support import NOW, TEST_SERVERS, python_installed


def test_a_redirect_from_a_started_server_to_another_loopback_port_is_not_followed():
    arrived: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                arrived.append(conn.recv(200))

    watcher = threading.Thread(target=accept, daemon=True)
    watcher.start()
    target = f"http://127.0.0.1:{listener.getsockname()[1]}/steal"
    spec = LaunchSpec(registry="pypi", package="redirector", command="python", transport="streamable-http",
                      args=[str(TEST_SERVERS / "redirector.py"), "{port}", target], url="http://127.0.0.1:{port}/mcp")
    server = Server(id="redirector", name="redirector", transport="streamable-http", launch=spec, first_seen_at=NOW, last_seen_at=NOW)
    settings = Settings(call_timeout=2.0, probe_timeout=6.0, start_timeout=10.0)
    try:
        result = anyio.run(probe_server, server, python_installed(), LocalProcessSandbox(10.0), settings, NOW, "deep")
    finally:
        stop.set()
        watcher.join(timeout=2)
        listener.close()
    assert arrived == []
    assert not result.reachable
    assert "not the address of the server we started" in (result.detail or "") + str(result.exchanges or ""), result.detail
