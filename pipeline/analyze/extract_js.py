"""Tool definitions in TypeScript and JavaScript, source or compiled (tsc's CommonJS and ES module output alike).

Recognised: the TypeScript SDK's `server.tool(name, [description], [zod shape], [annotations], handler)` in all its
overloads, `server.registerTool(name, {title, description, inputSchema, …}, handler)`, FastMCP-style
`server.addTool({name, description, parameters})`, and `setRequestHandler(ListToolsRequestSchema, …)` handlers whose
`tools` are literal arrays (or constants, spreads, `Object.values` of them) of `{name, description, inputSchema}`.
Zod shapes and chains become JSON Schema; `zodToJsonSchema(X)` / `z.toJSONSchema(X)` read X's zod.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.jsparse import MAX_DEPTH, Source, deref, to_json
from pipeline.models import ExtractedTool

HINT = re.compile(r"\btool\b|registerTool|addTool|ListToolsRequestSchema|inputSchema|defineTool|createTool|MCPTool")
SCHEMA_KEYS = {"inputSchema", "schema", "parameters", "paramsSchema", "argsSchema", "input_schema"}
HANDLER_KEYS = ("handler", "execute", "run", "callback", "cb", "handle", "fn", "call")
ANNOTATION_KEYS = {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
ZOD_TYPES = {"string": "string", "number": "number", "int": "integer", "bigint": "integer", "boolean": "boolean", "date": "string",
             "array": "array", "object": "object", "record": "object", "map": "object", "enum": "string", "nativeEnum": None, "literal": None,
             "union": None, "discriminatedUnion": None, "any": None, "unknown": None, "null": "null", "tuple": "array", "set": "array",
             "email": "string", "url": "string", "uuid": "string", "coerce": None, "intersection": None, "lazy": None, "custom": None,
             "instanceof": None, "optional": None, "nullable": None}
TO_JSON_SCHEMA = {"zodToJsonSchema", "toJSONSchema", "toJsonSchema", "zodToJSONSchema"}


def extract_js(source: SourceFile) -> list[ExtractedTool] | None:
    if not HINT.search(source.text):
        return None
    parsed = Source.read(source.text)
    tools: list[ExtractedTool] = []
    language = "typescript" if source.language == "typescript" else "javascript"
    tokens = parsed.tokens
    wrapped = "@modelcontextprotocol/" in source.text  # a local `tool(name, …)` helper counts only beside the SDK
    count = len(tokens)
    for index, token in enumerate(tokens):
        if token.kind != "id" or index == 0 or index + 1 >= count or tokens[index + 1].value != "(" or tokens[index + 1].kind != "punc":
            continue
        dotted = parsed.at(index - 1, ".") or parsed.at(index - 1, "?.")
        if dotted and token.value in REGISTRATIONS:
            args = parsed.arguments(index + 1)
            pattern, read = REGISTRATIONS[token.value]
            found = read(parsed, args, index)
            found = [found] if found else []
        elif token.value == "tool" and wrapped and not dotted and not (index and tokens[index - 1].value == "function"):
            found = _wrapper_call(parsed, parsed.arguments(index + 1), index)
            pattern = "tool-wrapper"
        elif token.value == "setRequestHandler":
            args = parsed.arguments(index + 1)
            found = _list_tools_handler(parsed, args, index) if args and _last_name(args[0]) == "ListToolsRequestSchema" else []
            pattern = "ListToolsRequestSchema-literal"
        else:
            continue
        for name, description, schema in found:
            tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path, line=parsed.line(index),
                                       language=language, pattern=pattern))
    for index, (name, description, schema) in _tool_classes(parsed):
        tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path, line=parsed.line(index),
                                   language=language, pattern="MCPTool-class"))
    for index, (name, description, schema) in _tool_object_literals(parsed):
        tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path, line=parsed.line(index),
                                   language=language, pattern="tool-object-literal"))
    return tools or None


def _tool_object_literals(source: Source) -> list[tuple[int, tuple[str, str | None, dict]]]:
    """Object literals shaped like an MCP tool anywhere in the file: a string `name` beside an `inputSchema` (tool lists
    built in one place and returned from another, registries, maps of tools); or beside a `schema`/`parameters`-like
    key holding a zod shape or an object schema when a description and a handler function are there too
    (`defineTool({name, description, schema, handler})`)."""
    found: list[tuple[int, tuple[str, str | None, dict]]] = []
    seen: set[int] = set()
    tokens = source.tokens
    for index, token in enumerate(tokens):
        if token.value not in SCHEMA_KEYS or token.kind not in ("id", "str") or not source.at(index + 1, ":") or len(found) >= 500:
            continue
        opening = _enclosing_brace(source, index)
        if opening is None or opening in seen:
            continue
        entries = source._object(opening, source.match[opening], 1)[1]
        name = _string(source, entries["name"], index) if "name" in entries else None
        if name is None or token.value not in entries:  # a key of a nested literal the brackets around it left unclosed
            continue
        description = _string(source, entries["description"], index) if "description" in entries else None
        schema = _input_schema(source, entries[token.value], index)
        if token.value != "inputSchema" and (description is None or schema is None or schema.get("type") != "object"
                                             or not any(entries.get(k, ("other",))[0] == "func" for k in HANDLER_KEYS)):
            continue
        seen.add(opening)
        found.append((opening, (name, description, schema if schema is not None else {})))
    return found


def _tool_classes(source: Source) -> list[tuple[int, tuple[str, str | None, dict]]]:
    """mcp-framework's `class X extends MCPTool { name = "…"; description = "…"; schema = {field: {type: z…, description}} }`,
    and its compiled form (`this.name = "…"` in the constructor)."""
    found: list[tuple[int, tuple[str, str | None, dict]]] = []
    tokens = source.tokens
    for index, token in enumerate(tokens):
        if token.kind != "id" or token.value != "extends":
            continue
        cursor = index + 1
        while cursor < len(tokens) and cursor - index < 8 and not source.at(cursor, "{") and not source.at(cursor, "<"):
            cursor += 1
        if not (cursor < len(tokens) and tokens[cursor - 1].value == "MCPTool"):
            continue
        angles = 0
        while cursor < len(tokens) and (angles or not source.at(cursor, "{")):  # past `<{ message: string }>` type arguments
            angles += {"<": 1, ">": -1}.get(tokens[cursor].value, 0) if tokens[cursor].kind == "punc" else 0
            cursor = source.match[cursor] + 1 if angles and source.at(cursor, "{") and source.match[cursor] > cursor else cursor + 1
        close = source.match[cursor] if cursor < len(tokens) else -1
        if close <= cursor:
            continue
        fields: dict[str, tuple] = {}
        for at in range(cursor + 1, close):
            key = tokens[at]
            if key.kind == "id" and key.value in ("name", "description", "schema") and source.at(at + 1, "=") and key.value not in fields:
                fields[key.value] = source.value(at + 2, 1, close)[0]
        name = _string(source, fields["name"], close) if "name" in fields else None
        if name is None:
            continue
        description = _string(source, fields["description"], close) if "description" in fields else None
        schema = _framework_schema(source, fields.get("schema", ("other",)), close)
        found.append((index, (name, description, schema)))
    return found


def _framework_schema(source: Source, node: tuple, at: int) -> dict:
    """mcp-framework's schema: {field: {type: z.string(), description: "…"}}, or a zod object."""
    node = _resolved(source, node, at)
    if node[0] != "obj" or not all(_resolved(source, v, at)[0] == "obj" for v in node[1].values()):
        return _input_schema(source, node, at) or {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, value in node[1].items():
        entries = _resolved(source, value, at)[1]
        converted = _zod(source, entries["type"], at, 1) if "type" in entries else None
        schema = dict(converted[0]) if converted else {}
        if "description" in entries and (text := _string(source, entries["description"], at)) is not None:
            schema["description"] = text
        properties[key] = schema
        if not (converted and converted[1]):
            required.append(key)
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _wrapper_call(source: Source, args: list[tuple], at: int) -> list[tuple[str, str | None, dict]]:
    """A local helper `tool("name", ["Title",] "description", {zod shape}, [annotations], handler)` beside the SDK."""
    if not args or (name := _string(source, args[0], at)) is None:
        return []
    strings: list[str] = []
    rest = args[1:]
    while rest and (text := _string(source, rest[0], at)) is not None:
        strings.append(text)
        rest = rest[1:]
    schema = None
    for node in rest:
        node = _resolved(source, node, at)
        if node[0] == "func":
            break
        if node[0] == "obj" and node[1] and set(node[1]) <= ANNOTATION_KEYS:
            continue
        schema = _input_schema(source, node, at)
        if schema is not None:
            break
    if schema is None or not any(node[0] == "func" for node in rest):
        return []
    return [(name, strings[-1] if strings else None, schema)]


def _enclosing_brace(source: Source, index: int, reach: int = 5000) -> int | None:
    """The "{" of the object literal that holds token `index` as one of its own keys."""
    depth = 0
    for cursor in range(index - 1, max(-1, index - reach), -1):
        token = source.tokens[cursor]
        if token.kind != "punc":
            continue
        if token.value in (")", "]", "}"):
            depth += 1
        elif token.value in ("(", "[", "{"):
            if depth == 0:
                return cursor if token.value == "{" and source.match[cursor] > cursor else None
            depth -= 1
    return None


def _string(source: Source, node: tuple, before: int) -> str | None:
    value = to_json(source, node, before)
    return value if isinstance(value, str) else None


def _resolved(source: Source, node: tuple, before: int) -> tuple:
    return deref(source, node, before)


def _tool_call(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """server.tool(name, [description], [paramsSchema | annotations], [annotations], handler)."""
    if not args or (name := _string(source, args[0], at)) is None:
        return None
    description = None
    rest = args[1:]
    if rest and (text := _string(source, rest[0], at)) is not None:
        description, rest = text, rest[1:]
    schema: dict = {"type": "object", "properties": {}}
    for node in rest:
        node = _resolved(source, node, at)
        if node[0] == "func":
            break
        if node[0] == "obj" and node[1] and set(node[1]) <= ANNOTATION_KEYS:
            continue
        converted = _input_schema(source, node, at)
        if converted is not None:
            schema = converted
            break
    return name, description, schema


def _register_tool(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """server.registerTool(name, {title, description, inputSchema, outputSchema, annotations}, handler)."""
    if len(args) < 2 or (name := _string(source, args[0], at)) is None:
        return None
    config = _resolved(source, args[1], at)
    if config[0] != "obj":
        return name, None, {}
    entries = config[1]
    description = _string(source, entries["description"], at) if "description" in entries else None
    schema = _input_schema(source, entries["inputSchema"], at) if "inputSchema" in entries else None
    return name, description, schema if schema is not None else {"type": "object", "properties": {}}


def _add_tool(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """FastMCP (TypeScript): server.addTool({name, description, parameters, execute})."""
    config = _resolved(source, args[0], at) if args else ("other",)
    if config[0] != "obj" or "name" not in config[1] or (name := _string(source, config[1]["name"], at)) is None:
        return None
    entries = config[1]
    description = _string(source, entries["description"], at) if "description" in entries else None
    shape = entries.get("parameters") or entries.get("inputSchema")
    schema = _input_schema(source, shape, at) if shape is not None else None
    return name, description, schema if schema is not None else {"type": "object", "properties": {}}


def _list_tools_handler(source: Source, args: list[tuple], at: int) -> list[tuple[str, str | None, dict]]:
    """`tools:` arrays in the handler's body: literal objects, or constants holding them."""
    handler = args[1] if len(args) > 1 else None
    if handler is None or handler[0] != "func":
        return []
    found: list[tuple[str, str | None, dict]] = []
    start, end = handler[1], handler[2]
    for index in range(start, min(end, len(source.tokens))):
        token = source.tokens[index]
        if token.kind != "id" or token.value != "tools" or (index > 0 and source.at(index - 1, ".")):
            continue
        if source.at(index + 1, ":"):
            node, _ = source.value(index + 2, 1, end)
        elif source.at(index + 1, "}") or source.at(index + 1, ","):
            node = ("ref", "tools")
        else:
            continue
        for item in _tool_objects(source, node, index, 0):
            entries = item[1]
            name = _string(source, entries["name"], index) if "name" in entries else None
            if name is None:
                continue
            description = _string(source, entries["description"], index) if "description" in entries else None
            schema = _input_schema(source, entries["inputSchema"], index) if "inputSchema" in entries else None
            found.append((name, description, schema if schema is not None else {}))
    return found


def _tool_objects(source: Source, node: tuple, at: int, depth: int) -> list[tuple]:
    """Tool objects a `tools` value holds: arrays and their spreads, constants, `X.map(…)`/`filter`/`concat`, Object.values(X)."""
    if depth > 8:
        return []
    node = _resolved(source, node, at)
    if node[0] == "arr":
        found: list[tuple] = []
        for item in node[1]:
            found += _tool_objects(source, item[1] if item[0] == "spread" else item, at, depth + 1)
        return found
    if node[0] == "obj":
        if "name" in node[1]:
            return [node]
        return [o for value in node[1].values() for o in _tool_objects(source, value, at, depth + 1) if o[0] == "obj"]
    if node[0] == "call" and node[1][0] == "member":
        receiver, method = node[1][1], node[1][2]
        if method in ("map", "filter", "concat", "slice", "sort"):
            extra = [o for a in node[2] if method == "concat" for o in _tool_objects(source, a, at, depth + 1)]
            return _tool_objects(source, receiver, at, depth + 1) + extra
        if method == "values" and receiver == ("ref", "Object") and node[2]:
            return _tool_objects(source, node[2][0], at, depth + 1)
    return []


def _input_schema(source: Source, node: tuple, at: int) -> dict | None:
    """JSON Schema from a zod shape ({a: z.string()}), a z.object(...), a literal JSON Schema or zodToJsonSchema(X)."""
    node = _resolved(source, node, at)
    if node[0] == "member" and node[2] == "shape":
        node = _resolved(source, node[1], at)
    if node[0] == "call" and _last_name(node[1]) in TO_JSON_SCHEMA and node[2]:
        node = _resolved(source, node[2][0], at)
    if node[0] == "obj":
        values = [_resolved(source, v, at) for v in node[1].values()]
        if not values and not node[2]:
            return {"type": "object", "properties": {}}
        if values and all(_zod(source, v, at, 0) is not None for v in values):
            return _zod_object(source, node, at, 0)
        literal = to_json(source, node, at)
        return literal if isinstance(literal, dict) else None
    converted = _zod(source, node, at, 0)
    return converted[0] if converted is not None else None


def _zod_object(source: Source, shape: tuple, at: int, depth: int) -> dict:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spread in shape[2]:
        inner = _zod(source, _resolved(source, ("member", spread, "shape") if spread[0] != "obj" else spread, at), at, depth + 1)
        if inner is not None and isinstance(inner[0].get("properties"), dict):
            properties.update(inner[0]["properties"])
            required += inner[0].get("required", [])
    for key, value in shape[1].items():
        converted = _zod(source, value, at, depth + 1)
        properties[key] = converted[0] if converted else {}
        if converted is None or not converted[1]:
            required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _zod(source: Source, node: tuple, at: int, depth: int) -> tuple[dict, bool] | None:
    """(JSON Schema, optional) for a zod expression, None when the node is not one."""
    if depth > MAX_DEPTH:
        return None
    node = _resolved(source, node, at)
    if node[0] == "member" and node[2] == "shape":
        inner = _zod(source, node[1], at, depth + 1)
        return inner
    if node[0] != "call" or node[1][0] != "member":
        return None
    receiver, method, args = node[1][1], node[1][2], node[2]
    if _is_zod_namespace(receiver):
        if method not in ZOD_TYPES:
            return None
        return _zod_base(source, method, args, at, depth), method == "optional"
    inner = _zod(source, receiver, at, depth + 1)
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
    elif method == "describe" and (text := _string(source, first, at)) is not None:
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
        extra = _zod_object(source, first, at, depth + 1) if _resolved(source, first, at)[0] == "obj" else (
            (_zod(source, first, at, depth + 1) or ({}, False))[0])
        schema["properties"] = {**schema.get("properties", {}), **extra.get("properties", {})}
        schema["required"] = list(dict.fromkeys(schema.get("required", []) + extra.get("required", [])))
    return schema, optional


def _zod_base(source: Source, method: str, args: list[tuple], at: int, depth: int) -> dict:
    kind = ZOD_TYPES.get(method)
    schema: dict[str, Any] = {"type": kind} if kind else {}
    first = args[0] if args else ("other",)
    if method == "object" and _resolved(source, first, at)[0] == "obj":
        return _zod_object(source, _resolved(source, first, at), at, depth + 1)
    if method in ("array", "set") and args:
        items = _zod(source, first, at, depth + 1)
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
        members = _resolved(source, args[-1] if args else ("other",), at)
        if members[0] == "arr":
            options = [(_zod(source, m, at, depth + 1) or ({}, False))[0] for m in members[1]]
        schema = {"anyOf": options} if options else {}
    elif method in ("email", "url", "uuid"):
        schema["format"] = {"url": "uri"}.get(method, method)
    return schema


REGISTRATIONS = {
    "tool": ("server.tool", _tool_call),
    "registerTool": ("registerTool", _register_tool),
    "registerToolTask": ("registerToolTask", _register_tool),
    "addTool": ("addTool", _add_tool),
}


def _is_zod_namespace(node: tuple) -> bool:
    """`z`, `zod`, and compiled forms: `zod_1.z`, `zod.z`, `(0, zod_1.z)`."""
    if node[0] == "ref":
        return node[1] in ("z", "zod", "zod_1", "Zod")
    return node[0] == "member" and node[2] == "z"


def _last_name(node: tuple) -> str | None:
    if node[0] == "ref":
        return node[1]
    if node[0] == "member":
        return node[2]
    return None
