"""How a server's tools changed: between its source and its runtime listing, and between two
listings over time. Shared by the score (the schema-drift flag, the remote rubric's stability) and
the server page."""

from __future__ import annotations

from typing import Any


def drift_between(static: list | None, runtime: list[dict] | None, complete: bool) -> dict[str, Any] | None:
    """Tool names found in source (static extraction) vs listed at runtime; None when either is unknown.

    A tool found in source but not listed is evidence whatever the extraction read. A tool listed but not found is
    evidence only when the extraction read every file that may define tools (`complete`): after a partial read it is
    more likely a tool we did not reach than drift, so it is not reported and `complete` says why."""
    if static is None or runtime is None:
        return None
    static_names = {str(name) for name in static}
    runtime_names = {str(t.get("name")) for t in runtime}
    return {"missing_at_runtime": sorted(static_names - runtime_names),
            "extra_at_runtime": sorted(runtime_names - static_names) if complete else [], "complete": complete}


def extraction_complete(metrics: dict[str, Any]) -> bool:
    """Whether an analysis's tool extraction read all of the source (metrics["extraction"]); an analysis that does not
    say (made before it was recorded) counts as partial."""
    extraction = metrics.get("extraction")
    return isinstance(extraction, dict) and extraction.get("complete") is True


def _schema_of(tool: dict[str, Any], key: str) -> dict[str, Any]:
    return tool.get(key) if isinstance(tool.get(key), dict) else {}


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    return schema["properties"] if isinstance(schema.get("properties"), dict) else {}


def _required(schema: dict[str, Any]) -> set[str]:
    """The names a schema requires (a tool's schemas are kept as the server sent them, well formed or not)."""
    required = schema.get("required")
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def breaking_changes(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Input: a parameter removed, newly required, or retyped. Output: a declared field removed."""
    count = 0
    old_in, new_in = _schema_of(before, "inputSchema"), _schema_of(after, "inputSchema")
    old_props, new_props = _properties(old_in), _properties(new_in)
    for name, schema in old_props.items():
        if name not in new_props:
            count += 1
        elif isinstance(schema, dict) and isinstance(new_props[name], dict) and schema.get("type") != new_props[name].get("type"):
            count += 1
    count += len(_required(new_in) - _required(old_in))
    old_out, new_out = _properties(_schema_of(before, "outputSchema")), _properties(_schema_of(after, "outputSchema"))
    count += len(set(old_out) - set(new_out))
    return count
