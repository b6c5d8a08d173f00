"""Servers that test whether the prober names each case right, as raw JSON-RPC: python naming_zoo.py FAULT (stdio).

The same answers are served over Streamable HTTP by tests/test_probe_naming.py (`answer` is shared), legacy era only.

Faults: many-tools (1,000 tools, a few with invalid schemas, bad or duplicate names, one entry not an object),
fuzz-crash (a read-only tool that dies on an oversized argument: the process exits with code 7, or the HTTP
connection drops), drop-on-list (dies the same way when asked for its tools), paged-loop (tools, resources and
prompts whose cursors loop and whose pages repeat items), templates-fail (resources/list answers,
resources/templates/list fails), banner (1,500 log lines on stdout before the first answer, and one before each),
babble (endless lines that are not JSON after initialize), hang-call (a read-only tool whose calls are never answered),
deep-list (stdio: a tool list nested 5,000 levels deep, deeper than any JSON parser here goes).
"""

from __future__ import annotations

import json
import sys

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
EXIT_CODE = 7


def tool(name, **fields):
    return {"name": name, "description": f"Get {name} by its id.", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            **fields}


def many_tools() -> list:
    tools = [tool(f"get_item_{i}") for i in range(1000)]
    tools[0]["annotations"] = READ_ONLY  # the one tool fit to call (twice over: see 703)
    tools[10]["inputSchema"] = {"type": "string"}
    tools[500]["inputSchema"] = [1, 2]
    tools[600]["outputSchema"] = {"type": "object", "properties": 5}
    tools[700] = {"description": "A tool with no name.", "inputSchema": {"type": "object"}, "annotations": READ_ONLY}
    tools[701] = dict(tools[701], name=42, annotations=READ_ONLY)
    tools[702] = dict(tools[702], name="get item!")
    tools[703] = dict(tools[0])  # the one callable tool listed again, word for word: called once (a differing twin never is)
    tools[704] = "not a tool"
    return tools


# paged-loop: cursor -> (items' names, next cursor); the third page repeats the first's items, then loops back to "b".
PAGES = {None: (["get_a", "get_b"], "b"), "b": (["get_c"], "c"), "c": (["get_a", "get_c"], "b")}


def page(method: str, cursor) -> dict:
    names, following = PAGES.get(cursor, ([], None))
    if method == "tools/list":
        return {"tools": [tool(n, annotations=READ_ONLY) for n in names], "nextCursor": following}
    if method == "resources/list":
        return {"resources": [{"uri": f"file:///{n}", "name": n} for n in names], "nextCursor": following}
    if method == "prompts/list":
        return {"prompts": [{"name": n} for n in names], "nextCursor": following}
    return {"resourceTemplates": [], "nextCursor": None}


def capabilities(fault: str) -> dict:
    if fault == "paged-loop":
        return {"tools": {}, "resources": {}, "prompts": {}}
    if fault == "templates-fail":
        return {"tools": {}, "resources": {}}
    return {"tools": {}}


def answer(fault: str, request: dict):
    """The JSON-RPC answer to `request`: a dict, None (no answer), "die" (exit, or drop the connection) or "hang" (never answer)."""
    method, rid, params = request.get("method"), request.get("id"), request.get("params") or {}
    if rid is None:
        return None
    result = None
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": capabilities(fault), "serverInfo": {"name": "naming-" + fault, "version": "0.0.1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list" and fault == "drop-on-list":
        return "die"
    elif method == "tools/list" and fault == "many-tools":
        result = {"tools": many_tools()}
    elif method in ("tools/list", "resources/list", "prompts/list", "resources/templates/list") and fault == "paged-loop":
        result = page(method, params.get("cursor"))
    elif method == "tools/list" and fault in ("fuzz-crash", "hang-call"):
        result = {"tools": [{"name": "get_echo", "description": "Get the text back.", "annotations": READ_ONLY,
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif method == "tools/list":
        result = {"tools": [tool("get_thing")]}
    elif method == "resources/list" and fault == "templates-fail":
        result = {"resources": [{"uri": "file:///readme", "name": "readme"}]}
    elif method == "resources/templates/list" and fault == "templates-fail":
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "templates are broken"}}
    elif method == "tools/call" and fault == "fuzz-crash" and len(str(params.get("arguments", {}).get("text", ""))) > 1000:
        return "die"
    elif method == "tools/call" and fault == "hang-call" and params.get("name") == "get_echo":
        return "hang"
    elif method == "tools/call" and fault in ("fuzz-crash", "paged-loop", "many-tools"):
        result = {"content": [{"type": "text", "text": f"the thing from {params.get('name')}"}]}
    if result is None:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main(fault: str) -> None:
    def send(message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    if fault == "banner":
        print("Starting naming-banner v0.0.1 ...", *(f"[debug] loaded module {i}" for i in range(1500)), "[info] ready", sep="\n", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if fault == "babble" and request.get("method") == "initialize":
            while True:
                print("[debug] still warming up, please wait", flush=True)
        if fault == "deep-list" and request.get("method") == "tools/list":  # written by hand: json.dumps cannot go this deep
            deep = '{"type":"object","properties":{"a":' * 5000 + "{}" + "}}" * 5000
            print(f'{{"jsonrpc":"2.0","id":{request["id"]},"result":{{"tools":[{{"name":"get_deep","inputSchema":{deep}}}]}}}}', flush=True)
            continue
        reply = answer(fault, request)
        if reply == "die":
            sys.exit(EXIT_CODE)
        if reply not in (None, "hang"):
            if fault == "banner":
                print(f"[info] handling {request.get('method')}", flush=True)
            send(reply)


if __name__ == "__main__":
    main(sys.argv[1])
