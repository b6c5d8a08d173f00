"""Seed 000's static schema completeness: base 40 when tool definitions are found, + up to 60 for the share of
schema markers present, capped at 60 without inputSchema/parameters and at 70 without descriptions.

The seed counts its markers (inputSchema, parameters, properties, description, type, required) in the source text;
we count them per extracted tool, on the schema the extractor read (deviation 48): a marker in a comment or in
unrelated code earns nothing, and every tool weighs the same.
"""

from __future__ import annotations

from typing import Any

from pipeline.models import ExtractedTool

MARKERS = ("inputSchema", "parameters", "properties", "description", "type", "required")
TYPED = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref")


def schema_completeness(tools: list[ExtractedTool] | None) -> dict[str, Any] | None:
    """None when no tool definition was found, or no tool's schema could be read (not measured). A schema the extractor
    could not read (`{}`: imported from another file, computed) is unknown, not missing: the schema markers are counted
    on the tools whose schema was read, the description marker on every tool."""
    if not tools:
        return None
    read = [t for t in tools if t.input_schema]
    if not read:
        return None
    shares = {marker: sum(tool_markers(t)[marker] for t in (tools if marker == "description" else read))
              / len(tools if marker == "description" else read) for marker in MARKERS}
    value = 40 + 60 * sum(shares.values()) / len(MARKERS)
    caps = []
    if not (shares["inputSchema"] or shares["parameters"]):
        value, caps = min(value, 60), caps + ["no inputSchema or parameters"]
    if not shares["description"]:
        value, caps = min(value, 70), caps + ["no descriptions"]
    return {"value": round(value, 1), "tools": len(tools), "schemas_read": len(read), "markers": {k: round(v, 3) for k, v in shares.items()},
            "caps": caps, "basis": "extracted tools"}


def tool_markers(tool: ExtractedTool) -> dict[str, bool]:
    """The seed's six markers read on one tool: an object input schema; declared parameters (a `properties` object, empty for a
    tool without any); every parameter described; the tool described; the schema and every parameter typed; a `required`
    list wherever there are parameters."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    parameters = list(properties.values()) if isinstance(properties, dict) else []
    described = all(isinstance(p, dict) and p.get("description") for p in parameters)
    typed = all(isinstance(p, dict) and any(k in p for k in TYPED) for p in parameters)
    return {
        "inputSchema": schema.get("type") == "object" or isinstance(properties, dict),  # an object schema, as MCP wants
        "parameters": isinstance(properties, dict),
        "properties": isinstance(properties, dict) and described,
        "description": bool((tool.description or "").strip()),
        "type": schema.get("type") == "object" and typed,
        "required": isinstance(properties, dict) and (not parameters or isinstance(schema.get("required"), list)),
    }
