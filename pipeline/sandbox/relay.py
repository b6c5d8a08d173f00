"""A byte relay between the host and an HTTP server that listens on the loopback of its own network namespace.

The server has no network; the host cannot reach its loopback. The sandbox shares one directory with the host (a
bind mount of the backend's scratch), and the relay bridges through a unix socket there:

    probe -> 127.0.0.1:<host port> (host side, in the pipeline's event loop) -> <scratch>/relay.sock
          -> relay inside the sandbox -> 127.0.0.1:<port> inside -> the server

Inside, this file runs as a script (`python -I -S relay.py SOCKET PORT SERVER-ARGV...`, standard library only, the
interpreter mounted read-only): it starts the server as its child, waits until the server accepts connections on its
port, only then listens on the socket (so the socket's existence says the server is ready), relays each connection,
and exits with the server's exit status when the server exits. The host side (`host_side`) is the same relay the
other way round, on the caller's asyncio loop. Bytes are relayed as they are; the probe's own caps bound what it reads.

A build with the network (`python -I -S relay.py --egress SOCKET PORT BUILD-ARGV...`) gets the reverse: the relay
listens on 127.0.0.1:<port> of the build's own loopback before it starts the build, and passes each connection to
SOCKET, where the host's egress proxy (`egress.py`) answers; it exits with the build's exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator

CHUNK = 65536
READY_POLL = 0.02  # seconds between two attempts to reach the starting server


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()


async def _bridge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connect) -> None:
    try:
        far_reader, far_writer = await connect()
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, far_writer), pipe(far_reader, writer))
    finally:
        far_writer.close()
        writer.close()


async def open_socket(socket_path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the relay's socket, and only to a socket: the directory is the sandbox's to write, and a symlink put
    in its place (to a socket of the host's own) would otherwise be followed by the host."""
    fd = os.open(socket_path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise OSError(f"{socket_path} is not a socket")
        return await asyncio.open_unix_connection(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


@contextlib.asynccontextmanager
async def host_side(socket_path: str) -> AsyncIterator[int]:
    """Listen on a free host loopback port for as long as the context lasts, relaying to `socket_path`; yields the port."""
    bridges: set[asyncio.Task] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        bridges.add(task)
        try:
            await _bridge(reader, writer, lambda: open_socket(socket_path))
        except asyncio.CancelledError:
            pass  # the context is closing: the connection ends with it (a cancelled callback task would be logged)
        finally:
            bridges.discard(task)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(bridges):
            task.cancel()
        await asyncio.gather(*bridges, return_exceptions=True)


def _listening(port: int) -> str | None:
    """The loopback address the server accepts connections on, if it does yet."""
    for host in ("127.0.0.1", "::1"):
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return host
        except OSError:
            continue
    return None


async def _inside(socket_path: str, port: int, server: subprocess.Popen) -> int:
    loop = asyncio.get_running_loop()
    exited = loop.run_in_executor(None, server.wait)
    while (host := _listening(port)) is None:
        if server.poll() is not None:
            return server.returncode
        await asyncio.sleep(READY_POLL)
    relay = await asyncio.start_unix_server(
        lambda r, w: _bridge(r, w, lambda: asyncio.open_connection(host, port)), socket_path)
    async with relay:
        return await exited


async def _outbound(socket_path: str, port: int, command: list[str]) -> int:
    relay = await asyncio.start_server(lambda r, w: _bridge(r, w, lambda: asyncio.open_unix_connection(socket_path)), "127.0.0.1", port)
    async with relay:
        build = _spawn(command)
        return 127 if build is None else await asyncio.get_running_loop().run_in_executor(None, build.wait)


def _spawn(command: list[str]) -> subprocess.Popen | None:
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"relay: cannot execute {command[0]}: {exc}", file=sys.stderr)
        return None


def main(argv: list[str]) -> int:
    if argv[0] == "--egress":
        code = asyncio.run(_outbound(argv[1], int(argv[2]), argv[3:]))
        return code if code >= 0 else 128 - code
    socket_path, port, command = argv[0], int(argv[1]), argv[2:]
    server = _spawn(command)
    if server is None:
        return 127
    code = asyncio.run(_inside(socket_path, port, server))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
