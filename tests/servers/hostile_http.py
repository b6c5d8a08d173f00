"""HTTP servers that never answer, each in its own way, and one that answers every request with 429.

Run alone (`python hostile_http.py PORT`) or in a thread (`serving()`); the path picks the behaviour:
  /silent     reads the request and never answers
  /slowloris  starts a response and trickles header bytes for ever
  /keepalive  answers every request with an event stream of keep-alive comments, never an event
  /sse        an HTTP+SSE endpoint whose stream sends keep-alives but never the `endpoint` event (a POST gets 405)
  /limited    HTTP 429 with Retry-After to every request
  /limited-later  a JSON-RPC error to the first request, then 429 to every one after it
Any other path (a well-known document, a setup page) is silent too.
Every request received is counted (`Hostile.requests`), so a test can prove nothing more was sent.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

STREAM = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"


class Hostile:
    def __init__(self, all_limited: bool = False) -> None:
        self.requests: list[str] = []  # "METHOD path" of every request, in order
        self.all_limited = all_limited  # 429 to every request, whatever its path

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path = head.decode(errors="replace").split(" ", 2)[:2]
            self.requests.append(f"{method} {path}")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
            if length:
                await reader.readexactly(length)
            await self.respond(method, path, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client gave up, as it should
        finally:
            writer.close()

    async def respond(self, method: str, path: str, writer: asyncio.StreamWriter) -> None:
        if path.startswith("/limited-later") and sum(r.endswith(path) for r in self.requests) == 1:
            body = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}'
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        elif path.startswith("/limited") or self.all_limited:
            body = b'{"error": "slow down"}'
            writer.write(b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 120\r\n"
                         + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        elif path.startswith("/slowloris"):
            writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while True:
                writer.write(b"a")
                await writer.drain()
                await asyncio.sleep(0.3)
        elif path.startswith("/keepalive") or (path.startswith("/sse") and method == "GET"):
            writer.write(STREAM)
            while True:
                writer.write(b": keep-alive\n\n")
                await writer.drain()
                await asyncio.sleep(0.2)
        elif path.startswith("/sse"):
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        else:
            await asyncio.sleep(3600)


@contextmanager
def serving(all_limited: bool = False) -> Iterator[tuple[str, Hostile]]:
    """A fresh hostile server on a free loopback port, in a thread: (origin, its request log)."""
    hostile = Hostile(all_limited)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(hostile.handle, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", hostile
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        server.close()
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(Hostile().handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1])))
