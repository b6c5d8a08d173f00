"""A server's marker and hidden-character findings, over the agent-facing text its facts hold."""

from __future__ import annotations

from pipeline.text import (
    hidden_characters,
    injection_findings,
    injection_severity,
    may_hide_characters,
    may_hold_markers,
    suspicious_parameters,
    tool_markers,
    tool_texts,
    where,
)


def findings(facts) -> dict[str, list[tuple[str, list[str]]]]:
    """Marker and hidden-character findings over a server's agent-facing text, computed once per scoring pass."""
    if "markers" not in facts.memo:
        instructions = facts.probe.instructions if facts.probe else None
        texts = tool_texts(facts.tools, instructions)
        blob = "\n".join(text for _, _, text in texts)
        owned = [(o, f, m) for o, f, text in texts if (m := injection_findings(text))] if may_hold_markers(blob) else []
        facts.memo["markers"] = {
            "texts": texts,
            "owned": owned,  # (owner, field, markers): the same findings, grouped by tool for the Prompt Injection flag
            "injection": [(where(o, f), m) for o, f, m in owned],
            "hidden": [(where(o, f), h) for o, f, text in texts if (h := hidden_characters(text))] if may_hide_characters(blob) else [],
        }
    return facts.memo["markers"]


def critical_injection(facts) -> list[tuple[str, list[str]]]:
    """Tools (and instructions) whose markers, over all their texts together, are critical: the runtime tool list's, or,
    when no tool list was seen at runtime, the tools extracted from source (named by file and line)."""
    if facts.tools is not None:
        by_owner: dict[str, set[str]] = {}
        for owner, _, markers in findings(facts)["owned"]:
            by_owner.setdefault(owner if owner != "server" else "server instructions", set()).update(markers)
        for tool in facts.tools:
            if isinstance(tool, dict) and suspicious_parameters(tool):
                by_owner.setdefault(str(tool.get("name", "?")), set()).add("suspicious-parameter")
        listed = [(owner, sorted(markers)) for owner, markers in by_owner.items()]
    else:
        extracted = facts.analysis.tools if facts.analysis and facts.analysis.ok and facts.analysis.tools else []
        # A model's reading of the source is not the source's text: it fires no flag (deviation 127).
        extracted = [t for t in extracted if not t.pattern.startswith("llm:")]
        listed = [(f"{t.name} ({t.file}:{t.line})", tool_markers({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
                  for t in extracted]
    return [(owner, markers) for owner, markers in listed if injection_severity(markers) == "critical"]
