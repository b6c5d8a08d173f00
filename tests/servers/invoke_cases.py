"""A stdio MCPServer whose read-only tools test where the prober's arguments come from and how it reads the answers:
values its schema offers (examples, a default, an enum), values the prober must make up, a tool that fails on its own
example, and one that dies on any input. Tools are listed, and so called, in this order; the crash comes last."""

import os
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
server = MCPServer("invoke-cases", version="0.1")


@server.tool(description="Get the forecast for a city the service knows.", annotations=READ_ONLY)
def get_forecast(city: Annotated[str, Field(examples=["Paris"])]) -> str:
    if city != "Paris":
        raise ValueError(f"unknown city {city!r}")
    return "Paris: sunny"


@server.tool(description="Get one page of the listing.", annotations=READ_ONLY)
def get_listing(page: int = 1, order: Literal["asc", "desc"] = "asc") -> str:
    return f"page {page}, {order}"


@server.tool(description="Get a record by its id.", annotations=READ_ONLY)
def get_record(record_id: str) -> str:
    raise ValueError(f"no record {record_id!r}")  # any id we could make up is unknown: a correct refusal


@server.tool(description="Get a product by its code.", annotations=READ_ONLY)
def get_product(code: Annotated[str, Field(examples=["XYZ-1"])]) -> str:
    raise ValueError(f"no product {code!r}")  # fails on the example its own schema offers


@server.tool(description="Get the size of an image.", annotations=READ_ONLY)
def get_image_size(name: str) -> str:
    os._exit(3)  # dies on any input: a crash whoever made up the name


if __name__ == "__main__":
    server.run("stdio")
