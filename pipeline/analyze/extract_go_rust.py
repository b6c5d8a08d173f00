"""Tool definitions in Go and Rust source, read as tokens and bounded patterns (never compiled).

Go: mark3labs' mcp-go `mcp.NewTool("name", mcp.WithDescription("…"), mcp.WithString("p", mcp.Required(), mcp.Description("…")))`
and the official go-sdk `mcp.AddTool(server, &mcp.Tool{Name: "…", Description: "…"}, Handler)`, whose input schema comes
from the handler's arguments struct (`json` and `jsonschema` tags) when it is declared in the same file.
Rust: rmcp's `#[tool(description = "…")]` methods, with `Parameters<T>` structs (doc comments and
`#[schemars(description = …)]`) or the older `#[tool(param)]` arguments.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.jsparse import Source, to_json
from pipeline.models import ExtractedTool

GO_HINT = re.compile(r"NewTool\b|AddTool\b")
GO_PARAMS = {"WithString": "string", "WithNumber": "number", "WithInteger": "integer", "WithBoolean": "boolean", "WithArray": "array",
             "WithObject": "object"}
GO_TYPES = {"string": "string", "bool": "boolean", "int": "integer", "int32": "integer", "int64": "integer", "uint": "integer",
            "uint32": "integer", "uint64": "integer", "float32": "number", "float64": "number"}
GO_STRUCT = re.compile(r"\btype[ \t]{1,20}(\w{1,100})[ \t]{1,20}struct[ \t]{0,20}\{")
GO_FIELD = re.compile(r"^[ \t]*([A-Z]\w{0,100})[ \t]+([\w.\[\]*]{1,100})[ \t]*(?:`([^`\n]{0,500})`)?", re.M)
GO_FUNC = re.compile(r"\bfunc[ \t]{1,20}(\w{1,100})[ \t]*\(([^()]{0,500})\)")
RUST_HINT = re.compile(r"#\[tool\b")
MAX_ATTRIBUTE = 4_000  # characters of one #[tool(…)] attribute
RUST_FN = re.compile(r"\bfn[ \t]{1,20}(\w{1,100})[ \t]*(?:<[^>\n]{0,200}>)?[ \t]*\(")
RUST_TYPES = {"String": "string", "str": "string", "bool": "boolean", "i8": "integer", "i16": "integer", "i32": "integer", "i64": "integer",
              "u8": "integer", "u16": "integer", "u32": "integer", "u64": "integer", "usize": "integer", "isize": "integer",
              "f32": "number", "f64": "number", "Vec": "array", "HashMap": "object", "Value": None}
RUST_STRUCT = re.compile(r"\bstruct[ \t]{1,20}(\w{1,100})[ \t]*(?:<[^>\n]{0,200}>)?[ \t]*\{")
RUST_FIELD = re.compile(r"^[ \t]*(?:pub(?:\([\w ]{1,20}\))?[ \t]+)?(\w{1,100})[ \t]*:[ \t]*([^,\n]{1,200}),?[ \t]*$", re.M)
MAX_BODY = 20_000  # characters of a struct or signature read
MAX_CALLS = 1_000  # tool calls read per file
MAX_REACH = 400  # tokens of an AddTool call searched for its &mcp.Tool{…}


def extract_go(source: SourceFile) -> list[ExtractedTool] | None:
    if not GO_HINT.search(source.text):
        return None
    parsed = Source.read(source.text)
    tools: list[ExtractedTool] = []
    tokens = parsed.tokens
    resume, calls = 0, 0  # a NewTool inside another's arguments is not read again (each read is bounded in depth)
    for index, token in enumerate(tokens):
        if index < resume or token.kind != "id" or token.value not in ("NewTool", "AddTool") or not parsed.at(index + 1, "(") \
                or not (index and parsed.at(index - 1, ".")):
            continue
        calls += 1
        if calls > MAX_CALLS:
            break
        if token.value == "NewTool":
            resume = parsed.match[index + 1] if parsed.match[index + 1] > index else len(tokens)
            found = _new_tool(parsed, parsed.arguments(index + 1), index)
            pattern = "mcp-go NewTool"
        elif token.value == "AddTool":
            found = _add_tool(parsed, source.text, index)
            pattern = "go-sdk AddTool"
        else:
            continue
        if found:
            name, description, schema = found
            tools.append(ExtractedTool(name=name, description=description, input_schema=schema, file=source.path, line=parsed.line(index),
                                       language="go", pattern=pattern))
    return tools or None


def _new_tool(parsed: Source, args: list[tuple], at: int) -> tuple[str, str | None, dict] | None:
    name = to_json(parsed, args[0], at) if args else None
    if not isinstance(name, str):
        return None
    description = None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for option in args[1:]:
        method, option_args = _go_call(option)
        if method == "WithDescription" and option_args:
            text = to_json(parsed, option_args[0], at)
            description = text if isinstance(text, str) else description
        elif method in GO_PARAMS and option_args and isinstance(param := to_json(parsed, option_args[0], at), str):
            schema: dict[str, Any] = {"type": GO_PARAMS[method]}
            for property_option in option_args[1:]:
                inner, inner_args = _go_call(property_option)
                value = to_json(parsed, inner_args[0], at) if inner_args else None
                if inner == "Required":
                    required.append(param)
                elif inner == "Description" and isinstance(value, str):
                    schema["description"] = value
                elif inner == "Enum":
                    schema["enum"] = [to_json(parsed, a, at) for a in inner_args]
                elif inner and inner.startswith("Default") and value is not None:
                    schema["default"] = value
            properties[param] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return name, description, result


def _go_call(node: tuple) -> tuple[str | None, list[tuple]]:
    if node[0] == "call" and node[1][0] in ("member", "ref"):
        return node[1][2] if node[1][0] == "member" else node[1][1], node[2]
    return None, []


def _add_tool(parsed: Source, text: str, at: int) -> tuple[str, str | None, dict] | None:
    """mcp.AddTool(server, &mcp.Tool{Name: …, Description: …}, Handler) and server.AddTool(&mcp.Tool{…}, handler)."""
    open_index = at + 1
    close = parsed.match[open_index] if parsed.match[open_index] > open_index else len(parsed.tokens)
    for index in range(open_index, min(close, open_index + MAX_REACH)):
        token = parsed.tokens[index]
        if token.kind == "id" and token.value == "Tool" and parsed.at(index + 1, "{") and parsed.match[index + 1] > index:
            literal = to_json(parsed, parsed._object(index + 1, parsed.match[index + 1], 1), at)
            name = literal.get("Name") if isinstance(literal, dict) else None
            if not isinstance(name, str):
                return None
            description = literal.get("Description") if isinstance(literal.get("Description"), str) else None
            schema = literal.get("InputSchema") if isinstance(literal.get("InputSchema"), dict) else None
            handler = parsed.tokens[parsed.match[index + 1] + 2] if parsed.match[index + 1] + 2 < close else None
            if schema is None and handler is not None and handler.kind == "id":
                schema = _go_handler_schema(text, handler.value)
            return name, description, schema or {}
    return None


def _go_handler_schema(text: str, handler: str) -> dict | None:
    """The input schema of a typed go-sdk handler `func H(ctx, req, args T)`: T's fields with their json and jsonschema tags."""
    for match in GO_FUNC.finditer(text):
        if match.group(1) != handler:
            continue
        params = [p.strip() for p in match.group(2).split(",")]
        last = params[-1].split() if params else []
        return _go_struct(text, last[-1].lstrip("*")) if len(last) == 2 else None
    return None


def _go_struct(text: str, name: str) -> dict | None:
    body = _struct_body(text, GO_STRUCT, name)
    if body is None:
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field_name, kind, tag in GO_FIELD.findall(body):
        json_name = re.search(r'json:"([^",]{1,100})(,[^"]{0,50})?"', tag or "")
        key = json_name.group(1) if json_name else field_name
        if key == "-":
            continue
        schema: dict[str, Any] = {}
        base = kind.lstrip("*")
        if base.startswith("[]"):
            schema = {"type": "array"}
        elif base in GO_TYPES:
            schema = {"type": GO_TYPES[base]}
        description = re.search(r'jsonschema:"([^"]{1,500})"', tag or "")
        if description:
            schema["description"] = description.group(1).removeprefix("description=")
        properties[key] = schema
        if not (json_name and "omitempty" in (json_name.group(2) or "")) and not kind.startswith("*"):
            required.append(key)
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _struct_body(text: str, pattern: re.Pattern, name: str) -> str | None:
    for match in pattern.finditer(text):
        if match.group(1) == name:
            depth, index = 1, match.end()
            end = min(len(text), index + MAX_BODY)
            while index < end and depth:
                depth += {"{": 1, "}": -1}.get(text[index], 0)
                index += 1
            return text[match.end():index - 1]
    return None


def extract_rust(source: SourceFile) -> list[ExtractedTool] | None:
    if not RUST_HINT.search(source.text):
        return None
    text = source.text
    tools: list[ExtractedTool] = []
    for count, attribute in enumerate(RUST_HINT.finditer(text)):
        if count >= MAX_CALLS:
            break
        line_start = text.rfind("\n", 0, attribute.start()) + 1
        if text[line_start:attribute.start()].strip():  # inside a comment or after code on its line: not an attribute
            continue
        arguments = _attribute_arguments(text, attribute.end())
        if arguments is None:
            continue
        if re.search(r"\b(tool_box|router|param|aggr)\b", arguments) and "description" not in arguments:
            continue
        after = attribute.end() + len(arguments) + 3
        function = RUST_FN.search(text, after, min(len(text), after + 2000))
        if function is None or re.search(r"\bimpl\b", text[after:function.start()]):
            continue
        name = _rust_string(arguments, "name") or function.group(1)
        description = _rust_string(arguments, "description") or _doc_comment(text, attribute.start())
        signature = _balanced(text, function.end() - 1)
        tools.append(ExtractedTool(name=name, description=description, input_schema=_rust_schema(text, signature), file=source.path,
                                   line=text.count("\n", 0, attribute.start()) + 1, language="rust", pattern="rmcp #[tool]"))
    return tools or None


def _attribute_arguments(text: str, at: int) -> str | None:
    """What `#[tool(…)]` holds ("" for a bare `#[tool]`), None when it does not close within MAX_ATTRIBUTE characters."""
    if text.startswith("]", at):
        return ""
    if not text.startswith("(", at):
        return None
    end = text.find(")]", at, at + MAX_ATTRIBUTE)
    return text[at + 1:end] if end >= 0 else None


def _rust_string(arguments: str, key: str) -> str | None:
    match = re.search(key + r'[ \t]{0,5}=[ \t]{0,5}"((?:[^"\\]|\\.){0,2000})"', arguments)
    return match.group(1).replace('\\"', '"') if match else None


def _doc_comment(text: str, before: int) -> str | None:
    lines: list[str] = []
    for line in reversed(text[max(0, before - 4000):before].splitlines()[-40:]):
        stripped = line.strip()
        if stripped.startswith("///"):
            lines.append(stripped[3:].strip())
        elif stripped.startswith("#[") or not stripped:
            continue
        else:
            break
    return " ".join(reversed(lines)) or None


def _balanced(text: str, open_at: int) -> str:
    depth, index = 0, open_at
    end = min(len(text), open_at + MAX_BODY)
    while index < end:
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        index += 1
        if depth == 0:
            break
    return text[open_at:index]


def _rust_schema(text: str, signature: str) -> dict:
    wrapped = re.search(r"Parameters[ \t]*<[ \t]*(\w{1,100})[ \t]*>", signature)
    if wrapped:
        return _rust_struct(text, wrapped.group(1)) or {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for match in re.finditer(r"#\[tool\(param\)\]((?:\s{0,20}#\[[^\]\n]{0,500}\])*)\s{0,20}(\w{1,100})[ \t]*:[ \t]*([^,)\n]{1,200})", signature):
        schema, optional = _rust_type(match.group(3))
        described = _rust_string(match.group(1), "description")
        if described:
            schema["description"] = described
        properties[match.group(2)] = schema
        if not optional:
            required.append(match.group(2))
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _rust_struct(text: str, name: str) -> dict | None:
    body = _struct_body(text, RUST_STRUCT, name)
    if body is None:
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    docs: list[str] = []
    described: str | None = None
    for line in body.splitlines()[:500]:
        stripped = line.strip()
        if stripped.startswith("///"):
            docs.append(stripped[3:].strip())
            continue
        if stripped.startswith("#["):
            described = _rust_string(stripped, "description") or described
            continue
        match = RUST_FIELD.match(line)
        if match:
            schema, optional = _rust_type(match.group(2))
            if described or docs:
                schema["description"] = described or " ".join(docs)
            properties[match.group(1)] = schema
            if not optional:
                required.append(match.group(1))
        docs, described = [], None
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _rust_type(kind: str) -> tuple[dict, bool]:
    kind = kind.strip()
    if kind.startswith("Option<"):
        return _rust_type(kind[len("Option<"):-1])[0], True
    base = re.match(r"[\w:]{1,100}", kind)
    name = base.group(0).split("::")[-1] if base else ""
    return ({"type": RUST_TYPES[name]} if RUST_TYPES.get(name) else {}), False
