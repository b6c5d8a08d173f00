"""One reading of each listed tool, shared by every rubric's rules.

Several rules of several rubrics look at the same few facts of each tool (is it described, are
its parameters typed, which hints does it declare). Reading them once per tool, rather than
once per rule, is what keeps a fleet rescore fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from pipeline.score.facts import Facts

TYPE_KEYS = frozenset(("type", "enum", "anyOf", "oneOf", "$ref", "const"))
BEHAVIOUR_HINTS = ("readOnlyHint", "destructiveHint", "openWorldHint")


@dataclass(slots=True)
class ToolView:
    tool: dict[str, Any]
    name: str
    description: str  # stripped
    title: str  # title or annotations.title, stripped
    hints: dict[str, Any]
    props: dict[str, Any]
    input_is_object: bool
    params: int
    params_typed: int
    params_described: int
    has_required: bool
    required: list[Any]  # the names the input schema requires
    output_schema: dict[str, Any] | None

    @property
    def tokens(self) -> int:
        """About four characters of JSON a token (read only by the remote rubric, so not precomputed)."""
        return max(1, len(to_json(self.tool)) // 4)

    @property
    def behaviour_hints_declared(self) -> bool:
        return all(isinstance(self.hints.get(h), bool) for h in BEHAVIOUR_HINTS)


def read_tool(tool: dict[str, Any]) -> ToolView:
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    typed = described = 0
    for spec in props.values():
        if isinstance(spec, dict):
            typed += not TYPE_KEYS.isdisjoint(spec)
            text = spec.get("description")
            described += isinstance(text, str) and not text.isspace() and text != ""
    output = tool.get("outputSchema") if isinstance(tool.get("outputSchema"), dict) else None
    return ToolView(
        tool=tool,
        name=str(tool.get("name", "")),
        description=str(tool.get("description") or "").strip(),
        title=str(tool.get("title") or hints.get("title") or "").strip(),
        hints=hints,
        props=props,
        input_is_object=schema.get("type") == "object",
        params=len(props),
        params_typed=typed,
        params_described=described,
        has_required=isinstance(schema.get("required"), list),
        required=schema["required"] if isinstance(schema.get("required"), list) else [],
        output_schema=output,
    )


def tool_views(facts: Facts) -> list[ToolView] | None:
    """The tools of the latest successful probe, each read once per scoring pass (None: not listed)."""
    if "tool_views" not in facts.memo:
        tools = facts.tools
        facts.memo["tool_views"] = None if tools is None else [read_tool(t) for t in tools]
    return facts.memo["tool_views"]
