"""Which tools may be called, with what arguments, and how to read what comes back (seeds 000, 003).

A tool is called only when it is read-only by its annotations AND by its name and description: a
read verb in the name (get, list, search, read, fetch, describe, …), no mutating verb anywhere in the
name (delete, write, send, create, update, execute, …), no destructive wording in the description,
and not open-world (a tool that reaches outside may act on the world however it is annotated).
Arguments are generated from the input schema and checked against it before any call. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.probe.schema_check import first_error

READ_VERBS = {"get", "list", "search", "read", "fetch", "describe", "find", "lookup", "query", "show", "view", "count", "echo", "status",
              "info", "inspect", "check", "validate", "convert", "calculate", "compute", "resolve", "diff", "log", "tree", "explain", "sum"}
MUTATING_VERBS = {
    "delete", "remove", "rm", "write", "send", "create", "update", "execute", "exec", "run", "set", "put", "post", "patch", "insert", "drop",
    "kill", "move", "mv", "rename", "upload", "publish", "push", "commit", "merge", "deploy", "install", "uninstall", "reset", "clear",
    "purge", "destroy", "cancel", "approve", "pay", "transfer", "buy", "order", "book", "submit", "invite", "toggle", "trigger", "start",
    "stop", "restart", "modify", "edit", "append", "save", "store", "register", "subscribe", "enable", "disable", "grant", "revoke", "add",
    "checkout", "branch", "apply", "import", "sync", "notify", "reply", "close", "open", "archive", "upsert",
    "replace", "truncate", "format", "shutdown", "reboot", "spawn", "invoke", "call", "transact", "mint", "sign", "tweet",
}
DESTRUCTIVE_WORDS = re.compile(r"\b(delet\w*|remov\w*|overwrit\w*|destroy\w*|drop\w*|wipe\w*|erase\w*|permanent\w*|irreversibl\w*|"
                               r"send\w* (an? )?(e-?mail|message)|"
                               r"execut\w* (arbitrary|shell|command)|run\w* (arbitrary|shell|command))\b", re.I)
MAX_ARGUMENT_DEPTH = 4
MAX_ITEMS = 64  # a schema asking for more items, or longer strings, than these is not one to build arguments for
MAX_LENGTH = 10_000


def words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def safe_to_call(tool: dict[str, Any]) -> tuple[bool, str]:
    """(callable, why): read-only by annotation and by name and description, and not open-world."""
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    name = str(tool.get("name", ""))
    if annotations.get("readOnlyHint") is not True:
        return False, "not annotated read-only"
    if annotations.get("destructiveHint") is True:
        return False, "annotated destructive"
    if annotations.get("openWorldHint") is True:
        return False, "open-world: it reaches outside the server"
    tokens = words(name)
    mutating = sorted(set(tokens) & MUTATING_VERBS)
    if mutating:
        return False, f"name says it changes things ({', '.join(mutating)})"
    if not set(tokens) & READ_VERBS:
        return False, "no read verb in the name"
    description = str(tool.get("description") or "")
    if match := DESTRUCTIVE_WORDS.search(description):
        return False, f"description says {match.group(0)!r}"
    return True, "read-only by annotation, name and description"


def arguments_for(schema: Any) -> dict[str, Any] | None:
    """Schema-valid arguments (required properties only), or None when none can be built and checked."""
    if not isinstance(schema, dict):
        return None
    try:
        value = _value(schema, 0)
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or first_error(value, schema) is not None:
        return None
    return value


def _value(schema: dict[str, Any], depth: int) -> Any:
    if depth > MAX_ARGUMENT_DEPTH:
        raise ValueError("schema too deep")
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _value(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        return {name: _named(name, properties.get(name) or {"type": "string"}, depth + 1) for name in required}
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {"type": "string"}
        count = int(schema.get("minItems") or 0)
        if count > MAX_ITEMS:
            raise ValueError(f"minItems {count} is more than {MAX_ITEMS}")
        return [_value(items, depth + 1) for _ in range(count)]
    if kind == "integer" or kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        if high is not None and value > high:
            value = low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema)


# Values a reader of the parameter's name would pass, where a generic "test" would fail for a reason that says
# nothing about the server (an unknown time zone, a path that does not exist).
NAME_HINTS = {"timezone": "UTC", "time_zone": "UTC", "tz": "UTC", "source_timezone": "UTC", "target_timezone": "Europe/London",
              "path": ".", "repo_path": ".", "directory": ".", "dir": ".", "folder": ".", "cwd": ".", "root": ".",
              "url": "https://example.com/", "uri": "https://example.com/", "query": "test", "q": "test", "language": "en", "locale": "en",
              "time": "12:00", "date": "2026-01-01"}


def _named(name: str, schema: dict[str, Any], depth: int) -> Any:
    hint = NAME_HINTS.get(name.lower())
    if hint is not None and schema.get("type") == "string" and not any(k in schema for k in ("enum", "const", "default", "pattern", "format")):
        return hint
    return _value(schema, depth)


def _string(schema: dict[str, Any]) -> str:
    formats = {"uri": "https://example.com/", "url": "https://example.com/", "email": "probe@example.com", "date": "2026-01-01",
               "date-time": "2026-01-01T00:00:00Z", "time": "12:00:00", "uuid": "00000000-0000-4000-8000-000000000000", "ipv4": "192.0.2.1"}
    text = formats.get(str(schema.get("format")), "test")
    minimum = int(schema.get("minLength") or 0)
    if minimum > MAX_LENGTH:
        raise ValueError(f"minLength {minimum} is more than {MAX_LENGTH}")
    if len(text) < minimum:
        text = text + "x" * (minimum - len(text))
    maximum = schema.get("maxLength")
    return text[: int(maximum)] if isinstance(maximum, int) else text


def fuzz_cases(schema: dict[str, Any], valid: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Seed 000's fuzz inputs for one tool, each a change to otherwise valid arguments."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    strings = [n for n, p in properties.items() if isinstance(p, dict) and p.get("type") == "string"]
    numbers = [n for n, p in properties.items() if isinstance(p, dict) and p.get("type") in ("integer", "number")]
    cases: list[tuple[str, dict[str, Any]]] = []
    if strings:
        target = strings[0]
        cases += [("oversized_string", {**valid, target: "A" * 100_000}), ("empty_string", {**valid, target: ""}),
                  ("unicode_edge", {**valid, target: "\u202e\u200b\ufeff😀\U0010ffff\u0301\x00"})]
    if required:
        cases.append(("null_required", {**valid, required[0]: None}))
    if numbers:
        cases.append(("boundary_number", {**valid, numbers[0]: 2**63}))
    return cases


def missing_required(schema: dict[str, Any], valid: dict[str, Any]) -> dict[str, Any] | None:
    required = [r for r in schema.get("required") or [] if isinstance(r, str) and r in valid]
    return {k: v for k, v in valid.items() if k != required[0]} if required else None


def wrong_type(schema: dict[str, Any], valid: dict[str, Any]) -> dict[str, Any] | None:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name in valid:
        kind = (properties.get(name) or {}).get("type")
        if kind == "string":
            return {**valid, name: 12345}
        if kind in ("integer", "number", "boolean", "array", "object"):
            return {**valid, name: "not the right type"}
    return None


ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback|failed|failure)\b|\b(traceback \(most recent call last\)|internal server error)\b", re.I)


def functional(result: dict[str, Any], output_schema: Any) -> tuple[bool, str]:
    """Does a successful result look like the job: content, structuredContent valid against outputSchema, no error text?"""
    content = result.get("content") if isinstance(result.get("content"), list) else []
    structured = result.get("structuredContent")
    if not content and structured is None:
        return False, "empty result"
    if isinstance(output_schema, dict):
        if structured is None:
            return False, "outputSchema declared but no structuredContent"
        problem = first_error(structured, output_schema)
        if problem is not None:
            return False, f"structuredContent does not match outputSchema: {problem[:120]}"
    texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    if any(ERROR_TEXT.search(t) for t in texts):
        return False, "error text inside a successful result"
    return True, "content as declared"
