"""zod schemas as JSON Schema, read from parsed JavaScript (`jsparse.py`), never evaluated.

z.string/number/int/boolean/array/object/enum/literal/union/record … with .optional(), .nullable(), .default(),
.describe(), .min()/.max(), .int(), .url()/.email(), .partial(), .extend()/.merge(); `.shape` of an object; compiled
namespaces (`zod_1.z`); `zodToJsonSchema(X)` and `z.toJSONSchema(X)`. Depth is bounded.
"""

from __future__ import annotations

from typing import Any

from pipeline.analyze.jsparse import MAX_DEPTH, Source, deref, last_name, string_value, to_json

ZOD_TYPES = {"string": "string", "number": "number", "int": "integer", "bigint": "integer", "boolean": "boolean", "date": "string",
             "array": "array", "object": "object", "record": "object", "map": "object", "enum": "string", "nativeEnum": None, "literal": None,
             "union": None, "discriminatedUnion": None, "any": None, "unknown": None, "null": "null", "tuple": "array", "set": "array",
             "email": "string", "url": "string", "uuid": "string", "coerce": None, "intersection": None, "lazy": None, "custom": None,
             "instanceof": None, "optional": None, "nullable": None}
TO_JSON_SCHEMA = {"zodToJsonSchema", "toJSONSchema", "toJsonSchema", "zodToJSONSchema"}


def input_schema(source: Source, node: tuple, at: int) -> dict | None:
    """JSON Schema from a zod shape ({a: z.string()}), a z.object(...), a literal JSON Schema or zodToJsonSchema(X)."""
    node = deref(source, node, at)
    if node[0] == "member" and node[2] == "shape":
        node = deref(source, node[1], at)
    if node[0] == "call" and last_name(node[1]) in TO_JSON_SCHEMA and node[2]:
        node = deref(source, node[2][0], at)
    if node[0] == "obj":
        values = [deref(source, v, at) for v in node[1].values()]
        if not values and not node[2]:
            return {"type": "object", "properties": {}}
        if values and all(zod_schema(source, v, at, 0) is not None for v in values):
            return zod_object(source, node, at, 0)
        literal = to_json(source, node, at)
        return literal if isinstance(literal, dict) else None
    converted = zod_schema(source, node, at, 0)
    return converted[0] if converted is not None else None


def zod_object(source: Source, shape: tuple, at: int, depth: int) -> dict:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spread in shape[2]:
        inner = zod_schema(source, deref(source, ("member", spread, "shape") if spread[0] != "obj" else spread, at), at, depth + 1)
        if inner is not None and isinstance(inner[0].get("properties"), dict):
            properties.update(inner[0]["properties"])
            required += inner[0].get("required", [])
    for key, value in shape[1].items():
        converted = zod_schema(source, value, at, depth + 1)
        properties[key] = converted[0] if converted else {}
        if converted is None or not converted[1]:
            required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def zod_schema(source: Source, node: tuple, at: int, depth: int) -> tuple[dict, bool] | None:
    """(JSON Schema, optional) for a zod expression, None when the node is not one."""
    if depth > MAX_DEPTH:
        return None
    node = deref(source, node, at)
    if node[0] == "member" and node[2] == "shape":
        inner = zod_schema(source, node[1], at, depth + 1)
        return inner
    if node[0] != "call" or node[1][0] != "member":
        return None
    receiver, method, args = node[1][1], node[1][2], node[2]
    if _is_zod_namespace(receiver):
        if method not in ZOD_TYPES:
            return None
        return _zod_base(source, method, args, at, depth), method == "optional"
    inner = zod_schema(source, receiver, at, depth + 1)
    if inner is None:
        return None
    schema, optional = dict(inner[0]), inner[1]
    first = args[0] if args else ("other",)
    if method in ("optional", "nullish"):
        optional = True
    elif method == "default":
        optional = True
        value = to_json(source, first, at)
        if value is not None:
            schema["default"] = value
    elif method == "describe" and (text := string_value(source, first, at)) is not None:
        schema["description"] = text
    elif method == "int":
        schema["type"] = "integer"
    elif method in ("min", "max", "length", "gte", "lte", "nonempty") and (method == "nonempty" or first[0] == "num"):
        bound = 1 if method == "nonempty" else first[1]
        kind = schema.get("type")
        lower = method in ("min", "gte", "nonempty")
        if kind == "string":
            schema["minLength" if lower else "maxLength"] = bound
        elif kind == "array":
            schema["minItems" if lower else "maxItems"] = bound
        elif kind in ("number", "integer"):
            schema["minimum" if lower else "maximum"] = bound
    elif method in ("email", "url", "uuid", "datetime"):
        schema["format"] = {"datetime": "date-time", "url": "uri"}.get(method, method)
    elif method == "partial":
        schema.pop("required", None)
    elif method in ("extend", "merge") and args:
        extra = zod_object(source, first, at, depth + 1) if deref(source, first, at)[0] == "obj" else (
            (zod_schema(source, first, at, depth + 1) or ({}, False))[0])
        schema["properties"] = {**schema.get("properties", {}), **extra.get("properties", {})}
        schema["required"] = list(dict.fromkeys(schema.get("required", []) + extra.get("required", [])))
    return schema, optional


def _zod_base(source: Source, method: str, args: list[tuple], at: int, depth: int) -> dict:
    kind = ZOD_TYPES.get(method)
    schema: dict[str, Any] = {"type": kind} if kind else {}
    first = args[0] if args else ("other",)
    if method == "object" and deref(source, first, at)[0] == "obj":
        return zod_object(source, deref(source, first, at), at, depth + 1)
    if method in ("array", "set") and args:
        items = zod_schema(source, first, at, depth + 1)
        schema["items"] = items[0] if items else {}
    elif method == "enum":
        values = to_json(source, first, at)
        if isinstance(values, list) and all(v is not None for v in values):
            schema["enum"] = values
    elif method == "literal":
        value = to_json(source, first, at)
        schema = {"const": value} if value is not None else {}
    elif method in ("union", "discriminatedUnion"):
        options = to_json(source, ("arr", []), at)
        members = deref(source, args[-1] if args else ("other",), at)
        if members[0] == "arr":
            options = [(zod_schema(source, m, at, depth + 1) or ({}, False))[0] for m in members[1]]
        schema = {"anyOf": options} if options else {}
    elif method in ("email", "url", "uuid"):
        schema["format"] = {"url": "uri"}.get(method, method)
    return schema


def _is_zod_namespace(node: tuple) -> bool:
    """`z`, `zod`, and compiled forms: `zod_1.z`, `zod.z`, `(0, zod_1.z)`."""
    if node[0] == "ref":
        return node[1] in ("z", "zod", "zod_1", "Zod")
    return node[0] == "member" and node[2] == "z"
