"""Tokens of JavaScript and TypeScript source, for the bounded reader in `jsparse.py`.

Strings, template literals, comments and regular-expression literals are recognised, so text inside them is never
mistaken for code: a tool call written in a comment, a string or a template is no tool call.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_TOKENS = 150_000  # tokens read from one text (a 256 KB file, or a bundle's window, has fewer)
MAX_TEMPLATE_NESTING = 8

_TOKEN = re.compile(
    r"\s*(?:(?P<id>[A-Za-z_$][\w$]*)"
    r"|(?P<str>\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\"|'[^'\\\n]*(?:\\.[^'\\\n]*)*')"
    r"|(?P<num>\d[\w.]*)"
    r"|(?P<special>[/`])"
    r"|(?P<punc>=>|\.\.\.|\?\.|\?\?|===|!==|==|!=|&&|\|\||<=|>=|[^\s]))",
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\n|.)", re.S)
REGEX_AFTER = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield", "await"}


class Token(NamedTuple):
    kind: str  # "str" | "tpl" | "tplx" (a template with ${…}) | "id" | "num" | "punc"
    value: str
    pos: int


def unescape(body: str) -> str:
    def replace(match: re.Match) -> str:
        code = match.group(1)
        if code.startswith("u{"):
            return chr(min(int(code[2:-1], 16), 0x10FFFF))
        if code.startswith(("u", "x")) and len(code) > 1:
            return chr(int(code[1:], 16))
        return "" if code == "\n" else _ESCAPES.get(code, code)

    return _ESCAPE.sub(replace, body)


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    _scan(text, 0, tokens, 0, stop_at_brace=False)
    return tokens


def _scan(text: str, pos: int, tokens: list[Token], nesting: int, stop_at_brace: bool) -> int:
    """Tokens from `pos` on; inside a template's `${…}` (stop_at_brace) until its closing brace. Returns where it stopped."""
    depth = 0
    end = len(text)
    append = tokens.append
    match_token = _TOKEN.match
    while pos < end and len(tokens) < MAX_TOKENS:
        match = match_token(text, pos)
        if match is None or match.lastgroup is None:  # trailing whitespace
            return end
        kind = match.lastgroup
        start = match.start(kind)
        value = match.group(kind)
        if kind == "special":
            if value == "`":
                pos = _template(text, start, tokens, nesting)
                continue
            following = text[start + 1:start + 2]
            if following == "/":
                newline = text.find("\n", start)
                pos = end if newline < 0 else newline
                continue
            if following == "*":
                close = text.find("*/", start + 2)
                pos = end if close < 0 else close + 2
                continue
            if _regex_allowed(tokens):
                pos = _skip_regex(text, start)
                continue
            kind = "punc"
        if kind == "str":
            append(Token("str", unescape(value[1:-1]) if "\\" in value else value[1:-1], start))
        else:
            if stop_at_brace and kind == "punc":
                if value == "{":
                    depth += 1
                elif value == "}":
                    if depth == 0:
                        return match.end()
                    depth -= 1
            append(Token(kind, value, start))
        pos = match.end()
    return pos


def _template(text: str, start: int, tokens: list[Token], nesting: int) -> int:
    """A template literal becomes one "tpl" token of its literal parts; the expressions inside are read (so their strings and
    braces cannot confuse what follows) but not kept."""
    parts: list[str] = []
    pos = start + 1
    end = len(text)
    kind = "tpl"
    while pos < end:
        char = text[pos]
        if char == "\\":
            parts.append(text[pos:pos + 2])
            pos += 2
        elif char == "`":
            tokens.append(Token(kind, unescape("".join(parts)), start))
            return pos + 1
        elif char == "$" and text[pos + 1:pos + 2] == "{":
            if nesting >= MAX_TEMPLATE_NESTING:
                return end
            inner: list[Token] = []
            pos = _scan(text, pos + 2, inner, nesting + 1, stop_at_brace=True)
            kind = "tplx"  # computed: its literal parts describe it, but are not its value (jsparse.Computed)
        else:
            parts.append(char)
            pos += 1
    tokens.append(Token(kind, unescape("".join(parts)), start))
    return end


def _regex_allowed(tokens: list[Token]) -> bool:
    if not tokens:
        return True
    last = tokens[-1]
    if last.kind in ("str", "tpl", "tplx", "num"):
        return False
    if last.kind == "id":
        return last.value in REGEX_AFTER
    return last.value not in (")", "]", "}")


def _skip_regex(text: str, pos: int) -> int:
    in_class = False
    index = pos + 1
    end = len(text)
    while index < end:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "\n":
            return index
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "/" and not in_class:
            index += 1
            while index < end and (text[index].isalnum()):
                index += 1
            return index
        index += 1
    return end
