"""Validating values against a server's JSON Schemas without running its regular expressions unbounded.

A schema's `pattern` and `patternProperties` are regular expressions a hostile server writes; Python's
`re` has no timeout and holds the interpreter while it backtracks, so one catastrophic pattern would
stall every probe in the run. Here patterns run in the `regex` engine with a time limit, and a pattern
that cannot be decided in time fails validation with a reason that says so.
"""

from __future__ import annotations

from typing import Any, Iterator

import jsonschema
import regex
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import extend

PATTERN_SECONDS = 0.05  # per match; a sane pattern on a probe-sized string takes microseconds


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when it cannot be decided in time (or does not compile)."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except (TimeoutError, regex.error, TypeError, ValueError, RecursionError):
        return None


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if found is None:
        yield ValidationError(f"pattern {pattern[:80]!r} could not be checked within {PATTERN_SECONDS:g} s")
    elif not found:
        yield ValidationError(f"{instance[:80]!r} does not match {pattern[:80]!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            found = _search(pattern, key)
            if found is None:
                yield ValidationError(f"pattern {pattern[:80]!r} could not be checked within {PATTERN_SECONDS:g} s")
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [key for key in instance if key not in properties and not any(_search(p, key) for p in patterns)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        yield ValidationError(f"additional properties are not allowed ({', '.join(repr(k[:40]) for k in extras[:5])} unexpected)")


def _unchecked(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    return iter(())


SafeValidator = extend(Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties,
                                              "additionalProperties": _additional_properties})
# jsonschema decides unevaluatedProperties with Python's `re` over every patternProperties in reach; where a schema
# has any, that keyword is left unchecked rather than run unbounded.
PatternSafeValidator = extend(SafeValidator, {"unevaluatedProperties": _unchecked})


def _mentions(schema: Any, key: str, depth: int = 0) -> bool:
    if depth > 50:
        return True  # deeper than any real schema: assume the worst
    if isinstance(schema, dict):
        return key in schema or any(_mentions(v, key, depth + 1) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions(v, key, depth + 1) for v in schema)
    return False


def first_error(instance: Any, schema: Any) -> str | None:
    """Why `instance` is not valid against `schema` (None when it is); an unusable schema is a reason too."""
    cls = PatternSafeValidator if _mentions(schema, "patternProperties") else SafeValidator
    try:
        cls.check_schema(schema)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    except jsonschema.SchemaError as exc:
        return f"invalid schema: {exc.message[:160]}"
    except Exception as exc:  # noqa: BLE001 - unknown types, unresolvable $refs, recursion: the server's schema is unusable
        return f"schema cannot be used: {type(exc).__name__}: {str(exc)[:160]}"
    return error.message[:300] if error is not None else None
