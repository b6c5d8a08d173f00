"""A pydantic model's JSON schema in the forms the providers' structured-output modes accept."""

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
