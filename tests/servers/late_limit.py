"""A legacy-era MCP server, as raw HTTP, that answers its handshake well and then 429 (Retry-After: 120) to tools/list
(or, with `limited="initialize"`, to every `initialize` after the first: the raw negotiation's is answered, the SDK
session's is not).

Served in a thread by `serving(transport)`: "streamable-http" (one JSON answer per POST; server/discover refused, an
Mcp-Session-Id given so a client would close the session with a DELETE) or "sse" (legacy HTTP+SSE: each GET of /sse
is a stream of its own that names its message endpoint, answers come on that stream, the 429 comes to the POST).
Every request received is logged (`LateLimit.requests`, "METHOD path json-rpc-method"), so a test can prove nothing
reached the server after the 429.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager
from typing import Iterator

from tests.support import threaded_server

TOOL = {"name": "get_time", "description": "The current time.", "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}}


def answer(request: dict) -> dict | None:
    """The JSON-RPC answer to `request` (None: a notification)."""
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None
    if method == "initialize":
        result: dict | None = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                               "serverInfo": {"name": "late-limit", "version": "0.0.1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "12:00"}]}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def reply(body: bytes, status: str = "200 OK", headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}Connection: close\r\n\r\n"
            .encode() + body)


LIMITED = reply(b'{"error": "slow down"}', "429 Too Many Requests", "Retry-After: 120\r\n")


class LateLimit:
    def __init__(self, transport: str, limited: str) -> None:
        self.transport, self.limited = transport, limited
        self.requests: list[str] = []
        self.streams: dict[str, asyncio.Queue] = {}  # over HTTP+SSE: each GET's stream, by the session its endpoint names

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            verb, path = head.decode(errors="replace").split(" ", 2)[:2]
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
            request = json.loads(await reader.readexactly(length)) if length else {}
            self.requests.append(f"{verb} {path} {request.get('method', '')}".rstrip())
            if self.transport == "sse":
                await self.over_sse(verb, path, request, writer)
            else:
                await self.streamable(verb, request, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, ValueError):
            pass  # the client went away, or the server is stopping
        finally:
            writer.close()

    def limits(self, request: dict) -> bool:
        """Is `request` answered 429? tools/list always; initialize from its second time on."""
        asked = sum(r.endswith(f" {self.limited}") for r in self.requests)
        return request.get("method") == self.limited and asked > (self.limited == "initialize")

    async def streamable(self, verb: str, request: dict, writer: asyncio.StreamWriter) -> None:
        if verb == "DELETE":
            writer.write(reply(b"", "204 No Content"))
        elif verb != "POST":
            writer.write(reply(b"", "405 Method Not Allowed"))
        elif request.get("method") == "server/discover":
            writer.write(reply(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}).encode(),
                               "400 Bad Request"))
        elif self.limits(request):
            writer.write(LIMITED)
        elif (answered := answer(request)) is None:
            writer.write(reply(b"", "202 Accepted"))
        else:
            writer.write(reply(json.dumps(answered).encode(), headers="Mcp-Session-Id: late-limit-1\r\n"))
        await writer.drain()

    async def over_sse(self, verb: str, path: str, request: dict, writer: asyncio.StreamWriter) -> None:
        if verb == "GET" and path.startswith("/sse"):
            session = str(len(self.streams))
            queue = self.streams[session] = asyncio.Queue()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
                         + f"event: endpoint\ndata: /messages?session={session}\n\n".encode())
            await writer.drain()
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), 0.5)
                    writer.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
                except asyncio.TimeoutError:
                    writer.write(b": keep-alive\n\n")
                await writer.drain()
        elif verb == "POST" and path.startswith("/messages?session=") and (queue := self.streams.get(path.rpartition("=")[2])):
            if self.limits(request):
                writer.write(LIMITED)
            else:
                writer.write(reply(b"", "202 Accepted"))
                if request.get("method") == "server/discover":
                    await queue.put({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}})
                elif (answered := answer(request)) is not None:
                    await queue.put(answered)
            await writer.drain()
        else:
            writer.write(reply(b"", "404 Not Found"))
            await writer.drain()


@contextmanager
def serving(transport: str, limited: str = "tools/list") -> Iterator[tuple[str, LateLimit]]:
    """The server on a free loopback port: (its endpoint URL, its request log)."""
    server = LateLimit(transport, limited)
    with threaded_server(server.handle) as port:
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}", server
