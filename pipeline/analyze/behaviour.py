"""The behavioural security scan: exfiltration, dangerous operations, scope creep, hard-coded secrets and
prompt-injection markers in tool text, each with file and line.

Interface placeholder: finds nothing, and scores nothing (the scorer's neutral default stands) until it lands (issue 15).
"""

from __future__ import annotations

from typing import Any

from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.models import EnvVar, ExtractedTool, Finding


def scan_behaviour(files: list[SourceFile], tools: list[ExtractedTool] | None, tree: SourceTree) -> list[Finding]:
    return []


def behavioural_score(files: list[SourceFile], findings: list[Finding]) -> dict[str, Any] | None:
    """0–100 with the findings that cost points; None when there was no source to scan."""
    return None


def required_env_vars(files: list[SourceFile], tree: SourceTree) -> list[EnvVar]:
    """Environment variables the source reads without a default, classified secret or configuration."""
    return []
