"""`ast.parse` behind one lock: CPython 3.11 keeps the AST converter's recursion depth in shared state, so parses in
two threads at once can fail with "AST constructor recursion depth mismatch" (gh-106905). The analyze stage parses
in a pool of threads; this is the one door every parse goes through."""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(text: str, mode: str = "exec") -> ast.AST:
    with _LOCK:
        return ast.parse(text, mode=mode)
