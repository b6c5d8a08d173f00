"""Loopback MCP endpoints for a simulated fleet's remote share, served by one child process, and a black hole.

The child answers Streamable HTTP (JSON answers, a session id, 405 to the event-stream GET, 202 to notifications) on
one port, one path per server: /mcp/<behaviour>/<index>. Behaviours: `ok` (both eras), `legacy` (no server/discover),
`slow` (every answer delayed), `failing` (HTTP 500 to everything), `auth` (401 with a WWW-Authenticate challenge).
Each server lists a few tools (some read-only, so the deep probe calls them), answers tools/call, ping and the
legacy handshake, and 404s every well-known document (no opt-out file).

The black-holed share dials a second port whose listener never accepts and whose accept queue is full: the kernel
drops further SYNs, so a connect waits for the prober's deadline, as a remote behind a silent firewall does.
`black_holed(port)` measures that it really does.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

BEHAVIOURS = ("ok", "legacy", "slow", "failing", "auth")

SERVER = textwrap.dedent("""
    import asyncio, json, socket, sys
    SLOW = float(sys.argv[1])
    VERBS = ["get", "list", "search", "create", "delete", "read"]

    def tools(index):
        out = []
        for t in range(3 + index % 6):
            verb = VERBS[(index + t) % len(VERBS)]
            read_only = verb in ("get", "list", "search", "read")
            out.append({"name": f"{verb}_item_{t}", "description": f"{verb.title()} an item of server {index}. Returns it as JSON.",
                        "inputSchema": {"type": "object", "properties": {"item_id": {"type": "string", "description": "The item."}},
                                        "required": ["item_id"] if t % 2 else []},
                        "annotations": {"readOnlyHint": read_only, "destructiveHint": verb == "delete"}})
        return out

    def answer(kind, index, message):
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            return 202, None
        if method == "server/discover" and kind != "legacy":
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete", "ttlMs": 0,
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": f"fleet-{index}", "version": "1.0.0"}}}
        elif method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": f"fleet-{index}", "version": "1.0.0"}}
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": tools(index)}
        elif method == "tools/call":
            params = message.get("params") or {}
            names = {t["name"] for t in tools(index)}
            if params.get("name") not in names:
                return 200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}}
            args = params.get("arguments")
            if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
                return 200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid arguments"}}
            result = {"content": [{"type": "text", "text": json.dumps({"item": args.get("item_id", "x"), "server": index})}], "isError": False}
        else:
            unknown = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
            return (400 if method == "server/discover" else 200), unknown
        return 200, {"jsonrpc": "2.0", "id": rid, "result": result}

    REASONS = {200: b"OK", 202: b"Accepted", 400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found", 405: b"Method Not Allowed",
               500: b"Internal Server Error"}

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.split(b"\\r\\n")
                verb, path = lines[0].split(b" ")[:2]
                length = next((int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length")), 0)
                body = await reader.readexactly(length) if length else b""
                parts = path.decode().split("?")[0].strip("/").split("/")
                kind, index = (parts[1], int(parts[2])) if len(parts) == 3 and parts[0] == "mcp" else (None, 0)
                extra, reply, status = b"", None, 404
                if kind == "slow":
                    await asyncio.sleep(SLOW)
                if kind is None:
                    status = 404
                elif kind == "failing":
                    status = 500
                elif kind == "auth":
                    status, extra = 401, b'WWW-Authenticate: Bearer realm="fleet"\\r\\n'
                elif verb == b"GET":
                    status = 405
                elif verb == b"DELETE":
                    status = 200
                elif verb == b"POST":
                    try:
                        message = json.loads(body)
                    except ValueError:
                        message = None
                    if isinstance(message, dict):
                        status, reply = answer(kind, index, message)
                    else:
                        status, reply = 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
                data = json.dumps(reply).encode() if reply is not None else b""
                kind_header = b"Content-Type: application/json\\r\\nMcp-Session-Id: s1\\r\\n" if reply is not None else b""
                status_line = b"HTTP/1.1 %d %s\\r\\n" % (status, REASONS[status])
                writer.write(status_line + kind_header + extra + b"Content-Length: %d\\r\\n\\r\\n" % len(data) + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, IndexError):
            pass
        finally:
            writer.close()

    def black_hole():
        # A listener that never accepts, its accept queue filled by connections of its own: further SYNs are dropped.
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(0)
        fillers = []
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(hole.getsockname())
            fillers.append(filler)
        return hole, fillers

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        hole, fillers = black_hole()
        print(json.dumps({"port": server.sockets[0].getsockname()[1], "black_hole": hole.getsockname()[1]}), flush=True)
        await asyncio.Event().wait()
    asyncio.run(main())
""")


@dataclass
class Endpoints:
    """The running child: where its servers and its black hole are."""

    process: subprocess.Popen
    port: int
    black_hole: int

    def url(self, behaviour: str, index: int) -> str:
        if behaviour == "black_holed":
            return f"http://127.0.0.1:{self.black_hole}/mcp/ok/{index}"
        return f"http://127.0.0.1:{self.port}/mcp/{behaviour}/{index}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def start(slow_seconds: float = 0.3) -> Endpoints:
    process = subprocess.Popen([sys.executable, "-c", SERVER, str(slow_seconds)], stdout=subprocess.PIPE, text=True)
    ports = json.loads(process.stdout.readline())
    return Endpoints(process, ports["port"], ports["black_hole"])


def black_holed(port: int, wait: float = 1.0) -> float | None:
    """Seconds a connect to the port waited before giving up (about `wait`: it is a black hole), or None if it connected."""
    probe = socket.socket()
    probe.settimeout(wait)
    started = time.perf_counter()
    try:
        probe.connect(("127.0.0.1", port))
    except (socket.timeout, TimeoutError):
        return time.perf_counter() - started
    finally:
        probe.close()
    return None
