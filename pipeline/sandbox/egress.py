"""The way out of a build's sandbox: an HTTP proxy on the host that reaches the configured registries and nothing else.

A sandboxed build (a source build, npm install scripts) has a network namespace of its own: only its own loopback.
There, `relay.py --egress` listens on 127.0.0.1 and passes each connection to this proxy's unix socket (in the
backend's scratch directory, mounted read-only inside); pip and npm find it through their proxy settings. The proxy
takes one request per connection: `CONNECT host:port` (https: a tunnel, its bytes relayed as they are) or an
absolute-URI request (`GET http://host:port/path`, plain http: sent on in origin form, and the connection closed
after the answer). Only the (host, port) pairs of the registries are reached; anything else is answered 403 and
counted. Bounded: a request head is read within HEAD_SECONDS, a registry reached within CONNECT_SECONDS, at most
MAX_CONNECTIONS at once, and nothing outlives the build.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.sandbox.relay import pipe

SOCKET_DIR = "/run/egress"  # inside, read-only: the directory of the proxy's socket
SOCKET_NAME = "egress.sock"
PORT = 3128  # inside: where the relay listens, and a build's proxy settings point
# A build's proxy settings, all of them: every request goes through the proxy, none around it.
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy")
NO_PROXY_ENV = ("NO_PROXY", "no_proxy", "npm_config_noproxy")
HEAD_SECONDS = 30
CONNECT_SECONDS = 30
MAX_CONNECTIONS = 32
HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "upgrade"}


class EgressProxy:
    def __init__(self, allowed: Iterable[tuple[str, int]]) -> None:
        self.allowed = {(host.lower(), port) for host, port in allowed}
        self.refused: dict[str, int] = {}  # "host:port" -> requests refused
        self._open = 0

    def summary(self) -> str | None:
        if not self.refused:
            return None
        return "refused (not a registry): " + ", ".join(f"{target} ({n}x)" for target, n in sorted(self.refused.items()))

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            await _answer(writer, b"503 Too Many Connections")
            return
        self._open += 1
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError):
            pass
        finally:
            self._open -= 1
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = parse(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS))
        if request is None:
            await _answer(writer, b"400 Bad Request")
            return
        host, port, forwarded = request
        if (host, port) not in self.allowed:
            target = f"{host}:{port}"
            self.refused[target] = self.refused.get(target, 0) + 1
            await _answer(writer, b"403 Forbidden")
            return
        try:
            far_reader, far_writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_SECONDS)
        except (OSError, asyncio.TimeoutError):
            await _answer(writer, b"502 Bad Gateway")
            return
        try:
            if forwarded is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                far_writer.write(forwarded)
                writer.write(_closing(await asyncio.wait_for(far_reader.readuntil(b"\r\n\r\n"), CONNECT_SECONDS)))
            await asyncio.gather(pipe(reader, far_writer), pipe(far_reader, writer))
        finally:
            far_writer.close()


def parse(head: bytes) -> tuple[str, int, bytes | None] | None:
    """A proxy request's target (host, port) and, for plain http, the request to send on; None if it is neither form."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    method, target, version = parts
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return (host.strip("[]").lower(), int(port), None) if host and port.isdigit() else None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [line for line in lines[1:] if line and line.partition(":")[0].strip().lower() not in HOP_BY_HOP]
    forwarded = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
    return url.hostname, url.port or 80, forwarded.encode("latin-1")


def _closing(head: bytes) -> bytes:
    """A registry's answer head, saying the connection closes after it: one request per connection."""
    lines = head.decode("latin-1").split("\r\n")
    kept = [line for line in lines[1:] if line and line.partition(":")[0].strip().lower() not in HOP_BY_HOP]
    return "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")


async def _answer(writer: asyncio.StreamWriter, status: bytes) -> None:
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    try:
        await writer.drain()
    except OSError:
        pass


def inside(command: list[str], env: dict[str, str], python: str, relay: str) -> tuple[list[str], dict[str, str]]:
    """A build's command line and environment inside the sandbox: under the relay's outbound half (`python`, `relay`:
    their paths inside), with every proxy setting pointing at it."""
    env = {key: value for key, value in env.items() if key not in NO_PROXY_ENV}
    env.update(dict.fromkeys(PROXY_ENV, f"http://127.0.0.1:{PORT}"))
    return [python, "-I", "-S", relay, "--egress", f"{SOCKET_DIR}/{SOCKET_NAME}", str(PORT), *command], env


@contextmanager
def serving(directory: Path, allowed: Iterable[tuple[str, int]]) -> Iterator[EgressProxy]:
    """The proxy, listening on a socket in `directory` (made here; any uid may connect: the sandbox's) in a thread of
    its own, for as long as the context lasts. The sandbox is shown `directory` read-only at SOCKET_DIR."""
    directory.mkdir(mode=0o755, exist_ok=True)
    socket_path = directory / SOCKET_NAME
    proxy = EgressProxy(allowed)
    with _running(lambda: asyncio.start_unix_server(proxy.handle, str(socket_path))):
        os.chmod(socket_path, 0o666)
        yield proxy


@contextmanager
def listening(allowed: Iterable[tuple[str, int]]) -> Iterator[str]:
    """The proxy on a port of the host's loopback, for an installer that runs on the host (npm, its scripts ignored):
    yields its URL, for the installer's proxy settings."""
    proxy = EgressProxy(allowed)
    with _running(lambda: asyncio.start_server(proxy.handle, "127.0.0.1", 0)) as server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@contextmanager
def _running(start) -> Iterator[asyncio.base_events.Server]:
    """A server started by `start` on an event loop in a thread of its own; stopped, with every connection, at the end."""
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(start())
    thread = threading.Thread(target=loop.run_forever, name="egress-proxy", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        server.close()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks))
        loop.close()
