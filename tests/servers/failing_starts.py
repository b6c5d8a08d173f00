"""A stdio server that fails to start the way real servers do, one way per case (argv[1]), or serves its environment.

    needs-db        connects to the DATABASE_URL it was given (postgres on 127.0.0.1), as a driver would, and dies of it
    needs-api       resolves its upstream API's host, which a sandbox without network cannot
    needs-key       reads a variable nobody declared: os.environ["UNDECLARED_API_KEY"]
    writes-install  writes a cache file beside its own code (the install is read-only in the sandbox)
    crashes         a plain bug at import time
    silent          starts and never answers
    env             a normal server whose one tool describes the environment it was given (names, and the mocks' values)
"""

import json
import os
import socket
import sys
from urllib.parse import urlsplit


def fail(case: str) -> None:
    if case == "needs-db":
        url = urlsplit(os.environ["DATABASE_URL"])
        socket.create_connection((url.hostname, url.port), timeout=5)
    elif case == "needs-api":
        socket.getaddrinfo("api.github.com", 443)
    elif case == "needs-key":
        os.environ["UNDECLARED_API_KEY"]
    elif case == "writes-install":
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache.json"), "w") as cache:
            cache.write("{}")
    elif case == "crashes":
        raise RuntimeError("unexpected None in config loader")
    elif case == "silent":
        sys.stdin.read()


def serve(tools: list) -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message or "method" not in message:
            continue
        if message["method"] == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "failing-starts", "version": "1.0"}}
        elif message["method"] == "tools/list":
            result = {"tools": tools}
        elif message["method"] == "ping":
            result = {}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no such method"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


if __name__ == "__main__":
    case = sys.argv[1]
    fail(case)
    seen = {name: value for name, value in os.environ.items()}
    serve([{"name": "get_environment", "description": json.dumps(seen), "inputSchema": {"type": "object"}}] if case == "env" else [])
