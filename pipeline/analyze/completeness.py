"""Seed 000's static schema completeness: base 40 when tool definitions are found, + up to 60 for the share of
schema markers present, capped at 60 without inputSchema/parameters and at 70 without descriptions.

Interface placeholder: not measured until it lands (issue 15).
"""

from __future__ import annotations

from typing import Any

from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool


def schema_completeness(files: list[SourceFile], tools: list[ExtractedTool] | None) -> dict[str, Any] | None:
    return None
