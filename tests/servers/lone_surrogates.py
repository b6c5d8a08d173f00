"""A server whose JSON escapes lone surrogates, as raw JSON-RPC: python lone_surrogates.py (stdio).

Its server name holds a lone high surrogate; one tool's description a lone high one, beside a valid pair and an
escaped backslash before "ud800" (text, not an escape); another tool's title a lone low one, and a key of its
schema a lone high one. The SDK's strict parser refuses such a message whole; the prober's transports let it
through with U+FFFD in each lone half's place. `answer` is shared: tests/test_probe_surrogates.py serves it
over Streamable HTTP, tests/test_probe_sse.py over HTTP+SSE.
"""

from __future__ import annotations

import json
import sys

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
DESCRIPTION = "Get a thing by its id. \ud800 A pair stays: \U0001f600. A backslash stays text: \\ud800"
TOOLS = [
    {"name": "get_thing", "description": DESCRIPTION, "annotations": READ_ONLY,
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
    {"name": "get_other", "title": "Other \udc00 thing", "description": "Get the other thing.", "annotations": READ_ONLY,
     "inputSchema": {"type": "object", "properties": {"q\ud800": {"type": "string"}}}},
]


def answer(request: dict) -> dict | None:
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                        "serverInfo": {"name": "lone\ud800name", "version": "1"}}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}}
    if method == "tools/call":
        return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "a thing \udfff"}]}}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"{method}: not here"}}


if __name__ == "__main__":
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line))
        except ValueError:
            continue
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")  # json.dumps escapes every surrogate half: \ud800
            sys.stdout.flush()
