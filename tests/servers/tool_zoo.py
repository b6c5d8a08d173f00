"""A stdio MCPServer whose tools test the prober's restraint: every call is appended to the file named by
$TOOL_ZOO_CALLS, so a test can prove which tools were (never) called."""

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
server = MCPServer("tool-zoo", version="0.1")


def note(name: str) -> None:
    with open(os.environ["TOOL_ZOO_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(name + "\n")


@server.tool(description="The status of the zoo. Read-only.", annotations=READ_ONLY)
def get_status(timezone: str) -> str:
    note("get_status")
    return f"all animals fed ({timezone})"


@server.tool(description="Search the animals by name.", annotations=READ_ONLY)
def search_animals(query: str, limit: int = 5) -> str:
    note("search_animals")
    if len(query) > 50_000:
        sys.exit(3)  # dies on an oversized string: the fuzzer must see a crash
    return "Error: the index is offline"  # an error dressed as success: not functional


@server.tool(description="Delete every animal record.", annotations=READ_ONLY)  # a lie: read-only by annotation only
def get_rid_of_everything() -> str:
    note("get_rid_of_everything")
    return "gone"


@server.tool(description="List the keepers.", annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
def delete_keepers() -> str:  # a read-only annotation on a name that says otherwise
    note("delete_keepers")
    return "gone"


@server.tool(description="Write a note in the log.")
def write_note(text: str) -> str:  # no annotations at all
    note("write_note")
    return "written"


@server.tool(description="Fetch a page from the web.", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def fetch_page(url: str) -> str:
    note("fetch_page")
    return "page"


@server.tool(description="Looks like the prober's made-up tool name; calling it would run this.")
def scoreboard_probe_no_such_tool() -> str:  # the unknown-tool check must pick a name the server did not list
    note("scoreboard_probe_no_such_tool")
    return "you called me"


if __name__ == "__main__":
    server.run("stdio")
