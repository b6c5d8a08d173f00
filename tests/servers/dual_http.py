"""A well-behaved MCPServer, for negotiation tests: `python dual_http.py PORT [json | sse]` (Streamable HTTP, stateless
with JSON answers, or the legacy HTTP+SSE transport at /sse)."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("dual-test", instructions="Answers the time in one zone.", version="1.2.3")


@server.tool(description="The current time in a time zone. Read-only.")
def now(zone: str = "UTC") -> str:
    return f"12:00 in {zone}"


if __name__ == "__main__":
    mode = sys.argv[2] if len(sys.argv) > 2 else "sse-responses"
    if mode == "sse":
        server.run("sse", port=int(sys.argv[1]))
    else:
        server.run("streamable-http", port=int(sys.argv[1]), stateless_http=mode == "json", json_response=mode == "json")
