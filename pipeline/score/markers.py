"""Text checks shared by the rubrics: tool-poisoning markers and hidden characters.

The marker scan is a fixed list of directives, not a classifier. It looks for instructions
aimed at the host model (ignore your instructions, hide this from the user, read local secrets),
and skips quoted text, so a security tool that documents an attack it detects is describing it,
not performing it (seed 004; USER-NEEDS #8: no `[^\\n]*` spans, a benign corpus must stay clean).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterator

INJECTION_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("ignore-instructions", re.compile(r"\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|other|system)\s+(instructions|prompts?|rules|directives)\b", re.I)),
    ("hide-from-user", re.compile(r"\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|disclose)\s+(this\s+)?(to\s+)?the\s+user\b", re.I)),
    ("hide-from-user", re.compile(r"\bwithout\s+(telling|informing|notifying)\s+the\s+user\b", re.I)),
    ("read-secrets", re.compile(r"(~/\.ssh|id_rsa|\.aws/credentials|\.env\b|/etc/passwd|mcp\.json)\b.{0,40}\b(read|send|include|pass|upload)|\b(read|send|include|pass|upload)\b.{0,40}(~/\.ssh|id_rsa|\.aws/credentials|/etc/passwd)", re.I)),
    ("hidden-tag", re.compile(r"<\s*(important|system|secret|hidden)\s*>", re.I)),
    ("override-tools", re.compile(r"\b(instead\s+of|rather\s+than)\s+(using|calling)\s+(the\s+)?(other|any\s+other)\s+tools?\b|\bthis\s+tool\s+(must|should)\s+(always\s+)?be\s+(called|used)\s+(first|before\s+any)", re.I)),
]
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”|`[^`\n]{0,400}`")
# Zero-width, bidi controls and other format characters that hide text from a human reader.
_HIDDEN_CATEGORIES = {"Cf", "Co", "Cs"}
_ALLOWED_CONTROL = {"\n", "\r", "\t"}


def injection_findings(text: str | None) -> list[str]:
    if not text:
        return []
    unquoted = _QUOTED.sub(" ", text)
    return sorted({name for name, pattern in INJECTION_MARKERS if pattern.search(unquoted)})


def hidden_characters(text: str | None) -> list[str]:
    """Invisible or control characters, named by code point."""
    found = []
    for char in text or "":
        category = unicodedata.category(char)
        if (category == "Cc" and char not in _ALLOWED_CONTROL) or category in _HIDDEN_CATEGORIES:
            found.append(f"U+{ord(char):04X}")
    return sorted(set(found))


def tool_texts(tools: list[dict[str, Any]] | None, instructions: str | None = None) -> Iterator[tuple[str, str]]:
    """Every agent-facing string: (where, text) for instructions, tool names, titles, descriptions, parameters."""
    if instructions:
        yield "server instructions", instructions
    for tool in tools or []:
        name = str(tool.get("name", "?"))
        yield f"{name}.name", name
        for key in ("title", "description"):
            if isinstance(tool.get(key), str):
                yield f"{name}.{key}", tool[key]
        annotations = tool.get("annotations") or {}
        if isinstance(annotations.get("title"), str):
            yield f"{name}.annotations.title", annotations["title"]
        properties = (tool.get("inputSchema") or {}).get("properties") or {}
        if isinstance(properties, dict):
            for param, schema in properties.items():
                if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                    yield f"{name}.{param}.description", schema["description"]
