"""What the prober says about the text a server hands to agents, as checks in its evidence (pure).

Tool names must be unique, at most 64 characters of [A-Za-z0-9_.-]; descriptions and instructions are
measured; hidden or control characters and tool-poisoning markers are named with where they stand; a read-only
annotation that the tool's own name or description contradicts is an annotation inconsistency.
The scoring rules read the same stored tools; these checks make the probe's own record say it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.models import CheckResult
from pipeline.text import hidden_characters, injection_findings, tool_texts, where
from pipeline.tool_safety import read_only_contradictions

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
LONG_DESCRIPTION = 10_000  # characters: past this a description crowds an agent's context
LONG_INSTRUCTIONS = 20_000


def tool_label(tool: dict[str, Any], index: int) -> str:
    """How a finding names a tool: by its name, or by its place in the list when it has no usable one."""
    name = tool.get("name")
    return name if isinstance(name, str) and name else f"tools[{index}]"


def name_problems(tools: list[dict[str, Any]]) -> list[str]:
    """Each tool's name judged on its own: missing, not a string, malformed, or a duplicate of another's."""
    names = [t.get("name") for t in tools]
    missing = [f"tools[{i}] has no name" for i, n in enumerate(names) if n is None or n == ""]
    not_text = [f"tools[{i}] name is not a string: {str(n)[:60]}" for i, n in enumerate(names) if n is not None and not isinstance(n, str)]
    text = [n for n in names if isinstance(n, str) and n]
    duplicates = sorted(n for n, count in Counter(text).items() if count > 1)
    malformed = sorted({repr(n) for n in text if not NAME.match(n)})
    return (missing + not_text + [f"duplicate: {', '.join(duplicates)}"] * bool(duplicates)
            + [f"not 1-64 of [A-Za-z0-9_.-]: {', '.join(malformed)[:300]}"] * bool(malformed))


def tool_text_checks(tools: list[dict[str, Any]], instructions: str | None) -> list[CheckResult]:
    names = [tool_label(t, i) for i, t in enumerate(tools)]
    problems = name_problems(tools)
    sizes = [len(str(t.get("description") or "")) for t in tools]
    long = [f"{n} ({size:,} chars)" for n, size in zip(names, sizes) if size > LONG_DESCRIPTION]
    if instructions and len(instructions) > LONG_INSTRUCTIONS:
        long.append(f"instructions ({len(instructions):,} chars)")
    hidden, poisoned = [], []
    for owner, field, text in tool_texts(tools, instructions):
        if found := hidden_characters(text):
            hidden.append(f"{where(owner, field)}: {', '.join(found[:5])}")
        if found := injection_findings(text):
            poisoned.append(f"{where(owner, field)}: {', '.join(found)}")
    contradicted = [f"{t.get('name')}: {', '.join(found)}" for t in tools if (found := read_only_contradictions(t))]
    return [
        CheckResult(name="tool_names", outcome="valid" if not problems else "invalid", passed=not problems,
                    detail="; ".join(problems)[:2000] or None),
        CheckResult(name="text_sizes", outcome=f"longest description {max(sizes, default=0):,} chars", passed=not long,
                    detail="; ".join(long)[:1000] or None),
        CheckResult(name="hidden_characters", outcome="found" if hidden else "none", passed=not hidden, detail="; ".join(hidden)[:1000] or None),
        CheckResult(name="poisoning_markers", outcome="found" if poisoned else "none", passed=not poisoned,
                    detail="; ".join(poisoned)[:1000] or None),
        CheckResult(name="annotation_consistency", passed=not contradicted,
                    outcome=f"{len(contradicted)} read-only annotations contradicted" if contradicted else "consistent",
                    detail="; ".join(contradicted)[:1000] or None),
    ]
