"""A server's marker and hidden-character findings, over the agent-facing text its facts hold."""

from __future__ import annotations

from pipeline.text import hidden_characters, injection_findings, injection_severity, may_hide_characters, may_hold_markers, tool_texts, where


def findings(facts) -> dict[str, list[tuple[str, list[str]]]]:
    """Marker and hidden-character findings over a server's agent-facing text, computed once per scoring pass."""
    if "markers" not in facts.memo:
        instructions = facts.probe.instructions if facts.probe else None
        texts = tool_texts(facts.tools, instructions)
        blob = "\n".join(text for _, _, text in texts)
        facts.memo["markers"] = {
            "texts": texts,
            "injection": [(where(o, f), m) for o, f, text in texts if (m := injection_findings(text))] if may_hold_markers(blob) else [],
            "hidden": [(where(o, f), h) for o, f, text in texts if (h := hidden_characters(text))] if may_hide_characters(blob) else [],
        }
    return facts.memo["markers"]


def critical_injection(facts) -> list[tuple[str, list[str]]]:
    """Tools (and instructions) whose markers, over all their texts together, are critical: the runtime tool list's, or,
    when no tool list was seen at runtime, the tools extracted from source (named by file and line)."""
    if facts.tools is not None:
        found = findings(facts)
        by_owner: dict[str, set[str]] = {}
        if found["injection"]:
            for owner, _, text in found["texts"]:
                by_owner.setdefault(owner, set()).update(injection_findings(text))
        return [(owner, sorted(m)) for owner, m in by_owner.items() if injection_severity(m) == "critical"]
    extracted = facts.analysis.tools if facts.analysis and facts.analysis.ok and facts.analysis.tools else []
    found = []
    for tool in extracted:
        listed = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        markers = sorted({m for _, _, text in tool_texts([listed]) for m in injection_findings(text)})
        if injection_severity(markers) == "critical":
            found.append((f"{tool.name} ({tool.file}:{tool.line})", markers))
    return found
