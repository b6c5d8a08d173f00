"""Seed 001's tool documentation quality: one tool's documentation in points, pure.

Title 10, description 30, inputs 30, annotations 15, output schema 15. The review rubric's five
tool documentation rules each average one part over a server's tools (pipeline.score.review_tools).
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.score.facts import Facts
from pipeline.score.tools import ToolView, read_tool, tool_views

DOC_PARTS = {"title": 10, "description": 30, "inputs": 30, "annotations": 15, "output_schema": 15}  # one tool's documentation, in points
WHEN_TO_USE = re.compile(r"\b(use (this|it|when|to|for)|when (you|the user|an agent)|call (this|it) (when|to|before|after)"
                         r"|useful (for|when)|if you need)\b", re.I)
RETURNS = re.compile(r"\b(returns?|responds? with|outputs?|yields?|gives back|result(s)? (in|is|are)|produces?)\b", re.I)
RESTATED_RULE = re.compile(r"^\s*(an? )?(string|integer|number|boolean|array|object)\b[\s.,;:()\w-]{0,30}$"
                           r"|\((string|integer|number|boolean|required|optional)[,)]", re.I)
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _squash(text: str) -> str:
    return re.sub(r"[\s_.\-]+", "", text.lower())


def _title(view: ToolView) -> float:
    """10 for a human title that is not the tool name written another way."""
    return 10.0 if view.title and _squash(view.title) != _squash(view.name) else 0.0


def _description(description: str) -> float:
    """10 each for 20+ characters, saying when to use the tool, and saying what it returns."""
    return ((10.0 if len(description) >= 20 else 0.0) + (10.0 if WHEN_TO_USE.search(description) else 0.0)
            + (10.0 if RETURNS.search(description) else 0.0))


def _inputs(props: dict[str, Any]) -> float:
    """20 × the share of described arguments, 5 when every ID says where it comes from, 5 when no description
    restates the schema's rules; 30 for a tool without arguments (nothing to document)."""
    if not props:
        return 30.0
    texts = {k: str(v.get("description") or "").strip() if isinstance(v, dict) else "" for k, v in props.items()}
    described = sum(1 for t in texts.values() if t) / len(props)
    ids = [k for k in props if re.search(r"(^|_)id$|Id$", k)]
    ids_explained = all(re.search(r"\b(from|returned by|as returned|obtained|get it|use the)\b|`\w+`", texts[k], re.I) for k in ids)
    restated = any(RESTATED_RULE.search(t) for t in texts.values() if t)
    return 20 * described + (5.0 if ids_explained else 0.0) + (0.0 if restated else 5.0)


def _annotations(hints: dict[str, Any]) -> float:
    """15 × the share of the four hints declared as booleans."""
    declared = sum(isinstance(hints.get(h), bool) for h in HINTS)
    return 15 * declared / 4


def _output_schema(output: dict[str, Any] | None) -> float:
    """15 for an outputSchema whose fields are all described, 7.5 for one that is not, 0 for none."""
    if output is None:
        return 0.0
    fields = output.get("properties") if isinstance(output.get("properties"), dict) else {}
    all_described = bool(fields) and all(isinstance(f, dict) and f.get("description") for f in fields.values())
    return 15.0 if all_described else 7.5


def tool_doc_scores(tool: dict[str, Any] | ToolView) -> dict[str, float]:
    """One tool's documentation: title 10, description 30, inputs 30, annotations 15, output schema 15."""
    view = tool if isinstance(tool, ToolView) else read_tool(tool)
    return {
        "title": _title(view),
        "description": _description(view.description),
        "inputs": _inputs(view.props),
        "annotations": _annotations(view.hints),
        "output_schema": _output_schema(view.output_schema),
    }


def doc_scores(facts: Facts) -> dict[str, dict[str, float]]:
    """Per-tool documentation scores, computed once per server and shared by the five rules."""
    if "review.docs" not in facts.memo:
        facts.memo["review.docs"] = {v.name: tool_doc_scores(v) for v in tool_views(facts) or []}
    return facts.memo["review.docs"]
