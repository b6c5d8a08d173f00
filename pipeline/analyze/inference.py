"""Source inference (seed 000), deterministic: error handling, input validation and auth patterns read from
source, used by the scorer only as the fallback when no probe data exists.

Interface placeholder: infers nothing until it lands (issue 15).
"""

from __future__ import annotations

from typing import Any

from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool


def infer_protocol(files: list[SourceFile], tools: list[ExtractedTool] | None) -> dict[str, Any] | None:
    return None
