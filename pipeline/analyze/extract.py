"""Deterministic tool extraction from the selected source files, one reader per language.

A file that a reader cannot parse yields nothing, never an error. Tools are kept once by name, in file order (the first
definition wins). None means no tool definition was recognised: not measured, so no schema drift is claimed on a guess.
"""

from __future__ import annotations

from typing import Callable

from pipeline.analyze.extract_go_rust import extract_go, extract_rust
from pipeline.analyze.extract_js import extract_js
from pipeline.analyze.extract_python import extract_python
from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.select import is_side_file
from pipeline.models import ExtractedTool

READERS: dict[str, Callable[[SourceFile], list[ExtractedTool] | None]] = {
    "python": extract_python,
    "typescript": extract_js,
    "javascript": extract_js,
    "go": extract_go,
    "rust": extract_rust,
}


def extract_tools(files: list[SourceFile]) -> list[ExtractedTool] | None:
    """Tools of the server's own files; those in examples/ or docs/ only when its own files define none."""
    main = [f for f in files if not is_side_file(f.path)]
    return _extract(main) or _extract([f for f in files if is_side_file(f.path)])


def _extract(files: list[SourceFile]) -> list[ExtractedTool] | None:
    tools: dict[str, ExtractedTool] = {}
    for source in files:
        reader = READERS.get(source.language)
        if reader is None:
            continue
        try:
            found = reader(source)
        except RecursionError:  # a pathological nesting the bounded parsers did not foresee: the file yields nothing
            found = None
        for tool in found or []:
            if source.first_line > 1:
                tool = tool.model_copy(update={"line": tool.line + source.first_line - 1})
            tools.setdefault(tool.name, tool)
    return list(tools.values()) or None
