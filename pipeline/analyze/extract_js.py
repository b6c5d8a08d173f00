"""Tool definitions in TypeScript and JavaScript, source or compiled (tsc's CommonJS and ES module output alike).

Recognised: the TypeScript SDK's `server.tool(name, [description], [zod shape], [annotations], handler)` in all its
overloads, `server.registerTool(name, {title, description, inputSchema, …}, handler)`, FastMCP-style
`server.addTool({name, description, parameters})`, and `setRequestHandler(ListToolsRequestSchema, …)` handlers whose
`tools` are literal arrays (or constants, spreads, `Object.values` of them) of `{name, description, inputSchema}`.
Beyond the SDK's calls: tool-shaped object literals wherever a list is built, `defineTool({name, description, schema,
handler})`-style objects, a local `tool("name", …, shape, handler)` helper beside the SDK, mcp-framework's `MCPTool`
classes. Zod becomes JSON Schema (`zod.py`).
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.jsparse import Computed, Source, deref, last_name, string_value
from pipeline.analyze.zod import input_schema, zod_schema
from pipeline.models import ExtractedTool

HINT = re.compile(r"\btool\b|registerTool|addTool|ListToolsRequestSchema|inputSchema|define\w{0,30}Tool|createTool|MCPTool|\bconfig\b|\bmetadata\b")
MAX_CALLS = 1_000  # calls read per file (a real server registers far fewer tools)
SCHEMA_KEYS = {"inputSchema", "schema", "parameters", "paramsSchema", "argsSchema", "input_schema"}
HANDLER_KEYS = ("handler", "execute", "run", "callback", "cb", "handle", "fn", "call")
NOT_TOOL_CONFIG = {"argsSchema", "arguments", "uri", "uriTemplate", "mimeType", "messages"}
ANNOTATION_KEYS = {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}


def extract_js(source: SourceFile) -> list[ExtractedTool] | None:
    if not HINT.search(source.text):
        return None
    parsed = Source.read(source.text)
    tools: list[ExtractedTool] = []
    language = "typescript" if source.language == "typescript" else "javascript"
    tokens = parsed.tokens
    wrapped = "@modelcontextprotocol/" in source.text  # a local `tool(name, …)` helper counts only beside the SDK
    count = len(tokens)
    resume, calls = 0, 0  # a registration nested in another's arguments is not read again (each read is bounded in depth)
    for index, token in enumerate(tokens):
        if (index < resume or token.kind != "id" or index == 0 or index + 1 >= count or tokens[index + 1].value != "("
                or tokens[index + 1].kind != "punc"):
            continue
        dotted = parsed.at(index - 1, ".") or parsed.at(index - 1, "?.")
        registration = (dotted and token.value in REGISTRATIONS) or token.value in ("tool", "setRequestHandler")
        if not registration:
            continue
        calls += 1
        if calls > MAX_CALLS:
            break
        if token.value != "setRequestHandler":
            resume = parsed.match[index + 1] if parsed.match[index + 1] > index else count
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
            found = _list_tools_handler(parsed, args, index) if args and last_name(args[0]) == "ListToolsRequestSchema" else []
            pattern = "ListToolsRequestSchema-literal"
        else:
            continue
        for name, description, schema in found:
            if isinstance(name, Computed):  # a template with ${…}: its literal parts are not its name
                continue
            tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path, line=parsed.line(index),
                                       language=language, pattern=pattern))
    for pattern, defined in (("MCPTool-class", _tool_classes(parsed)), ("tool-module-exports", _tool_module(parsed)),
                             ("tool-object-literal", _tool_object_literals(parsed))):
        for index, (name, description, schema) in defined:
            if not isinstance(name, Computed):
                tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path,
                                           line=parsed.line(index), language=language, pattern=pattern))
    return tools or None


def _tool_object_literals(source: Source) -> list[tuple[int, tuple[str, str | None, dict]]]:
    """Object literals shaped like an MCP tool anywhere in the file: a string `name` beside an `inputSchema` (tool lists
    built in one place and returned from another, registries, maps of tools); or beside a `schema`/`parameters`-like
    key holding a zod shape or an object schema when a description and a handler function are there too
    (`defineTool({name, description, schema, handler})`); or beside a `config` object that holds the `inputSchema` (a tool
    module's `{name, config, handler}`, `defineTool({name, config: {description, inputSchema}})`)."""
    found: list[tuple[int, tuple[str, str | None, dict]]] = []
    seen: set[int] = set()
    tokens = source.tokens
    enclosing: list[int] | None = None
    for index, token in enumerate(tokens):
        if token.kind not in ("id", "str") or len(found) >= 500:
            continue
        if token.value == "config":
            if not (source.at(index + 1, ":") or (token.kind == "id" and (source.at(index + 1, ",") or source.at(index + 1, "}")))):
                continue
        elif token.value not in SCHEMA_KEYS or not source.at(index + 1, ":"):
            continue
        enclosing = enclosing if enclosing is not None else _enclosing_brackets(source)
        opening = enclosing[index]
        if opening < 0 or opening in seen or not source.at(opening, "{") or source.match[opening] <= opening:
            continue
        entries = source._object(opening, source.match[opening], 1)[1]
        name = string_value(source, entries["name"], index) if "name" in entries else None
        if name is None or token.value not in entries:  # a key of a nested literal the brackets around it left unclosed
            continue
        if token.value == "config":
            found_config = _configured(source, entries, index)
            if found_config is not None:
                seen.add(opening)
                found.append((opening, (name, *found_config)))
            continue
        description = string_value(source, entries["description"], index) if "description" in entries else None
        schema = input_schema(source, entries[token.value], index)
        if token.value != "inputSchema" and (description is None or schema is None or schema.get("type") != "object"
                                             or not any(entries.get(k, ("other",))[0] == "func" for k in HANDLER_KEYS)):
            continue
        seen.add(opening)
        found.append((opening, (name, description, schema if schema is not None else {})))
    return found


def _configured(source: Source, entries: dict, at: int) -> tuple[str | None, dict] | None:
    """A tool's `config` object (a literal or a constant) holding its `inputSchema` and its description, or only its
    description when the tool has a handler beside it and takes no parameters."""
    config = deref(source, entries["config"], at)
    if config[0] != "obj":
        return None
    held = config[1]
    description = string_value(source, held["description"], at) if "description" in held else None
    if "inputSchema" not in held:  # a tool without parameters: its description and its handler beside it say it is one
        if held.keys() & NOT_TOOL_CONFIG:  # a prompt's or a resource's config, registered the same way
            return None
        handled = any(entries.get(k, ("other",))[0] == "func" for k in HANDLER_KEYS)
        return (description, {"type": "object", "properties": {}}) if description is not None and handled else None
    schema = input_schema(source, held["inputSchema"], at)
    return description, schema if schema is not None else {}


def _tool_module(source: Source) -> list[tuple[int, tuple[str, str | None, dict]]]:
    """A file that is one tool (xmcp's convention, and servers that load a folder of them): `export const metadata =
    {name, description}` beside an exported `schema` or `inputSchema` (a zod shape). Both must be exported: a module's
    interface, not any local `metadata`."""
    exported = [name for name in ("metadata", "schema", "inputSchema") if _exported(source, name)]
    if "metadata" not in exported or len(exported) < 2:
        return []
    at = source.declarations["metadata"][0]
    metadata = deref(source, source.value(at, 1, len(source.tokens))[0], at)
    if metadata[0] != "obj" or "name" not in metadata[1] or (name := string_value(source, metadata[1]["name"], at)) is None:
        return []
    description = string_value(source, metadata[1]["description"], at) if "description" in metadata[1] else None
    key = "inputSchema" if "inputSchema" in exported else "schema"
    start = source.declarations[key][0]
    schema = input_schema(source, source.value(start, 1, len(source.tokens))[0], start)
    return [(at, (name, description, schema if schema is not None else {}))]


def _exported(source: Source, name: str) -> bool:
    """`export const NAME [: Type] =` or CommonJS `exports.NAME =`, for the first declaration of NAME."""
    tokens = source.tokens
    for index in source.declarations.get(name, [])[:1]:
        cursor = index - 2
        while cursor > 0 and index - cursor < 200 and not (tokens[cursor].kind == "id" and tokens[cursor].value == name):
            cursor -= 1
        if cursor >= 2 and tokens[cursor - 1].value in ("const", "let", "var") and tokens[cursor - 2].value == "export":
            return True
        if cursor >= 2 and tokens[cursor - 1].value == "." and tokens[cursor - 2].value == "exports":
            return True
    return False


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
        name = string_value(source, fields["name"], close) if "name" in fields else None
        if name is None:
            continue
        description = string_value(source, fields["description"], close) if "description" in fields else None
        schema = _framework_schema(source, fields.get("schema", ("other",)), close)
        found.append((index, (name, description, schema)))
    return found


def _framework_schema(source: Source, node: tuple, at: int) -> dict:
    """mcp-framework's schema: {field: {type: z.string(), description: "…"}}, or a zod object."""
    node = deref(source, node, at)
    if node[0] != "obj" or not all(deref(source, v, at)[0] == "obj" for v in node[1].values()):
        return input_schema(source, node, at) or {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, value in node[1].items():
        entries = deref(source, value, at)[1]
        converted = zod_schema(source, entries["type"], at, 1) if "type" in entries else None
        schema = dict(converted[0]) if converted else {}
        if "description" in entries and (text := string_value(source, entries["description"], at)) is not None:
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
    if not args or (name := string_value(source, args[0], at)) is None:
        return []
    strings: list[str] = []
    rest = args[1:]
    while rest and (text := string_value(source, rest[0], at)) is not None:
        strings.append(text)
        rest = rest[1:]
    schema, _ = _schema_argument(source, rest, at)
    if schema is None or not any(node[0] == "func" for node in rest):
        return []
    return [(name, strings[-1] if strings else None, schema)]


def _schema_argument(source: Source, rest: list[tuple], at: int) -> tuple[dict | None, bool]:
    """The first argument before the handler that converts to an input schema (annotation objects skipped), and whether an
    argument there could not be read (imported, computed): then the schema is unknown, not empty."""
    unreadable = False
    for node in rest:
        node = deref(source, node, at)
        if node[0] == "func":
            break
        if node[0] == "obj" and node[1] and set(node[1]) <= ANNOTATION_KEYS:
            continue
        schema = input_schema(source, node, at)
        if schema is not None:
            return schema, unreadable
        unreadable = True
    return None, unreadable


def _enclosing_brackets(source: Source) -> list[int]:
    """For each token, the index of the innermost bracket open around it (-1 at the top level): one pass with a stack, so
    asking for every key's object costs linear time however many keys a hostile file repeats."""
    enclosing: list[int] = []
    stack: list[int] = []
    for index, token in enumerate(source.tokens):
        enclosing.append(stack[-1] if stack else -1)
        if token.kind != "punc":
            continue
        if token.value in ("(", "[", "{"):
            stack.append(index)
        elif token.value in (")", "]", "}") and stack:
            stack.pop()
    return enclosing


def _tool_call(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """server.tool(name, [description], [paramsSchema | annotations], [annotations], handler)."""
    if not args or (name := string_value(source, args[0], at)) is None:
        return None
    description = None
    rest = args[1:]
    if rest and (text := string_value(source, rest[0], at)) is not None:
        description, rest = text, rest[1:]
    schema, unreadable = _schema_argument(source, rest, at)
    if schema is None:  # the SDK's own schema for a tool without parameters; unknown when an argument could not be read
        schema = {} if unreadable else {"type": "object", "properties": {}}
    return name, description, schema


def _register_tool(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """server.registerTool(name, {title, description, inputSchema, outputSchema, annotations}, handler); a server's own
    `registerTool({name, description, inputSchema, handler})` wrapper is read like addTool."""
    if len(args) == 1:
        return _add_tool(source, args, at)
    if len(args) < 2 or (name := string_value(source, args[0], at)) is None:
        return None
    config = deref(source, args[1], at)
    if config[0] != "obj":
        return name, None, {}
    entries = config[1]
    description = string_value(source, entries["description"], at) if "description" in entries else None
    if "inputSchema" not in entries:
        return name, description, {"type": "object", "properties": {}}
    return name, description, input_schema(source, entries["inputSchema"], at) or {}


def _add_tool(source: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    """FastMCP (TypeScript): server.addTool({name, description, parameters, execute})."""
    config = deref(source, args[0], at) if args else ("other",)
    if config[0] != "obj" or "name" not in config[1] or (name := string_value(source, config[1]["name"], at)) is None:
        return None
    entries = config[1]
    description = string_value(source, entries["description"], at) if "description" in entries else None
    shape = entries.get("parameters") or entries.get("inputSchema")
    if shape is None:
        return name, description, {"type": "object", "properties": {}}
    return name, description, input_schema(source, shape, at) or {}


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
            name = string_value(source, entries["name"], index) if "name" in entries else None
            if name is None:
                continue
            description = string_value(source, entries["description"], index) if "description" in entries else None
            schema = input_schema(source, entries["inputSchema"], index) if "inputSchema" in entries else None
            found.append((name, description, schema if schema is not None else {}))
    return found


def _tool_objects(source: Source, node: tuple, at: int, depth: int) -> list[tuple]:
    """Tool objects a `tools` value holds: arrays and their spreads, constants, `X.map(…)`/`filter`/`concat`, Object.values(X)."""
    if depth > 8:
        return []
    node = deref(source, node, at)
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


REGISTRATIONS = {
    "tool": ("server.tool", _tool_call),
    "registerTool": ("registerTool", _register_tool),
    "registerToolTask": ("registerToolTask", _register_tool),
    "addTool": ("addTool", _add_tool),
}
