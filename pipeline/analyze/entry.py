"""Entry points for the sandbox: how to install and start a server, from its manifests and README.

Interface placeholder: finds nothing until it lands (issue 15).
"""

from __future__ import annotations

from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.models import EntryPoint


def entry_points(tree: SourceTree, files: list[SourceFile]) -> list[EntryPoint]:
    return []
