"""A server's marker and hidden-character findings, over the agent-facing text its facts hold."""

from __future__ import annotations

from pipeline.text import hidden_characters, injection_findings, may_hide_characters, may_hold_markers, tool_texts, where


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
