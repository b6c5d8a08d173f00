"""A pydantic model's JSON schema in the forms the providers' structured-output modes accept (deviation 114)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def strict_schema(model: type[BaseModel]) -> dict[str, Any] | None:
    """The schema for OpenAI's strict mode, or None when the model cannot be strict: strict mode needs every property
    required, no defaults and additionalProperties false on every object (we add the last)."""
    schema = copy.deepcopy(model.model_json_schema())
    return schema if _make_strict(schema) else None


_SUBSCHEMA = ("items", "anyOf", "allOf", "oneOf", "prefixItems", "not")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def _make_strict(node: Any) -> bool:
    if isinstance(node, list):
        return all(_make_strict(item) for item in node)
    if not isinstance(node, dict):
        return True
    if "default" in node:
        return False
    if node.get("type") == "object" or "properties" in node:
        properties = node.get("properties", {})
        if set(node.get("required", [])) != set(properties) or node.get("additionalProperties") not in (None, False):
            return False
        node["additionalProperties"] = False
    children = [node[key] for key in _SUBSCHEMA if key in node]
    children += [value for key in _SUBSCHEMA_MAPS if isinstance(node.get(key), dict) for value in node[key].values()]
    return all(_make_strict(child) for child in children)


# The JSON Schema keywords Gemini's response_json_schema takes (google-genai's GenerateContentConfig documents them);
# the model may refuse or ignore any other. A dropped bound is said in the description, and pydantic still checks it.
GEMINI_KEYWORDS = frozenset({"$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items",
                             "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties",
                             "additionalProperties", "required", "propertyOrdering"})
_SAID = {"maxLength": "at most {} characters", "minLength": "at least {} characters", "pattern": "matching {}",
         "exclusiveMinimum": "above {}", "exclusiveMaximum": "below {}", "const": "exactly {}"}


def gemini_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _gemini(model.model_json_schema())


def _gemini(node: Any) -> Any:
    if isinstance(node, list):
        return [_gemini(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:  # a $ref takes no sibling but $-keywords
        return {key: value for key, value in node.items() if key.startswith("$")}
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            kept[key] = {name: _gemini(child) for name, child in value.items()}
        elif key in GEMINI_KEYWORDS:
            kept[key] = value if key in ("enum", "required", "propertyOrdering") else _gemini(value)
    said = [template.format(node[key]) for key, template in _SAID.items() if key in node]
    if said:
        kept["description"] = "; ".join(filter(None, [str(node.get("description", "")).strip()] + said))
    return kept
