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
TYPE_WORDS = {"string": "string", "str": "string", "text": "string", "integer": "integer", "int": "integer", "number": "number",
              "float": "number", "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "object": "object"}
FILLER = {"a", "an", "the", "value", "type", "field", "parameter", "param", "argument", "arg", "input", "of", "is", "this"}
TAG = re.compile(r"^\s*[(\[]([a-z ,|/]+)[)\]]|[(\[]([a-z ,|/]+)[)\]]\s*[.]?\s*$|^\s*(required|optional)\s*[.:;-]", re.I)
MAX_WORDS = r"max(?:imum)?|at most|up to|no more than|not more than|<=|≤|limit(?:ed)? to"
MIN_WORDS = r"min(?:imum)?|at least|no less than|not less than|>=|≥"
NUMBER = r"(-?\d+(?:\.\d+)?)"
BOUND = {"max": re.compile(rf"(?:{MAX_WORDS})\s*(?:of\s*|is\s*|[:=]\s*)?{NUMBER}", re.I),
         "min": re.compile(rf"(?:{MIN_WORDS})\s*(?:of\s*|is\s*|[:=]\s*)?{NUMBER}", re.I),
         "range": re.compile(rf"(?:between\s*{NUMBER}\s*and\s*{NUMBER})|(?:\(\s*{NUMBER}\s*(?:-|–|to)\s*{NUMBER}\s*\))", re.I)}
LOWER, UPPER = ("minimum", "minLength", "minItems", "exclusiveMinimum"), ("maximum", "maxLength", "maxItems", "exclusiveMaximum")
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


def _inputs(props: dict[str, Any], required: list[Any]) -> float:
    """20 × the share of described arguments, 5 when every ID says where it comes from, 5 when no description
    restates a rule its schema already states; 30 for a tool without arguments (nothing to document)."""
    if not props:
        return 30.0
    texts = {k: str(v.get("description") or "").strip() if isinstance(v, dict) else "" for k, v in props.items()}
    described = sum(1 for t in texts.values() if t) / len(props)
    ids = [k for k in props if re.search(r"(^|_)id$|Id$", k)]
    ids_explained = all(re.search(r"\b(from|returned by|as returned|obtained|get it|use the)\b|`\w+`", texts[k], re.I) for k in ids)
    restated = any(restated_rules(texts[k], spec, k in required) for k, spec in props.items() if texts[k] and isinstance(spec, dict))
    return 20 * described + (5.0 if ids_explained else 0.0) + (0.0 if restated else 5.0)


def restated_rules(text: str, spec: dict[str, Any], required: bool) -> list[str]:
    """The rules of an argument's schema that its description restates, and nothing else (seed 001: "no restated schema
    rules"): a text that is only its type, a tag naming its type or whether it is required, a bound its schema declares.
    A rule the text states and the schema does not is no restatement; a word that names a type ("Number of steps") is
    none either."""
    found: list[str] = []
    types = {spec["type"]} if isinstance(spec.get("type"), str) else set(spec.get("type") or []) if isinstance(spec.get("type"), list) else set()
    if "integer" in types:
        types.add("number")
    if _only_rules(re.findall(r"[a-z]+", text.lower())):
        return ["nothing but its type or required flag"]
    for tag in TAG.finditer(text):
        words = re.findall(r"[a-z]+", (tag.group(1) or tag.group(2) or tag.group(3) or "").lower())
        if _only_rules(words):  # "(string, required)", "[optional]"; not "(ISO string)" nor "(required to confirm)"
            found += [f"type {w}" for w in words if TYPE_WORDS.get(w) in types]
            found += [w for w in words if w == ("required" if required else "optional")]
    return found + _bounds(text, spec)


def _only_rules(words: list[str]) -> bool:
    return bool(words) and all(w in FILLER or w in TYPE_WORDS or w in ("required", "optional") for w in words) and not set(words) <= FILLER


def _bounds(text: str, spec: dict[str, Any]) -> list[str]:
    """The bounds the text states that the schema declares too (the same number)."""
    lows = {float(spec[k]) for k in LOWER if isinstance(spec.get(k), (int, float)) and not isinstance(spec.get(k), bool)}
    highs = {float(spec[k]) for k in UPPER if isinstance(spec.get(k), (int, float)) and not isinstance(spec.get(k), bool)}
    if not lows and not highs:  # most arguments declare no bound: nothing the text could restate
        return []
    found = [f"maximum {m.group(1)}" for m in BOUND["max"].finditer(text) if float(m.group(1)) in highs]
    found += [f"minimum {m.group(1)}" for m in BOUND["min"].finditer(text) if float(m.group(1)) in lows]
    for m in BOUND["range"].finditer(text):
        low, high = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
        if float(low) in lows and float(high) in highs:
            found.append(f"range {low}–{high}")
    return found


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
        "inputs": _inputs(view.props, view.required),
        "annotations": _annotations(view.hints),
        "output_schema": _output_schema(view.output_schema),
    }


def doc_scores(facts: Facts) -> dict[str, dict[str, float]]:
    """Per-tool documentation scores, computed once per server and shared by the five rules."""
    if "review.docs" not in facts.memo:
        facts.memo["review.docs"] = {v.name: tool_doc_scores(v) for v in tool_views(facts) or []}
    return facts.memo["review.docs"]
