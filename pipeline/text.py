"""Checks on the untrusted text servers hand to agents: tool-poisoning markers and hidden characters.

Core: the prober records what they find, the analyser scans the tools it extracts from source, and the rubrics
score both, from the same definitions.

The marker scan is a fixed list of directives, not a classifier, built from published tool-poisoning attacks
(Invariant Labs' tool poisoning, shadowing and WhatsApp rug-pull experiments, 2025; the n8n webhook variant) and the
MCP security best practices: instructions aimed at the host model (ignore your instructions, hide this from the user,
read local secrets and pass them as a parameter, call this tool first, redirect another tool's recipients), hidden
HTML comments and <IMPORTANT>-style tags. Quoted phrases are skipped, so a security tool that documents an attack it
detects is describing it, not performing it (seed 004; USER-NEEDS #8: no `[^\\n]*` spans, a benign corpus must stay
clean). Markers come in two strengths: a STRONG one on its own is a critical finding (what no benign description
says: hide this from the user, ignore your instructions, change another tool's recipient, a directive in an HTML
comment); a weak one (an <IMPORTANT> tag, "call this tool first", a secret file named beside "read", a run of
spaces that pushes text off-screen) is a review
finding, and two different ones in one text corroborate each other into a critical finding.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

_SECRET_PATHS = (r"~/\.ssh|\.ssh/|id_rsa|id_ed25519|id_ecdsa|\.aws/credentials|/etc/passwd|/etc/shadow|mcp\.json"
                 r"|claude_desktop_config\.json|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.kube/config|\.docker/config\.json")
_SEND_VERBS = r"read|send|include|pass|upload|attach|provide|forward|cat|copy|append|concatenate|post"
INJECTION_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("ignore-instructions", re.compile(r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier"
                                       r"|other|system|original)\s+(instructions|prompts?|rules|directives|guidelines)\b", re.I)),
    ("hide-from-user", re.compile(r"\b(do\s+not|don't|dont|never|must\s+not)\s+(tell|inform|mention|reveal|show|disclose|notify|alert|warn)"
                                  r"\s+((this|it|that|anything)\s+)?((\w+\s+){0,3}to\s+)?the\s+user\b", re.I)),
    ("hide-from-user", re.compile(r"\bwithout\s+(telling|informing|notifying|alerting)\s+the\s+user\b"
                                  r"|\b(hide|conceal|keep)\s+(this|it|that)\s+(\w+\s+){0,2}from\s+the\s+user\b", re.I)),
    ("read-secrets", re.compile(rf"({_SECRET_PATHS}|\.env(?![.\w-]))\b.{{0,40}}\b({_SEND_VERBS})\b|"
                                rf"\b({_SEND_VERBS})\b.{{0,40}}({_SECRET_PATHS})", re.I)),
    ("hidden-tag", re.compile(r"<\s*/?\s*(important|system|secret|hidden|instructions?|admin|override)\s*>"
                              r"|\[\s*(important|system)\s*[:\]]|\b(system|admin)\s+(note|notice|message|instruction|override)\s*:", re.I)),
    ("hidden-comment", re.compile(r"<!--(?:(?!-->|<!--)[\s\S]){0,300}?\b(important|always|must|never|ignore|instructions?|system|before|call"
                                  r"|read|send|pass|include|do\s+not|don't|assistant|model)\b", re.I)),
    ("override-tools", re.compile(r"\b(instead\s+of|rather\s+than)\s+(using|calling)\s+(the\s+)?(other|any\s+other)\s+tools?\b|"
                                  r"\bthis\s+tool\s+(must|should)\s+(always\s+)?be\s+(called|used)\s+(first|before\s+any)", re.I)),
    ("call-first", re.compile(r"\b(always|must|should)\s+(first\s+)?(call|use|invoke|run)\s+(this\s+tool|this|it)\s+(first|before)\b"
                              r"|\bbefore\s+(using|calling|invoking)\s+(any|all|every)\s+(other\s+)?tools?\b"
                              r"|\b(for|on|with)\s+(any|every|each)\s+(user\s+)?(request|query|message|prompt)\b.{0,40}\b(call|use|invoke)\b", re.I)),
    ("shadow-tool", re.compile(r"\b(change|replace|rewrite|redirect|set|override|swap)\s+the\s+(recipient|destination|receiver|to\s+address"
                               r"|email\s+address|phone\s+number)s?\s+to\b"
                               r"|\b(send|forward|bcc|cc|copy|post|redirect|route|relay)\s+(all|every|each|any|an?\s+(identical\s+|exact\s+)?copy\s+of)"
                               r"\s+[^.]{0,60}?\bto\s+([\w.+-]{1,64}@[\w-]{1,64}\.|\+?\d[\d -]{6,20}\d|https?://)", re.I)),
    ("cross-tool", re.compile(r"\bside\s+effect\s+on\s+the\s+(also\s+)?(present|other|existing)\b"
                              r"|\bwhen\s+(\(\w{1,64}\)\s+)?(this\s+tool|[\w.-]{1,64})\s+(tool\s+)?is\s+(available|invoked|called)\b.{0,80}"
                              r"\b(must|make\s+sure|always)\b", re.I)),
    ("pass-content", re.compile(r"\b(pass|include|put|send|insert|provide|add)\s+(its|their|the\s+file'?s?|the\s+(full|complete|entire))\s+"
                                r"(content|contents|text)\s+(as|in|into)\b", re.I)),
    ("exfiltrate-context", re.compile(r"\b(include|pass|send|put|add|append|provide|attach|forward|copy)\b.{0,60}\b(system\s+prompt"
                                      r"|conversation\s+(history|context)|chat\s+history|(full|complete|entire)\s+(conversation|chat)"
                                      r"|all\s+(previous\s+|prior\s+)?(user\s+)?messages|list\s+of\s+(last|previous|recent)\s+messages)\b", re.I)),
    ("coercion", re.compile(r"\b(otherwise|or\s+else)\s+(the\s+|this\s+)?(tool|system|application|request|server)\s+(will\s+not|won't|will\s+fail"
                            r"|will\s+crash|does\s+not|doesn't)\b|\bvery\s+very\b|\ball\s+data\s+will\s+be\s+lost\b", re.I)),
    ("role-override", re.compile(r"\bfrom\s+now\s+on,?\s+you\s+(are|must|will|should)\b|\byou\s+are\s+now\s+(in|a|an|running)\b", re.I)),
    # Invariant's WhatsApp payload: data pushed off-screen by a long run of spaces inside one line.
    ("padding", re.compile(r"(?<! ) {60,2000}\S")),
]
SUSPICIOUS_PARAMETER = re.compile(r"^(side_?note|secret_?note|hidden_?note|exfil\w{0,40}|content_from_\w{1,60}|ssh_?key_?content\w{0,40})$", re.I)
# Each strong marker alone is critical; each weak one is "review" until a second, different marker corroborates it.
STRONG_MARKERS = frozenset({"ignore-instructions", "hide-from-user", "hidden-comment", "shadow-tool"})
# One cheap pass over all of a server's text decides whether any string needs the full marker list: plain substring
# tests, since almost no server's text contains any of these. Every marker needs at least one of them to match.
_TRIGGERS = ("ignore", "disregard", "forget", "override", "user", "ssh", "id_rsa", "id_ed25519", "id_ecdsa", "aws", "passwd", "shadow",
             ".env", "mcp.json", "claude_desktop", ".netrc", ".npmrc", ".pypirc", "git-credentials", ".kube", ".docker", "<", "[",
             "instead", "rather", "must", "should", "always", "before", "request", "query", "message", "prompt", "recipient",
             "destination", "receiver", "address", "phone", "all", "every", "each", "any", "copy", "effect", "when", "content",
             "text", "history", "conversation", "chat", "otherwise", "else", "very", "lost", "now", " " * 60)
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


def injection_findings(text: str | None, *, unquote: bool = True) -> list[str]:
    """The markers a text holds, by name. Quoted phrases are blanked; a quoted single word (`list_tables`, "~/.ssh/id_rsa")
    is an identifier or a path, not a quotation, and stays. Source lines are read as they are (`unquote=False`): there
    every tool description is a quoted literal."""
    if not text or not may_hold_markers(text):
        return []
    unquoted = _QUOTED.sub(_unquote, text) if unquote else text
    return sorted({name for name, pattern in INJECTION_MARKERS if pattern.search(unquoted)})


def _unquote(match: re.Match[str]) -> str:
    inner = match.group(0)[1:-1]
    return f" {inner} " if inner.strip() and not any(c.isspace() for c in inner.strip()) else " "


def suspicious_parameters(tool: dict[str, Any]) -> list[str]:
    """Parameters named as a side channel for smuggled data (Invariant Labs' `sidenote`): a weak marker of the tool."""
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return sorted(str(name) for name in properties if SUSPICIOUS_PARAMETER.match(str(name)))


def tool_markers(tool: dict[str, Any]) -> list[str]:
    """Every marker of one tool over all its texts together, a suspicious parameter name included."""
    found = {marker for _, _, text in tool_texts([tool]) for marker in injection_findings(text)}
    return sorted(found | ({"suspicious-parameter"} if suspicious_parameters(tool) else set()))


def injection_severity(markers: list[str] | set[str]) -> Literal["critical", "review"] | None:
    """Critical for a strong marker or two different ones; review for one weak marker; None for none."""
    if not markers:
        return None
    return "critical" if STRONG_MARKERS & set(markers) or len(set(markers)) >= 2 else "review"


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
