"""A raw JSON-RPC stdio MCP server that misbehaves on purpose: python raw_stdio.py FAULT.

Faults: silent, garbage, exit-early, bad-version, bad-schema, crash-on-list, slow-list, huge-list (a 1 MB line),
endless-line (bytes without end, no newline), bad-bytes (an undecodable line before each answer), modern-only
(answers server/discover at 2026-07-28 and refuses initialize), flood (answers initialize with log notifications
for ever), hostile-schemas (a read-only tool whose outputSchema pattern backtracks catastrophically on the result
it returns, and one that asks for a billion items), stderr-flood (writes to stderr for ever), mute-after-initialize
(answers the handshake, then nothing), good.
"""

import json
import sys
import time

FAULT = sys.argv[1] if len(sys.argv) > 1 else "good"

TOOL = {"name": "get_thing", "description": "Get a thing by its id.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "description": "The thing's id."}}, "required": ["id"]}}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if FAULT == "stderr-flood":  # logs without end: the sandbox's file-size limit must stop it
    while True:
        sys.stderr.write("x" * 1_000_000 + "\n")

if FAULT == "exit-early":
    sys.stderr.write("fatal: missing configuration FOO_API_KEY\n")
    sys.exit(3)

initialized = False
for line in sys.stdin:
    if FAULT == "silent" or (FAULT == "mute-after-initialize" and initialized):
        continue
    if FAULT == "garbage":
        sys.stdout.write("this is not json {{{\n")
        sys.stdout.flush()
        continue
    try:
        request = json.loads(line)
    except ValueError:
        continue
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        continue  # a notification
    if method == "server/discover" and FAULT == "modern-only":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw-modern-only", "version": "0.0.1"}}}})
    elif method == "initialize" and FAULT == "modern-only":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "this server speaks 2026-07-28 only"}})
    elif method == "initialize" and FAULT == "flood":
        while True:
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "still starting"}})
    elif method == "initialize":
        initialized = True
        version = "1999-01-01" if FAULT == "bad-version" else "2025-06-18"
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                      "serverInfo": {"name": "raw-" + FAULT, "version": "0.0.1"}}})
    elif method == "tools/list":
        if FAULT == "crash-on-list":
            sys.stderr.write("segfault (simulated)\n")
            sys.exit(1)
        if FAULT == "slow-list":
            time.sleep(30)
        if FAULT == "endless-line":
            while True:
                sys.stdout.write("x" * 65536)
                sys.stdout.flush()
        if FAULT == "bad-bytes":
            sys.stdout.buffer.write(b"\xff\xfe not utf-8 \xc3\x28\n")
            sys.stdout.flush()
        if FAULT == "huge-list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [dict(TOOL, description="x" * 1_000_000)]}})
            continue
        tool = dict(TOOL, inputSchema={"type": "string"}) if FAULT == "bad-schema" else TOOL
        tools = [tool]
        if FAULT == "hostile-schemas":
            read_only = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
            tools = [{"name": "get_code", "description": "Get the code.", "annotations": read_only, "inputSchema": {"type": "object"},
                      "outputSchema": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a|aa)+$"}}}},
                     {"name": "list_items", "description": "List items by id.", "annotations": read_only,
                      "inputSchema": {"type": "object", "properties": {"ids": {"type": "array", "minItems": 1_000_000_000}}, "required": ["ids"]}}]
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "tools/call" and FAULT == "hostile-schemas" and request["params"]["name"] == "get_code":
        code = "a" * 200 + "!"
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": code}], "structuredContent": {"code": code}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
