"""How a server's tools changed: between its source and its runtime listing, and between two
listings over time. Shared by the score (the schema-drift flag, the remote rubric's stability) and
the server page."""

from __future__ import annotations

from typing import Any


def drift_between(static: list | None, runtime: list[dict] | None) -> dict[str, list[str]] | None:
    """Tool names found in source (static extraction) vs listed at runtime; None when either is unknown."""
    if static is None or runtime is None:
        return None
    static_names = {str(name) for name in static}
    runtime_names = {str(t.get("name")) for t in runtime}
    return {"missing_at_runtime": sorted(static_names - runtime_names), "extra_at_runtime": sorted(runtime_names - static_names)}


def _schema_of(tool: dict[str, Any], key: str) -> dict[str, Any]:
    return tool.get(key) if isinstance(tool.get(key), dict) else {}


def breaking_changes(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Input: a parameter removed, newly required, or retyped. Output: a declared field removed."""
    count = 0
    old_in, new_in = _schema_of(before, "inputSchema"), _schema_of(after, "inputSchema")
    old_props, new_props = old_in.get("properties") or {}, new_in.get("properties") or {}
    for name, schema in old_props.items():
        if name not in new_props:
            count += 1
        elif isinstance(schema, dict) and isinstance(new_props[name], dict) and schema.get("type") != new_props[name].get("type"):
            count += 1
    count += len(set(new_in.get("required") or []) - set(old_in.get("required") or []))
    old_out = (_schema_of(before, "outputSchema").get("properties") or {})
    new_out = (_schema_of(after, "outputSchema").get("properties") or {})
    count += len(set(old_out) - set(new_out))
    return count
