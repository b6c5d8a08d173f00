"""Checks on the untrusted text servers hand to agents: tool-poisoning markers and hidden characters.

Core: the prober records what they find and the rubrics score it, from the same definitions.

The marker scan is a fixed list of directives, not a classifier. It looks for instructions
aimed at the host model (ignore your instructions, hide this from the user, read local secrets),
and skips quoted text, so a security tool that documents an attack it detects is describing it,
not performing it (seed 004; USER-NEEDS #8: no `[^\\n]*` spans, a benign corpus must stay clean).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

INJECTION_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("ignore-instructions", re.compile(r"\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|other|system)\s+"
                                       r"(instructions|prompts?|rules|directives)\b", re.I)),
    ("hide-from-user", re.compile(r"\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|disclose)\s+(this\s+)?(to\s+)?the\s+user\b", re.I)),
    ("hide-from-user", re.compile(r"\bwithout\s+(telling|informing|notifying)\s+the\s+user\b", re.I)),
    ("read-secrets", re.compile(r"(~/\.ssh|id_rsa|\.aws/credentials|\.env\b|/etc/passwd|mcp\.json)\b.{0,40}\b(read|send|include|pass|upload)|"
                                r"\b(read|send|include|pass|upload)\b.{0,40}(~/\.ssh|id_rsa|\.aws/credentials|/etc/passwd)", re.I)),
    ("hidden-tag", re.compile(r"<\s*(important|system|secret|hidden)\s*>", re.I)),
    ("override-tools", re.compile(r"\b(instead\s+of|rather\s+than)\s+(using|calling)\s+(the\s+)?(other|any\s+other)\s+tools?\b|"
                                  r"\bthis\s+tool\s+(must|should)\s+(always\s+)?be\s+(called|used)\s+(first|before\s+any)", re.I)),
]
# One cheap pass over all of a server's text decides whether any string needs the full marker
# list: plain substring tests, since almost no server's text contains any of these words.
_TRIGGERS = ("ignore", "disregard", "forget", "tell", "inform", "mention", "reveal", "show", "disclose", "without", "ssh", "id_rsa",
             "aws", "passwd", ".env", "mcp.json", "<", "instead", "rather", "must", "should")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”|`[^`\n]{0,400}`")
# Zero-width, bidi controls and other format characters that hide text from a human reader.
_HIDDEN_CATEGORIES = {"Cf", "Co", "Cs"}
_ALLOWED_CONTROL = {"\n", "\r", "\t"}
# Stored text has its control characters replaced by U+FFFD (pipeline.clean), so the replacement still counts.
_REPLACED = "\ufffd"


def may_hold_markers(text: str) -> bool:
    """False when no marker can match, decided by cheap substring tests."""
    lowered = text.lower()
    return any(trigger in lowered for trigger in _TRIGGERS)


def may_hide_characters(text: str) -> bool:
    """False when the text is ASCII without control characters, so nothing in it can be hidden."""
    return not text.isascii() or _ASCII_CONTROL.search(text) is not None


def injection_findings(text: str | None) -> list[str]:
    if not text or not may_hold_markers(text):
        return []
    unquoted = _QUOTED.sub(" ", text)
    return sorted({name for name, pattern in INJECTION_MARKERS if pattern.search(unquoted)})


def hidden_characters(text: str | None) -> list[str]:
    """Invisible or control characters (or the U+FFFD that replaced one when the text was stored), named by code point."""
    if not text or (text.isascii() and text.isprintable()):
        return []  # printable ASCII cannot hide anything; newlines and tabs fall through to the full check
    found = []
    for char in text or "":
        category = unicodedata.category(char)
        if (category == "Cc" and char not in _ALLOWED_CONTROL) or category in _HIDDEN_CATEGORIES or char == _REPLACED:
            found.append(f"U+{ord(char):04X}")
    return sorted(set(found))


def tool_texts(tools: list[dict[str, Any]] | None, instructions: str | None = None) -> list[tuple[str, str, str]]:
    """Every agent-facing string as (owner, field, text): instructions, tool names, titles, descriptions, parameters.

    Places are kept in parts and only joined (`where`) for the few strings that have findings.
    """
    texts: list[tuple[str, str, str]] = []
    if instructions:
        texts.append(("server", "instructions", instructions))
    for tool in tools or []:
        name = str(tool.get("name", "?"))
        texts.append((name, "name", name))
        for key in ("title", "description"):
            value = tool.get(key)
            if isinstance(value, str):
                texts.append((name, key, value))
        annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
        if isinstance(annotations.get("title"), str):
            texts.append((name, "annotations.title", annotations["title"]))
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        properties = schema.get("properties") or {}
        if isinstance(properties, dict):
            for param, schema in properties.items():
                if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                    texts.append((name, f"{param}.description", schema["description"]))
    return texts


def where(owner: str, field: str) -> str:
    return f"{owner} {field}" if owner == "server" else f"{owner}.{field}"


def squash(text: str | None) -> str:
    """Lower-cased with runs of whitespace as one space: how descriptions are compared."""
    return " ".join((text or "").lower().split())
