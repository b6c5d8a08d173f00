"""Deterministic tool extraction from selected source files.

Interface placeholder: recognises nothing (None: not measured) until the extractors land (issue 15).
"""

from __future__ import annotations

from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool


def extract_tools(files: list[SourceFile]) -> list[ExtractedTool] | None:
    return None
