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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

CHUNK = 65536
READY_POLL = 0.02  # seconds between two attempts to reach the starting server


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
        await asyncio.gather(_pipe(reader, far_writer), _pipe(far_reader, writer))
    finally:
        far_writer.close()
        writer.close()


@contextlib.asynccontextmanager
async def host_side(socket_path: str) -> AsyncIterator[int]:
    """Listen on a free host loopback port for as long as the context lasts, relaying to `socket_path`; yields the port."""
    bridges: set[asyncio.Task] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        bridges.add(task)
        try:
            await _bridge(reader, writer, lambda: asyncio.open_unix_connection(socket_path))
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


def main(argv: list[str]) -> int:
    socket_path, port, command = argv[0], int(argv[1]), argv[2:]
    try:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"relay: cannot execute {command[0]}: {exc}", file=sys.stderr)
        return 127
    code = asyncio.run(_inside(socket_path, port, server))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
