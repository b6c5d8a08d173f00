"""The offline judge: a deterministic reading of a tool schema, for runs without API keys."""

from __future__ import annotations

import re
from typing import Any

VERB = re.compile(r"^\s*(get|list|read|search|fetch|find|create|update|delete|write|send|run|convert|add|remove|set|query|return|retrieve"
                  r"|show|describe|check|move|edit|open|close)\w*\b", re.I)


class OfflineJudge:
    provider = "offline"
    model = "offline-heuristic-1"
    offline = True

    def judge_tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        description = str(tool.get("description") or "").strip()  # a tool is kept as the server sent it
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        clarity = 0.0
        clarity += 40 if len(description) >= 20 else 20 if description else 0
        clarity += 20 if len(description) >= 80 else 0
        clarity += 20 if VERB.search(description) else 0
        clarity += 20 if re.fullmatch(r"[a-z][a-z0-9]*([_\-.][a-z0-9]+)*", str(tool.get("name", ""))) else 0
        if properties:
            typed = sum(1 for p in properties.values() if isinstance(p, dict) and ("type" in p or "enum" in p or "$ref" in p or "anyOf" in p))
            described = sum(1 for p in properties.values() if isinstance(p, dict) and p.get("description"))
            completeness = 100 * (0.5 * typed + 0.5 * described) / len(properties)
            if "required" not in schema:
                completeness *= 0.9
        else:
            completeness = 100.0  # a tool with no parameters leaves nothing to misread
        confidence = round(0.5 * clarity + 0.5 * completeness, 1)
        return {
            "clarity": round(clarity, 1),
            "input_completeness": round(completeness, 1),
            "confidence": confidence,
            "rationale": "offline heuristic: description length and verb, name shape, parameter types and descriptions",
        }
