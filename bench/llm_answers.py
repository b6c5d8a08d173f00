"""What bench/llm_endpoint.py answers: a deterministic judge's reading of the tool JSON in a prompt, lenient or strict
by model so judges disagree on a poor schema and agree on a good one, and the smallest valid instance of any other
requested schema."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pipeline.text import injection_findings, tool_texts

# How lenient each model's reading is: a score s becomes s + (100 - s) * leniency. A poor schema (s <= 40) is read
# 27+ points apart by gpt-5-nano and gemini-2.0-flash, a good one (s >= 90) within 5.
LENIENCY = {"gpt-5-nano": 0.0, "gpt-4.1-nano": 0.1, "mistral-small-2501": 0.2, "gemini-2.0-flash": 0.45}
VERB = re.compile(r"^\s*(get|list|read|search|fetch|find|create|update|delete|write|send|run|add|remove|set|query|return|"
                  r"retrieve|show|describe|check|move|edit|open|close|convert|generate)\w*\b", re.I)


def find_tool(text: str) -> dict[str, Any] | None:
    """The largest JSON object in the prompt that reads as a tool (a name, a description or an input schema)."""
    decoder = json.JSONDecoder()
    best: dict[str, Any] | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and {"name", "description", "inputSchema", "input_schema", "parameters"} & set(value):
            if best is None or len(json.dumps(value)) > len(json.dumps(best)):
                best = value
        position = text.find("{", end)
    return best


def reading(tool: dict[str, Any] | None) -> tuple[float, float]:
    """A plain reading of a tool: (clarity, input completeness) in 0-100."""
    if tool is None:
        return 10.0, 10.0
    description = str(tool.get("description") or "").strip()
    clarity = (35 if len(description) >= 20 else 15 if description else 0) + (20 if len(description) >= 80 else 0)
    clarity += 20 if VERB.search(description) else 0
    clarity += 15 if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*([_\-.][A-Za-z0-9]+)*", str(tool.get("name", ""))) else 0
    clarity += 10 if tool.get("title") or tool.get("annotations") else 0
    schema = _input_schema(tool)
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    if not properties:
        return float(min(clarity, 100)), 90.0
    typed = sum(1 for p in properties.values() if isinstance(p, dict) and ({"type", "enum", "$ref", "anyOf", "oneOf"} & set(p)))
    described = sum(1 for p in properties.values() if isinstance(p, dict) and str(p.get("description") or "").strip())
    completeness = 100 * (0.4 * typed + 0.4 * described) / len(properties) + (20 if "required" in schema else 0)
    return float(min(clarity, 100)), float(min(completeness, 100))


def leniency(model: str) -> float:
    if model in LENIENCY:
        return LENIENCY[model]
    return int(hashlib.sha256(model.encode()).hexdigest(), 16) % 5 * 0.12


def judge(user: str, model: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A verdict on the tool in the user message, read as `model` reads, in the fields `schema` asks for."""
    # The tool as JSON in the prompt, or as a JSON string quoted once more (escaped quotes).
    tool = find_tool(user) or find_tool(user.replace('\\"', '"'))
    clarity, completeness = reading(tool)
    lean = leniency(model)
    clarity, completeness = clarity + (100 - clarity) * lean, completeness + (100 - completeness) * lean
    directive = tool is not None and any(injection_findings(text) for _, _, text in tool_texts([{**tool, "inputSchema": _input_schema(tool)}]))
    described = "no tool found in the prompt" if tool is None else f"description of {len(str(tool.get('description') or ''))} chars"
    values = {"clarity": clarity, "input_completeness": completeness, "confidence": (clarity + completeness) / 2,
              "rationale": f"{described}; read with leniency {lean:.2f}" + ("; the text instructs its reader" if directive else ""),
              "directive": directive}
    answer = minimal_instance(schema, schema)
    properties = schema.get("properties", {})
    for key, value in values.items():
        if key in properties:
            answer[key] = _fit(value, _resolve(properties[key], schema))
    return answer


def _input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The parameters' schema under any of the names tools are written with (MCP, Anthropic, OpenAI)."""
    return next((tool[k] for k in ("inputSchema", "input_schema", "parameters") if isinstance(tool.get(k), dict)), {})


def _fit(value: Any, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return int(round(value))
    if kind == "number":
        return round(float(value), 1)
    if kind == "string" and isinstance(value, str) and "maxLength" in schema:
        return value[: schema["maxLength"]]
    return value


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return target if isinstance(target, dict) else {}
    return node


def minimal_instance(node: dict[str, Any], root: dict[str, Any]) -> Any:
    """The smallest value valid under a JSON schema as pydantic writes them: required properties only, lower bounds."""
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if node.get(key):
            return minimal_instance(node[key][0], root)
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in node:
        return {name: minimal_instance(node["properties"][name], root) for name in node.get("required", []) if name in node.get("properties", {})}
    if kind == "array":
        return [minimal_instance(node.get("items", {}), root) for _ in range(node.get("minItems", 0))]
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in node else 0))
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    return None


FORMATS = {"uri": "https://example.invalid/", "date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "email": "a@example.invalid"}


def _string(node: dict[str, Any]) -> str:
    """A short string for a string schema: its format's example, or the first alternative of a simple pattern."""
    if node.get("format") in FORMATS:
        return FORMATS[node["format"]]
    plain = "x" * node.get("minLength", 0)
    pattern = node.get("pattern")
    if not isinstance(pattern, str):
        return plain
    guess = re.split(r"[|)]", pattern.strip("^$").lstrip("("))[0]
    for candidate in (guess, plain, "x"):
        try:
            if re.search(pattern, candidate):
                return candidate
        except re.error:
            break
    return plain


def violation(schema: dict[str, Any], content: dict[str, Any]) -> Any:
    """Valid JSON that breaks the schema: the first required property given a value of no scalar type."""
    required = schema.get("required") or list(schema.get("properties", {}))
    if not required:
        return ["not", "an", "object"]
    return {**content, required[0]: {"unexpected": "shape"}}
