"""Tool definitions in Python source, read with `ast` (never imported, never run).

Recognised: FastMCP / MCPServer decorators (`@mcp.tool`, `@server.tool(name=…, description=…)`, with or without parens),
`x.tool(...)(fn)` and `x.add_tool(fn, name=…)` calls, and the low-level SDK's `Tool(name=…, description=…, inputSchema=…)`
literals (in `@server.list_tools()` handlers, lists built there or module constants). Names, descriptions and schemas
are resolved through module-level constants, enum members and pydantic models of the same file.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from pipeline.analyze import pyast
from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool

MAX_RECOVERY = 3  # parses tried on a file cut mid-definition
MAX_DEPTH = 6  # nested types and models followed when building a schema
SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "bytes": "string", "AnyUrl": "string",
           "HttpUrl": "string", "Path": "string", "datetime": "string", "date": "string", "UUID": "string", "Decimal": "number"}
ARRAYS = {"list", "List", "Sequence", "set", "Set", "tuple", "Tuple", "Iterable", "frozenset", "MutableSequence"}
OBJECTS = {"dict", "Dict", "Mapping", "MutableMapping", "Any", "object"}
# Receivers with a `.tool` decorator of their own that is no MCP tool (pydantic-ai agents and toolsets, CLI and task apps)
OTHER_TOOL_OWNERS = {"Toolset", "FunctionToolset", "Typer", "Celery"}
CONTEXT_TYPES = {"Context", "ServerSession", "RequestContext"}


def extract_python(source: SourceFile) -> list[ExtractedTool] | None:
    """The file's tools, or None when the file does not parse or defines none."""
    if not any(hint in source.text for hint in ("tool", "Tool", "inputSchema")):  # no definition can be here: spare the parse
        return None
    module = _parse(source.text)
    if module is None:
        return None
    reader = _Module(module)
    tools: list[ExtractedTool] = []
    for node in ast.walk(module):
        try:
            found = reader.tools_of(node)
        except RecursionError:
            continue
        for name, description, schema, pattern in found:
            if isinstance(name, str) and name:
                tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path,
                                           line=getattr(node, "lineno", 1), language="python", pattern=pattern))
    return tools or None


def _parse(text: str) -> ast.Module | None:
    """The file's syntax tree; a file cut at the size budget is parsed up to its last complete definition."""
    try:
        return pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(("@", "def ", "async def ", "class "))]
    attempts = 0
    for index in reversed(starts):
        # a decorator's own line starts its definition: cut above the first decorator of a stack
        if index > 0 and lines[index - 1].lstrip().startswith("@"):
            continue
        attempts += 1
        if attempts > MAX_RECOVERY:
            break
        try:
            return pyast.parse("".join(lines[:index]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


class _Module:
    """One parsed file: its module-level names, classes and functions, to resolve what a tool definition refers to."""

    def __init__(self, module: ast.Module) -> None:
        self.constants: dict[str, ast.AST] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.servers: dict[str, str] = {}  # variable -> the callable that made it, for every `x = Something(...)`
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.constants.setdefault(target.id, node.value)
                        if isinstance(node.value, ast.Call):
                            self.servers.setdefault(target.id, _callee(node.value.func))
        self.owner: dict[int, ast.ClassDef] = {id(n): c for c in self.classes.values() for n in ast.walk(c)}
        self.list_tools_bodies = {id(n) for f in self.functions.values() if any(_decorator_attr(d) == "list_tools" for d in f.decorator_list)
                                  for n in ast.walk(f)}

    def tools_of(self, node: ast.AST) -> list[tuple[Any, str | None, dict, str]]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return [self._decorated(node, d) for d in node.decorator_list if self._is_tool_decorator(d)]
        if isinstance(node, ast.Dict):
            return self._tool_dict(node)
        if not isinstance(node, ast.Call):
            return []
        callee = _callee(node.func)
        if callee in ("Tool", "types.Tool", "mcp.types.Tool"):
            return self._tool_literal(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("add_tool", "from_function") and node.args:
            function = self._function(node.args[0])
            return [self._from_function(function, node, "add_tool")] if function else []
        if isinstance(node.func, ast.Call) and self._is_tool_decorator(node.func) and node.args:  # server.tool(...)(fn)
            function = self._function(node.args[0])
            return [self._from_function(function, node.func, "tool-call")] if function else []
        return []

    def _is_tool_decorator(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not (isinstance(target, ast.Attribute) and target.attr == "tool"):
            return False
        receiver = _callee(target.value).split(".")[-1]
        made_by = self.servers.get(receiver)
        # A receiver made here by something that is no MCP server (a pydantic-ai Agent, say) has its own `.tool`; a server
        # built by a factory of the project's own (`mcp = create_server()`) is still a server.
        maker = (made_by or "").split(".")[-1]
        return not (maker.endswith("Agent") or maker in OTHER_TOOL_OWNERS)

    def _decorated(self, function: ast.FunctionDef | ast.AsyncFunctionDef, decorator: ast.expr):
        call = decorator if isinstance(decorator, ast.Call) else None
        pattern = "fastmcp-decorator" if call is not None else "fastmcp-decorator-bare"
        return self._from_function(function, call, pattern)

    def _from_function(self, function, call: ast.Call | None, pattern: str):
        kwargs = {k.arg: k.value for k in call.keywords if k.arg} if call is not None else {}
        name = self._string(kwargs["name"]) if "name" in kwargs else None
        if name is None and call is not None and call.args and pattern != "add_tool":
            name = self._string(call.args[0])
        elif name is None and call is not None and pattern == "add_tool" and len(call.args) > 1:
            name = self._string(call.args[1])
        description = self._string(kwargs["description"]) if "description" in kwargs else None
        description = description or _docstring(function)
        return name or function.name, description, self._signature(function), pattern

    def _tool_dict(self, node: ast.Dict):
        """A dict shaped like an MCP tool: a string "name" beside an "inputSchema" (servers speaking JSON-RPC by hand)."""
        entries = {self._string(k): v for k, v in zip(node.keys, node.values) if k is not None}
        if "inputSchema" not in entries or "name" not in entries:
            return []
        name = self._string(entries["name"])
        schema = self._schema_value(entries["inputSchema"])
        description = self._string(entries.get("description"))
        return [(name, description, schema if isinstance(schema, dict) else {}, "tool-dict-literal")] if name else []

    def _tool_literal(self, call: ast.Call):
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        name_node = kwargs.get("name") if "name" in kwargs else (call.args[0] if call.args else None)
        name = self._string(name_node)
        if name is None and isinstance(name_node, ast.Attribute) and isinstance(name_node.value, ast.Name) and name_node.value.id == "self":
            name = self._instance_string(self.owner.get(id(call)), name_node.attr)
        if name is None:
            return []
        schema_node = kwargs.get("inputSchema") or kwargs.get("input_schema")
        schema = self._schema_value(schema_node) if schema_node is not None else {}
        pattern = "list_tools-literal" if id(call) in self.list_tools_bodies else "tool-constructor"
        return [(name, self._string(kwargs.get("description")), schema if isinstance(schema, dict) else {}, pattern)]

    def _instance_string(self, cls: ast.ClassDef | None, attribute: str) -> str | None:
        """`self.<attribute>` of a class: a class constant, `self.<attribute> = "…"` in __init__, or, for `name`, the first
        argument its __init__ passes to `super().__init__` (a tool base class taking the name)."""
        if cls is None:
            return None
        value = self._string(_class_constant(cls, attribute))
        if value is not None:
            return value
        init = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__"), None)
        for node in ast.walk(init) if init is not None else ():
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name)
                                                    and t.value.id == "self" for t in node.targets):
                return self._string(node.value)
            if (attribute == "name" and isinstance(node, ast.Call) and _callee(node.func).endswith("__init__")
                    and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)):
                named = next((k.value for k in node.keywords if k.arg == "name"), node.args[0] if node.args else None)
                return self._string(named)
        return None

    def _function(self, node: ast.expr):
        return self.functions.get(node.id) if isinstance(node, ast.Name) else None

    def _string(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """A string a node stands for: literals, f-strings' literal parts, concatenations, constants, enum members (`.value`)."""
        if node is None or depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)) or None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._string(node.left, depth + 1), self._string(node.right, depth + 1)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.Name):
            return self._string(self.constants.get(node.id), depth + 1)
        if isinstance(node, ast.Attribute):
            inner = node.value if node.attr == "value" else node
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id in self.classes:
                return self._string(_class_constant(self.classes[inner.value.id], inner.attr), depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "strip":
            value = self._string(node.func.value, depth + 1)
            return value.strip() if value is not None else None
        return None

    def _schema_value(self, node: ast.AST | None, depth: int = 0) -> Any:
        """A literal JSON Schema (dicts, lists, constants, resolvable names), or a model's `.model_json_schema()`."""
        if node is None or depth > MAX_DEPTH * 2:
            return None
        if isinstance(node, ast.Dict):
            return {k: self._schema_value(v, depth + 1) for k, v in
                    ((self._string(key), value) for key, value in zip(node.keys, node.values)) if k is not None}
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._schema_value(v, depth + 1) for v in node.elts]
        if isinstance(node, ast.Constant):
            return node.value if _is_plain(node) else None
        if isinstance(node, ast.Name):
            return self._schema_value(self.constants.get(node.id), depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("model_json_schema", "schema"):
            model = node.func.value
            if isinstance(model, ast.Name) and model.id in self.classes:
                return self._model_schema(self.classes[model.id], depth + 1)
        return self._string(node)

    def _signature(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
        arguments = function.args
        positional = arguments.posonlyargs + arguments.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        pairs = list(zip(positional, defaults)) + list(zip(arguments.kwonlyargs, arguments.kw_defaults))
        properties: dict[str, Any] = {}
        required: list[str] = []
        for index, (arg, default) in enumerate(pairs):
            if (index == 0 and arg.arg in ("self", "cls")) or _is_context(arg.annotation):
                continue
            schema, field_required = self._annotation_schema(arg.annotation, 0)
            has_default = default is not None
            if has_default and _callee(default.func if isinstance(default, ast.Call) else default) in ("Field", "pydantic.Field"):
                schema.update(self._field(default))  # type: ignore[arg-type]
                has_default = not _field_required(default)  # type: ignore[arg-type]
            elif has_default and _is_plain(default):
                schema["default"] = default.value  # type: ignore[union-attr]
            properties[arg.arg] = schema
            if not has_default and field_required:
                required.append(arg.arg)
        result: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            result["required"] = required
        return result

    def _annotation_schema(self, node: ast.expr | None, depth: int) -> tuple[dict, bool]:
        """(schema, required) for a type hint; Optional / `X | None` stay required unless a default is given (pydantic)."""
        if node is None or depth > MAX_DEPTH:
            return {}, True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
            try:
                return self._annotation_schema(pyast.parse(node.value[:500], mode="eval").body, depth + 1)
            except SyntaxError:
                return {}, True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            members = [m for m in (node.left, node.right) if not (isinstance(m, ast.Constant) and m.value is None)]
            return self._annotation_schema(members[0], depth + 1) if len(members) == 1 else ({}, True)
        name = _callee(node.value if isinstance(node, ast.Subscript) else node).split(".")[-1]
        if isinstance(node, ast.Subscript):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if name == "Optional":
                return self._annotation_schema(items[0], depth + 1)
            if name == "Union":
                members = [m for m in items if not (isinstance(m, ast.Constant) and m.value is None)]
                return self._annotation_schema(members[0], depth + 1) if len(members) == 1 else ({}, True)
            if name == "Annotated":
                schema, required = self._annotation_schema(items[0], depth + 1)
                for extra in items[1:]:
                    if isinstance(extra, ast.Call) and _callee(extra.func).split(".")[-1] == "Field":
                        schema.update(self._field(extra))
                    elif isinstance(extra, ast.Constant) and isinstance(extra.value, str):
                        schema["description"] = extra.value
                return schema, required
            if name == "Literal":
                values = [i.value for i in items if _is_plain(i)]
                kinds = {type(v).__name__ for v in values}
                schema: dict[str, Any] = {"enum": values}
                if len(kinds) == 1 and next(iter(kinds)) in SCALARS:
                    schema["type"] = SCALARS[next(iter(kinds))]
                return schema, True
            if name in ARRAYS:
                return {"type": "array", "items": self._annotation_schema(items[0], depth + 1)[0]}, True
            if name in OBJECTS:
                return {"type": "object"}, True
        if name in SCALARS:
            return {"type": SCALARS[name]}, True
        if name in ARRAYS:
            return {"type": "array"}, True
        if name in OBJECTS:
            return {"type": "object"} if name != "Any" else {}, True
        if name in self.classes:
            return self._model_schema(self.classes[name], depth + 1), True
        return {}, True

    def _model_schema(self, cls: ast.ClassDef, depth: int) -> dict:
        """A pydantic model, TypedDict or dataclass of this file as an object schema; an Enum as its values."""
        bases = {_callee(b).split(".")[-1] for b in cls.bases}
        if bases & {"Enum", "StrEnum", "IntEnum"}:
            values = [_class_constant(cls, t.id).value for s in cls.body if isinstance(s, ast.Assign) for t in s.targets
                      if isinstance(t, ast.Name) and _is_plain(_class_constant(cls, t.id))]
            return {"type": "string", "enum": values} if values else {}
        if depth > MAX_DEPTH:
            return {"type": "object"}
        properties: dict[str, Any] = {}
        required: list[str] = []
        for statement in cls.body:
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                continue
            if _callee(statement.annotation).split(".")[-1] == "ClassVar":
                continue
            schema, is_required = self._annotation_schema(statement.annotation, depth + 1)
            default = statement.value
            if isinstance(default, ast.Call) and _callee(default.func).split(".")[-1] == "Field":
                schema.update(self._field(default))
                is_required = is_required and _field_required(default)
            elif default is not None:
                is_required = False
            properties[statement.target.id] = schema
            if is_required:
                required.append(statement.target.id)
        schema = {"type": "object", "properties": properties}
        description = ast.get_docstring(cls)
        if description:
            schema["description"] = description.strip()
        if required:
            schema["required"] = required
        return schema

    def _field(self, call: ast.Call) -> dict:
        schema: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg == "description":
                text = self._string(keyword.value)
                if text:
                    schema["description"] = text
            elif keyword.arg in ("ge", "le", "gt", "lt", "min_length", "max_length") and _is_plain(keyword.value):
                key = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum",
                       "min_length": "minLength", "max_length": "maxLength"}[keyword.arg]
                schema[key] = keyword.value.value
            elif keyword.arg == "default" and _is_plain(keyword.value):
                schema["default"] = keyword.value.value
        return schema


def _is_plain(node: ast.AST | None) -> bool:
    """A constant JSON can carry: a string, a finite number, a boolean or None (not bytes, Ellipsis, complex, 1e999)."""
    if not isinstance(node, ast.Constant):
        return False
    value = node.value
    return value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value))


def _field_required(call: ast.Call) -> bool:
    """Field(...) / Field(description=…) without a default is required; Field(default=…), Field(3), Field(default_factory=…) are not."""
    if any(k.arg in ("default", "default_factory") for k in call.keywords):
        return False
    return not call.args or (isinstance(call.args[0], ast.Constant) and call.args[0].value is Ellipsis)


def _callee(node: ast.AST) -> str:
    """Dotted name of a Name/Attribute chain ("" for anything else), bounded."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < 20:
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _decorator_attr(decorator: ast.expr) -> str | None:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else None


def _class_constant(cls: ast.ClassDef, name: str) -> ast.AST | None:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets):
            return statement.value
    return None


def _is_context(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _callee(node).split(".")[-1] in CONTEXT_TYPES


def _docstring(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    text = ast.get_docstring(function)
    return text.strip() or None if text else None
