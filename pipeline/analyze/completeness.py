"""Seed 000's static schema completeness: base 40 when tool definitions are found, + up to 60 for the share of
schema markers present, capped at 60 without inputSchema/parameters and at 70 without descriptions.

The seed counts its markers (inputSchema, parameters, properties, description, type, required) in the source text;
we count them per extracted tool, on the schema the extractor read (deviation 46): a marker in a comment or in
unrelated code earns nothing, and every tool weighs the same.
"""

from __future__ import annotations

from typing import Any

from pipeline.models import ExtractedTool

MARKERS = ("inputSchema", "parameters", "properties", "description", "type", "required")
TYPED = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref")


def schema_completeness(tools: list[ExtractedTool] | None) -> dict[str, Any] | None:
    """None when no tool definition was found (not measured)."""
    if not tools:
        return None
    present = {marker: 0 for marker in MARKERS}
    for tool in tools:
        for marker, met in tool_markers(tool).items():
            present[marker] += met
    shares = {marker: count / len(tools) for marker, count in present.items()}
    value = 40 + 60 * sum(shares.values()) / len(MARKERS)
    caps = []
    if not (present["inputSchema"] or present["parameters"]):
        value, caps = min(value, 60), caps + ["no inputSchema or parameters"]
    if not present["description"]:
        value, caps = min(value, 70), caps + ["no descriptions"]
    return {"value": round(value, 1), "tools": len(tools), "markers": {k: round(v, 3) for k, v in shares.items()}, "caps": caps,
            "basis": "extracted tools"}


def tool_markers(tool: ExtractedTool) -> dict[str, bool]:
    """The seed's six markers read on one tool: an input schema; declared parameters (a `properties` object, empty for a
    tool without any); every parameter described; the tool described; the schema and every parameter typed; a `required`
    list wherever there are parameters."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    parameters = list(properties.values()) if isinstance(properties, dict) else []
    described = all(isinstance(p, dict) and p.get("description") for p in parameters)
    typed = all(isinstance(p, dict) and any(k in p for k in TYPED) for p in parameters)
    return {
        "inputSchema": bool(schema),
        "parameters": isinstance(properties, dict),
        "properties": isinstance(properties, dict) and described,
        "description": bool((tool.description or "").strip()),
        "type": schema.get("type") == "object" and typed,
        "required": isinstance(properties, dict) and (not parameters or isinstance(schema.get("required"), list)),
    }
