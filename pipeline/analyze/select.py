"""File selection (seed 000): which of a tree's source files are read for tools, behaviour and inference.

Interface placeholder: selects nothing until the selection lands (issue 15).
"""

from __future__ import annotations

from pipeline.analyze.fetch import SourceFile, SourceTree

MAX_SELECTED = 20  # seed 000: the top 20 files
MAX_FILE_BYTES = 25_000  # seed 000: 25 KB per file


def select_files(tree: SourceTree) -> list[SourceFile]:
    return []
