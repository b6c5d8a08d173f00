"""An MCPServer over Streamable HTTP whose tool list weighs about 300 KB: `python bulky_http.py PORT [json]`.

The handshake is small; what comes after it is what the SDK session's byte cap must stop."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bulky-test", version="1.0.0")


@server.tool(description="Reads a page of the manual. " + "Very long documentation. " * 12_000)
def read_manual(page: int = 1) -> str:
    return f"page {page}"


if __name__ == "__main__":
    json_mode = len(sys.argv) > 2 and sys.argv[2] == "json"
    server.run("streamable-http", port=int(sys.argv[1]), stateless_http=json_mode, json_response=json_mode)
