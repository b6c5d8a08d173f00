"""A small, bounded reader of JavaScript and TypeScript source: literal values from tokens (`jstokens.py`).

No TypeScript compiler is available in Python, and none is needed to read tool definitions: they are calls whose
arguments are literals (strings, objects, arrays), references to constants, zod chains and functions. The value parser
follows nesting to a fixed depth and skips anything it does not understand.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.analyze.jstokens import Token, tokenize

MAX_DEPTH = 40  # nesting followed by the value parser
OPEN = {"(": ")", "[": "]", "{": "}"}

# Parsed values: plain tuples keep it fast and small.
# ("str", s) ("num", x) ("lit", True/False/None) ("obj", {key: node}, [spread nodes]) ("arr", [nodes])
# ("ref", name) ("member", node, name) ("call", callee, [args]) ("func", body_start, body_end) ("other",)
OTHER = ("other",)


@dataclass
class Source:
    """One file's tokens, with bracket matching, declarations and line numbers."""

    text: str
    tokens: list[Token] = field(default_factory=list)
    match: list[int] = field(default_factory=list)
    declarations: dict[str, list[int]] = field(default_factory=dict)  # name -> token indexes of its initialisers
    _lines: list[int] = field(default_factory=list)

    @classmethod
    def read(cls, text: str) -> Source:
        source = cls(text, tokenize(text))
        source.match = _match_brackets(source.tokens)
        source.declarations = _declarations(source.tokens)
        source._lines = [m.start() for m in re.finditer("\n", text)]
        return source

    def line(self, index: int) -> int:
        pos = self.tokens[index].pos if index < len(self.tokens) else len(self.text)
        return bisect.bisect_right(self._lines, pos - 1) + 1 if self._lines else 1

    def at(self, index: int, value: str) -> bool:
        return index < len(self.tokens) and self.tokens[index].value == value and self.tokens[index].kind == "punc"

    def arguments(self, open_index: int, depth: int = 0) -> list[tuple]:
        """The parsed arguments of the call whose "(" is at open_index."""
        close = self.match[open_index] if open_index < len(self.match) else -1
        if close < 0:
            close = len(self.tokens)
        args: list[tuple] = []
        index = open_index + 1
        while index < close and len(args) < 16:
            node, index = self.value(index, depth + 1, close)
            args.append(node)
            index = self._to_separator(index, close)
            if index < close and self.at(index, ","):
                index += 1
        return args

    def _to_separator(self, index: int, limit: int) -> int:
        while index < limit and not (self.tokens[index].kind == "punc" and self.tokens[index].value in (",", ")", "]", "}", ";")):
            index = self.match[index] + 1 if self.match[index] > index else index + 1
        return index

    def resolve(self, name: str, before: int) -> tuple | None:
        """The value a `const`/`let`/`var` declaration gives `name`: the nearest one before `before`, else the first."""
        indexes = self.declarations.get(name)
        if not indexes:
            return None
        earlier = [i for i in indexes if i < before]
        start = earlier[-1] if earlier else indexes[0]
        return self.value(start, 1, len(self.tokens))[0]

    def value(self, index: int, depth: int, limit: int) -> tuple[tuple, int]:
        """Parse one expression from `index`; returns (node, index after it)."""
        if depth > MAX_DEPTH or index >= limit:
            return OTHER, index
        node, index = self._unary(index, depth, limit)
        while index < limit:
            token = self.tokens[index]
            if token.kind == "punc" and token.value == "+":
                right, index = self._unary(index + 1, depth + 1, limit)
                node = ("str", node[1] + right[1]) if node[0] == "str" and right[0] == "str" else OTHER
            elif token.kind == "id" and token.value in ("as", "satisfies"):
                index = self._skip_type(index + 1, limit)
            elif token.kind == "punc" and token.value in ("||", "??", "&&", "?", "-", "*", "/", "%", "===", "!==", "==", "!=", "<", ">",
                                                           "<=", ">=", "|", "&", ":"):
                return OTHER, self._to_separator(index, limit)
            else:
                break
        return node, index

    def _skip_type(self, index: int, limit: int) -> int:
        while index < limit and not (self.tokens[index].kind == "punc" and self.tokens[index].value in (",", ")", "]", "}", ";", "=")):
            index = self.match[index] + 1 if self.match[index] > index else index + 1
        return index

    def _unary(self, index: int, depth: int, limit: int) -> tuple[tuple, int]:
        tokens = self.tokens
        if index >= limit:
            return OTHER, index
        token = tokens[index]
        if token.kind == "id" and token.value in ("await", "new", "void", "typeof") and index + 1 < limit:
            return self._postfix(*self._primary(index + 1, depth, limit), depth, limit)
        if token.kind == "punc" and token.value in ("!", "-", "+", "~"):
            node, index = self._unary(index + 1, depth + 1, limit)
            if token.value == "-" and node[0] == "num":
                return ("num", -node[1]), index
            return OTHER, index
        return self._postfix(*self._primary(index, depth, limit), depth, limit)

    def _primary(self, index: int, depth: int, limit: int) -> tuple[tuple, int]:
        tokens = self.tokens
        token = tokens[index]
        if token.kind in ("str", "tpl"):
            return ("str", token.value), index + 1
        if token.kind == "tplx":
            return ("str", Computed(token.value)), index + 1
        if token.kind == "num":
            try:
                text = token.value.lower()
                number = int(text, 0) if text.startswith(("0x", "0o", "0b")) or not any(c in text for c in ".e") else float(text)
                return (("num", number) if math.isfinite(number) else OTHER), index + 1
            except (ValueError, OverflowError):
                return OTHER, index + 1
        if token.kind == "id":
            if token.value in ("true", "false", "null", "undefined"):
                return ("lit", {"true": True, "false": False}.get(token.value)), index + 1
            if token.value == "async" and index + 1 < limit and (tokens[index + 1].value in ("(", "function") or (
                    index + 2 < limit and tokens[index + 1].kind == "id" and tokens[index + 2].value == "=>")):
                return self._primary(index + 1, depth, limit)
            if token.value == "function":
                after = index + 1 + (index + 1 < limit and tokens[index + 1].kind == "id")
                return self._function_body(self._after(after), limit)
            if index + 1 < limit and self.at(index + 1, "=>"):
                return self._function_body(index + 2, limit)
            return ("ref", token.value), index + 1
        if token.kind != "punc":
            return OTHER, index + 1
        close = self.match[index]
        if token.value == "(":
            if close > index and self.at(close + 1, "=>"):
                return self._function_body(close + 2, limit)
            if close > index and self.at(close + 1, ":"):  # typed arrow parameters' return type
                after = self._skip_type(close + 2, limit)
                if self.at(after, "=>"):
                    return self._function_body(after + 1, limit)
            node, _ = self.value(index + 1, depth + 1, close if close > index else limit)
            return node, (close + 1 if close > index else limit)
        if token.value == "{":
            return self._object(index, close if close > index else limit, depth), (close + 1 if close > index else limit)
        if token.value == "[":
            return self._array(index, close if close > index else limit, depth), (close + 1 if close > index else limit)
        if token.value == "<":  # a TypeScript generic before an arrow: <T>(x: T) => …
            return OTHER, self._to_separator(index + 1, limit)
        return OTHER, index + 1

    def _after(self, index: int) -> int:
        """From a function's "(" past its parameters and return type to the body's "{"."""
        if self.at(index, "("):
            index = self.match[index] + 1 if self.match[index] > index else index + 1
        while index < len(self.tokens) and not self.at(index, "{"):
            index += 1
        return index

    def _function_body(self, index: int, limit: int) -> tuple[tuple, int]:
        if self.at(index, "{") and self.match[index] > index:
            return ("func", index, self.match[index]), self.match[index] + 1
        end = self._to_separator(index, limit)
        return ("func", index, end), end

    def _postfix(self, node: tuple, index: int, depth: int, limit: int) -> tuple[tuple, int]:
        tokens = self.tokens
        steps = 0
        while index < limit and steps < 64:
            steps += 1
            token = tokens[index]
            if token.kind == "punc" and token.value in (".", "?.") and index + 1 < limit and tokens[index + 1].kind == "id":
                node, index = ("member", node, tokens[index + 1].value), index + 2
            elif token.kind == "punc" and token.value == "(":
                close = self.match[index]
                node = ("call", node, self.arguments(index, depth) if depth < MAX_DEPTH else [])
                index = close + 1 if close > index else limit
            elif token.kind == "punc" and token.value in ("[", "!"):
                if token.value == "!":  # TypeScript's non-null assertion
                    index += 1
                    continue
                close = self.match[index]
                node, index = OTHER, (close + 1 if close > index else limit)
            else:
                break
        return node, index

    def _object(self, start: int, close: int, depth: int) -> tuple:
        entries: dict[str, tuple] = {}
        spreads: list[tuple] = []
        index = start + 1
        tokens = self.tokens
        while index < close and len(entries) < 500:
            token = tokens[index]
            if self.at(index, "..."):
                node, index = self.value(index + 1, depth + 1, close)
                spreads.append(node)
            elif token.kind in ("id", "str", "num") or self.at(index, "["):
                key = token.value
                if self.at(index, "["):  # computed key
                    key, index = "", (self.match[index] if self.match[index] > index else close)
                if token.kind == "id" and token.value in ("async", "get", "set") and index + 1 < close and tokens[index + 1].kind == "id":
                    index += 1
                    key = tokens[index].value
                index += 1
                if self.at(index, "?"):
                    index += 1
                if self.at(index, ":"):
                    node, index = self.value(index + 1, depth + 1, close)
                    entries.setdefault(key, node)
                elif self.at(index, "("):  # a method: key(args) { body }
                    node, index = self._function_body(self._after(index), close)
                    entries.setdefault(key, node)
                elif token.kind == "id":  # shorthand { name }
                    entries.setdefault(key, ("ref", key))
            index = self._to_separator(index, close)
            if index < close and self.at(index, ","):
                index += 1
            elif index < close:
                index += 1
        return ("obj", entries, spreads)

    def _array(self, start: int, close: int, depth: int) -> tuple:
        items: list[tuple] = []
        index = start + 1
        while index < close and len(items) < 1000:
            if self.at(index, "..."):
                node, index = self.value(index + 1, depth + 1, close)
                items.append(("spread", node))
            else:
                node, index = self.value(index, depth + 1, close)
                items.append(node)
            index = self._to_separator(index, close)
            if index < close and self.at(index, ","):
                index += 1
            elif index < close:
                index += 1
        return ("arr", items)


def _match_brackets(tokens: list[Token]) -> list[int]:
    """For each opening bracket the index of its closing one (-1 when unbalanced); others point to themselves."""
    match = list(range(len(tokens)))
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.kind != "punc":
            continue
        if token.value in OPEN:
            stack.append(index)
            match[index] = -1
        elif token.value in (")", "]", "}"):
            while stack and OPEN[tokens[stack[-1]].value] != token.value:
                stack.pop()  # an unbalanced opener stays -1
            if stack:
                match[stack.pop()] = index
    return match


def _declarations(tokens: list[Token]) -> dict[str, list[int]]:
    """`const|let|var NAME [: Type] = value` and `exports.NAME = value`: NAME -> token index of each value."""
    found: dict[str, list[int]] = {}
    count = len(tokens)
    for index, token in enumerate(tokens):
        if token.kind != "id" or index + 2 >= count:
            continue
        name_index = None
        if token.value in ("const", "let", "var") and tokens[index + 1].kind == "id":
            name_index = index + 1
        elif token.value == "exports" and tokens[index + 1].value == "." and tokens[index + 2].kind == "id":
            name_index = index + 2
        if name_index is None:
            continue
        cursor = name_index + 1
        if cursor < count and tokens[cursor].value == ":":  # a type annotation: skip to "=" on the same nesting
            depth = 0
            while cursor < count and cursor - name_index < 200:
                value = tokens[cursor].value if tokens[cursor].kind == "punc" else ""
                if value in ("(", "[", "{", "<"):
                    depth += 1
                elif value in (")", "]", "}", ">"):
                    depth -= 1
                elif value in ("=", ";") and depth <= 0:
                    break
                cursor += 1
        if cursor < count and tokens[cursor].kind == "punc" and tokens[cursor].value == "=":
            found.setdefault(tokens[name_index].value, []).append(cursor + 1)
    return found


def deref(source: Source, node: tuple, before: int, depth: int = 0) -> tuple:
    """Follow references to constants and members of constant objects (`TOOL.name`, `CONFIG.tools.search`)."""
    while depth < MAX_DEPTH:
        depth += 1
        if node[0] == "ref":
            value = source.resolve(node[1], before)
            if value is None:
                return node
            node = value
        elif node[0] == "member":
            base = deref(source, node[1], before, depth)
            if base[0] != "obj" or node[2] not in base[1]:
                return node
            node = base[1][node[2]]
        else:
            return node
    return node


def to_json(source: Source, node: tuple, before: int, depth: int = 0) -> Any:
    """A parsed literal as JSON data, following references to constants; None for what is not a literal."""
    if depth > MAX_DEPTH:
        return None
    kind = node[0]
    if kind in ("str", "num", "lit"):
        return node[1]
    if kind == "obj":
        result: dict[str, Any] = {}
        for spread in node[2]:
            value = to_json(source, spread, before, depth + 1)
            if isinstance(value, dict):
                result.update(value)
        for key, value in node[1].items():
            result[key] = to_json(source, value, before, depth + 1)
        return result
    if kind == "arr":
        items: list[Any] = []
        for item in node[1]:
            if item[0] == "spread":
                value = to_json(source, item[1], before, depth + 1)
                items.extend(value if isinstance(value, list) else [])
            else:
                items.append(to_json(source, item, before, depth + 1))
        return items
    if kind in ("ref", "member"):
        resolved = deref(source, node, before, depth)
        return to_json(source, resolved, before, depth + 1) if resolved[0] not in ("ref", "member") else None
    return None


class Computed(str):
    """The literal parts of a template with `${…}`: good enough for a description, never a name (`get_${x}` is no "get_")."""


def string_value(source: Source, node: tuple, before: int) -> str | None:
    value = to_json(source, node, before)
    return value if isinstance(value, str) else None


def last_name(node: tuple) -> str | None:
    """The name a reference or member access ends with (`types_js_1.ListToolsRequestSchema` -> ListToolsRequestSchema)."""
    if node[0] == "ref":
        return node[1]
    if node[0] == "member":
        return node[2]
    return None
