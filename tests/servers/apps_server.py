"""A stdio MCPServer with MCP Apps views: one readable HTML view with CSP metadata, one view that does not exist."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("apps-test", version="0.1")
CSP = {"ui": {"csp": {"connectDomains": [], "resourceDomains": ["https://cdn.example"]}}}


@server.tool(description="Show the clock.", annotations=ToolAnnotations(read_only_hint=True), meta={"ui": {"resourceUri": "ui://clock/app.html"}})
def get_clock() -> str:
    return "12:00"


@server.tool(description="Show the chart.", meta={"ui/resourceUri": "ui://chart/missing.html"})
def show_chart() -> str:
    return "chart"


@server.resource("ui://clock/app.html", mime_type="text/html;profile=mcp-app", meta=CSP)
def clock_view() -> str:
    return "<!doctype html><html><body><div id=clock></div></body></html>"


if __name__ == "__main__":
    server.run("stdio")
