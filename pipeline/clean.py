"""Text from strangers (servers, source listings, READMEs, headers): cleaned once when stored, isolated when rendered,
stripped of escape sequences when printed.

`clean` is the one cleaning step: the store applies it to every string it writes (deep, through JSON
evidence), so no stage can forget it. It replaces what no output format can carry with U+FFFD: lone
surrogates (not encodable as UTF-8, so SQLite and every file writer refuse them), NUL and the other C0
and C1 controls but tab, newline and carriage return, and the noncharacters (XML 1.0 forbids U+FFFE and
U+FFFF; HTML calls every noncharacter a parse error). It caps each string at MAX_TEXT characters and
says how long it was. Bidi controls and zero-width characters are kept: they are evidence (the hidden
characters check names them), and the pages isolate them (`isolate_bidi`). Methodology deviation 39.

Before any of that, `json_without_lone_surrogates` lets a JSON text that escapes a lone surrogate reach the SDK
session at all (its strict parser refuses the whole message): only those escapes change, to U+FFFD's.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT = 16_384  # characters per stored string; past every length a rule measures (2 KB fields, 10,000-character descriptions)
REPLACEMENT = "\ufffd"

_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(17))
_UNSTORABLE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff{_NONCHARACTERS}]")

# Explicit bidi embeddings, overrides and isolates: the characters that can reorder text after them.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ISOLATE_OPENERS = "\u2066\u2067\u2068"  # LRI, RLI, FSI
_FSI, _PDI = "\u2068", "\u2069"

# What a terminal would act on: CSI sequences and terminated string sequences (OSC, DCS, APC, ...) in 7-bit and 8-bit
# forms, other escapes, then any control left. An unterminated string sequence loses only its introducer, so it
# cannot swallow the lines after it.
_TERMINAL = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
                       r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
                       r"|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")

# JSON escapes read left to right, so an escaped backslash (\\) is one escape and the "ud800" after it plain text: a
# surrogate pair, then a surrogate half left alone (lone), then any other escape. A raw backslash occurs only in a string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_JSON_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(?P<lone>\\u[dD][89a-fA-F][0-9a-fA-F]{2})|\\.", re.DOTALL)


def clean_text(text: str, limit: int = MAX_TEXT) -> str:
    """One string, storable and renderable anywhere: unstorable characters replaced, at most `limit` characters kept."""
    if not (text.isascii() and text.isprintable()):  # printable ASCII, most text, needs no look
        text = _UNSTORABLE.sub(REPLACEMENT, text)
    if len(text) > limit:
        return text[:limit] + f"…[trimmed, {len(text)} chars]"
    return text


def json_without_lone_surrogates(data: bytes) -> bytes:
    """A JSON text with each escaped lone surrogate (a high half not followed by a low one, a low half not after a high
    one) written as U+FFFD's escape, byte for byte the same length; all else, controls included, exactly as sent (the
    hidden characters check measures text as received). `data` itself when it escapes no surrogate."""
    if not _SURROGATE_ESCAPE.search(data):
        return data
    return _JSON_ESCAPE.sub(lambda escape: b"\\ufffd" if escape["lone"] else escape[0], data)


def clean(value: Any, limit: int = MAX_TEXT) -> Any:
    """A JSON value with every string in it cleaned, keys included; numbers, booleans and null as they are."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if isinstance(value, (list, tuple)):
        return [clean(item, limit) for item in value]
    if isinstance(value, dict):
        return {clean_text(str(key), limit): clean(item, limit) for key, item in value.items()}
    return value


def isolate_bidi(text: str) -> str:
    """Text that holds bidi controls, wrapped in an isolate (FSI … PDI) so it cannot reorder the page around it.

    Inside, a PDI with no opener of its own is dropped (it would close our isolate early) and every isolate the
    text leaves open is closed; our PDI then also ends any embedding or override the text started.
    """
    if text.isascii() or not _BIDI.search(text):
        return text
    kept, open_isolates = [], 0
    for char in text:
        if char in _ISOLATE_OPENERS:
            open_isolates += 1
        elif char == _PDI:
            if not open_isolates:
                continue
            open_isolates -= 1
        kept.append(char)
    return _FSI + "".join(kept) + _PDI * open_isolates + _PDI


def terminal_text(text: str) -> str:
    """Text safe to print on a terminal: escape sequences and controls removed (tab and newline kept), lone surrogates replaced,
    and each line that holds bidi controls isolated (a terminal reorders line by line)."""
    if text.isascii() and text.isprintable():
        return text
    text = _SURROGATE.sub(REPLACEMENT, _TERMINAL.sub("", text))
    return "\n".join(isolate_bidi(line) for line in text.split("\n")) if _BIDI.search(text) else text
