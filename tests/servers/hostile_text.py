"""An MCP server whose strings are hostile text: python hostile_text.py [PORT] MODE.

The text is sent as JSON escapes, as a careless or hostile server would send it: a lone surrogate,
NUL, C0 and C1 controls, terminal escape sequences, bidi overrides, noncharacters and a formula.
MODE `refuse` answers `initialize` with a JSON-RPC error whose message is that text (the prober
records it as the probe's detail); MODE `tools` completes the handshake and puts the text in its
server info, instructions, tool name, title and description, and in the error of every call it
refuses. With PORT it serves stateless Streamable HTTP (one JSON answer per POST) on that port; without,
newline-delimited JSON-RPC over stdio.
"""

import asyncio
import json
import sys

HOSTILE = "\ud800 =cmd|'/c calc'!A1 \x00\x01\x1b[31mred\x1b]0;title\x07\x9b2J \u202eevil\u2066 \ufffe\uffff\x7f\r\nend"
PORT = int(sys.argv.pop(1)) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
MODE = sys.argv[1] if len(sys.argv) > 1 else "tools"


def answer(request):
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None
    if method == "initialize" and MODE == "refuse":
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": HOSTILE}}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "instructions": HOSTILE,
            "serverInfo": {"name": "hostile" + HOSTILE, "title": HOSTILE, "version": "1" + HOSTILE}}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [
            {"name": "get_" + HOSTILE, "title": HOSTILE, "description": "Get a thing. " + HOSTILE,
             "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "description": HOSTILE}}}}]}}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"{method}: {HOSTILE}"}}


def stdio():
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line))
        except ValueError:
            continue
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


async def http(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
        body = await reader.readexactly(length) if length else b""
        reply = answer(json.loads(body)) if head.startswith(b"POST") and body else None
        if reply is None:
            status, payload = ("202 Accepted" if head.startswith(b"POST") else "405 Method Not Allowed"), b""
        else:
            status, payload = "200 OK", json.dumps(reply).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                     "Connection: close\r\n\r\n".encode() + payload)
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def serve(port):
    server = await asyncio.start_server(http, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if PORT:
        asyncio.run(serve(PORT))
    else:
        stdio()
