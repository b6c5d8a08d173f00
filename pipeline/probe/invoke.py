"""Which tools may be called, with what arguments, and how to read what comes back (seeds 000, 003).

A tool is called only when its annotations say readOnlyHint: true and openWorldHint: false explicitly (the spec's
default is open-world), not destructiveHint: true, and its own words agree (pipeline.tool_safety): a name of
printable ASCII with a read verb and no word that says or may say it changes things, anywhere in the name; a
description in words the lists can read, with no wording of a change. Arguments come from the input schema: a
value it gives (const, enum, examples, default) where it gives one, else one we make up from its type and the
parameter's name; never a value that names a mutation, and checked against the schema before any call.
`given_by_schema` says afterwards which of the two a call's arguments were (methodology deviation 65). Pure.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.probe.schema_check import first_error
from pipeline.tool_safety import (
    READ_VERBS,
    affirms,
    changing_parameter,
    confirming_parameter,
    dry_run_parameter,
    name_changes,
    name_problem,
    name_words,
    names_a_change,
    script_problem,
    text_changes,
    tool_text,
)

MAX_ARGUMENT_DEPTH = 4
MAX_ITEMS = 64  # a schema asking for more items, or longer strings, than these is not one to build arguments for
MAX_LENGTH = 10_000


class Unsafe(ValueError):
    """No argument value can be chosen that does not name a mutation."""


def safe_to_call(tool: dict[str, Any]) -> tuple[bool, str]:
    """(callable, why): annotated read-only and closed-world explicitly, not destructive, and read-only by name and description."""
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    name = str(tool.get("name", ""))
    if annotations.get("readOnlyHint") is not True:
        return False, "not annotated read-only"
    if annotations.get("destructiveHint") is True:
        return False, "annotated destructive"
    if annotations.get("openWorldHint") is not False:
        return False, "not annotated closed-world (openWorldHint: false; the spec's default is open-world)"
    if problem := name_problem(name):
        return False, problem
    if mutating := name_changes(name):
        return False, f"name says it changes things ({', '.join(mutating)})"
    if not set(name_words(name)) & READ_VERBS:
        return False, "no read verb in the name"
    text = tool_text(tool, parameters=True)
    if problem := script_problem(text):
        return False, f"description cannot be read: {problem}"
    if found := text_changes(text):
        return False, f"description says {found[0]!r}"
    return True, "read-only by annotation, name and description"


def call_plans(tools: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The tools that may be called, each once, with their arguments. A name listed twice with different definitions is
    never called: the server, not the definition we read, decides which of them runs; nor is a tool whose name is not a
    string (it cannot be called by it)."""
    definitions: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        if isinstance(tool.get("name"), str):
            definitions.setdefault(tool["name"], []).append(tool)
    plans = []
    for listed in definitions.values():
        tool = listed[0]
        if any(other != tool for other in listed[1:]) or not safe_to_call(tool)[0]:
            continue
        arguments = arguments_for(tool.get("inputSchema"))
        if arguments is not None:
            plans.append((tool, arguments))
    return plans


def arguments_for(schema: Any) -> dict[str, Any] | None:
    """Schema-valid arguments (required properties, and the optional ones that guard a mutation), or None when none can be
    built and checked, or when every value a property allows names a mutation."""
    if not isinstance(schema, dict):
        return None
    try:
        value = _value(schema, 0)
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or first_error(value, schema) is not None:
        return None
    return value


def _unsafe(value: Any, confirming: bool, dry: bool) -> bool:
    """A value that names a mutation, confirms one (confirm: true), or turns a dry run off."""
    return not affirms(value) if dry else names_a_change(value, confirming)


def _value(schema: dict[str, Any], depth: int, confirming: bool = False, dry: bool = False) -> Any:
    if depth > MAX_ARGUMENT_DEPTH:
        raise ValueError("schema too deep")
    if "const" in schema:
        if _unsafe(schema["const"], confirming, dry):
            raise Unsafe(f"the only value allowed, {schema['const']!r}, names a mutation")
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        for value in schema["enum"]:
            if not _unsafe(value, confirming, dry):
                return value
        raise Unsafe("every value allowed names a mutation")
    if (example := _example(schema, confirming, dry)) is not _NONE:
        return example
    if "default" in schema and not _unsafe(schema["default"], confirming, dry):
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _first_branch(schema[key], depth, confirming, dry)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        guards = [n for n, p in properties.items() if n not in required and isinstance(p, dict) and _guards(n, p)]
        return {name: _named(name, _property(properties, name), depth + 1) for name in required + guards}
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {"type": "string"}
        count = int(schema.get("minItems") or 0)
        if count > MAX_ITEMS:
            raise ValueError(f"minItems {count} is more than {MAX_ITEMS}")
        return [_value(items, depth + 1, confirming, dry) for _ in range(count)]
    if kind == "integer" or kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        if high is not None and value > high:
            value = low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return dry  # false, except for a dry run
    if kind == "null":
        return None
    return _string(schema)


_NONE = object()


def _example(schema: dict[str, Any], confirming: bool, dry: bool) -> Any:
    """The first of the schema's own examples that is safe and valid against it (an object's examples are not taken
    whole: its properties are chosen one by one, so a guard is always sent with its safe value)."""
    examples = schema.get("examples")
    if not isinstance(examples, list) or schema.get("type") == "object" or "properties" in schema:
        return _NONE
    for value in examples:
        if not isinstance(value, dict) and not _unsafe(value, confirming, dry) and first_error(value, schema) is None:
            return value
    return _NONE


def given_by_schema(schema: Any, value: Any, depth: int = 0) -> bool:
    """Is every value in `value` one the schema itself gives (its const, an enum member, an example, the default; a
    boolean or null, whose every value the type names), rather than one we made up? An object of no properties, or of
    given ones only, is given: nothing in it was invented."""
    if not isinstance(schema, dict) or depth > MAX_ARGUMENT_DEPTH:
        return False
    offered = [schema["const"]] if "const" in schema else []
    for key in ("enum", "examples"):
        offered += schema[key] if isinstance(schema.get(key), list) else []
    offered += [schema["default"]] if "default" in schema else []
    if any(type(value) is type(o) and value == o for o in offered) or isinstance(value, bool) or value is None:
        return True
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and any(given_by_schema(b, value, depth + 1) for b in schema[key]):
            return True
    if isinstance(value, dict):
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return all(given_by_schema(properties.get(name), item, depth + 1) for name, item in value.items())
    if isinstance(value, list) and value:
        return all(given_by_schema(schema.get("items"), item, depth + 1) for item in value)
    return False


def _property(properties: dict[str, Any], name: str) -> dict[str, Any]:
    schema = properties.get(name, {"type": "string"})  # a required name with no schema takes any string
    if not isinstance(schema, dict):
        raise ValueError(f"the schema of {name!r} is not an object")
    return schema


def _first_branch(branches: list[Any], depth: int, confirming: bool, dry: bool) -> Any:
    problem: Exception = ValueError("no usable branch")
    for branch in branches:
        if isinstance(branch, dict):
            try:
                return _value(branch, depth + 1, confirming, dry)
            except (TypeError, ValueError) as exc:
                problem = exc
    raise problem


def _guards(name: str, schema: dict[str, Any]) -> bool:
    """An optional property sent anyway, with its safe value: a dry run, a boolean switch named for a mutation or a
    confirmation, or any property whose default names a mutation (left out, the server would apply it)."""
    if dry_run_parameter(name):
        return True
    confirming = confirming_parameter(name)
    return (confirming and schema.get("type") == "boolean") or ("default" in schema and names_a_change(schema["default"], confirming))


# Values a reader of the parameter's name would pass, where a generic "test" would fail for a reason that says
# nothing about the server (an unknown time zone, a path that does not exist).
NAME_HINTS = {"timezone": "UTC", "time_zone": "UTC", "tz": "UTC", "source_timezone": "UTC", "target_timezone": "Europe/London",
              "path": ".", "repo_path": ".", "directory": ".", "dir": ".", "folder": ".", "cwd": ".", "root": ".",
              "url": "https://example.com/", "uri": "https://example.com/", "query": "test", "q": "test", "language": "en", "locale": "en",
              "time": "12:00", "date": "2026-01-01"}


def _named(name: str, schema: dict[str, Any], depth: int) -> Any:
    hint = NAME_HINTS.get(name.lower())
    given = ("enum", "const", "examples", "default", "pattern", "format")
    if hint is not None and schema.get("type") == "string" and not any(k in schema for k in given):
        return hint
    dry = dry_run_parameter(name)
    if not dry and changing_parameter(name) and schema.get("type") != "boolean":
        raise Unsafe(f"parameter {name!r} names a change: no value of it is safe to send")
    return _value(schema, depth, confirming=not dry and confirming_parameter(name), dry=dry)


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
