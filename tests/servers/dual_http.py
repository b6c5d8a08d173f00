"""A well-behaved MCPServer over Streamable HTTP, for negotiation tests: `python dual_http.py PORT [json]`."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("dual-test", instructions="Answers the time in one zone.", version="1.2.3")


@server.tool(description="The current time in a time zone. Read-only.")
def now(zone: str = "UTC") -> str:
    return f"12:00 in {zone}"


if __name__ == "__main__":
    json_mode = len(sys.argv) > 2 and sys.argv[2] == "json"
    server.run("streamable-http", port=int(sys.argv[1]), stateless_http=json_mode, json_response=json_mode)
