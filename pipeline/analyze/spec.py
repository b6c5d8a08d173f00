"""Spec version detection (seed 000): the MCP revision a server implements, from its SDK dependency and source markers.

Seed 000's table for the SDK's version: < 1.1.0 → 2024-11-05; 1.1.x–1.5.x → 2025-06-18; ≥ 1.6.0 → 2025-11-25. Ours,
through 2026-07-28: the Python SDK 2.x and the TypeScript v2 packages (`@modelcontextprotocol/server`, `/client`) speak
2026-07-28; FastMCP (PyPI) through the `mcp` each release requires. The other SDKs (Go, mcp-go, Rust, Java, Kotlin,
C#, npm fastmcp) are recognised but their versions are not mapped (deviations 11 and 49): from them the spec stays unknown.
Source markers (Streamable HTTP, elicitation, structured output, tasks, `server/discover`, protocol version literals)
can raise a detected version, never make one up.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.analyze.sdk import SdkDependency, sdk_dependencies

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
SEED_TABLE_SDKS = ("python", "typescript")
# marker -> (the first revision that has the feature, pattern)
MARKERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "streamable_http": ("2025-03-26", (r"StreamableHTTPServerTransport", r"streamable_http_app", r"[\"']streamable-http[\"']",
                                       r"NewStreamableHTTPServer", r"StreamableHTTPHandler", r"StreamableHttpService",
                                       r"transport[ \t]{0,3}=[ \t]{0,3}[\"']http[\"']")),
    "elicitation": ("2025-06-18", (r"elicitInput", r"\.elicit\(", r"elicitation/create", r"ElicitRequest", r"ElicitResult",
                                   r"CreateElicitation")),
    "structured_output": ("2025-06-18", (r"outputSchema\b", r"structuredContent\b", r"structured_output\b", r"output_schema\b")),
    "tasks": ("2025-11-25", (r"registerToolTask", r"experimental\.tasks", r"taskSupport\b", r"tasks/(?:get|result|list|cancel)[\"']",
                             r"TaskStore\b")),
    "server_discover": ("2026-07-28", (r"server/discover[\"']",)),
}
# compiled once; each pattern starts with a literal, which the engine searches for quickly
_COMPILED = {name: (revision, tuple(re.compile(p) for p in patterns)) for name, (revision, patterns) in MARKERS.items()}
PROTOCOL_LITERAL = re.compile(r"20(?:24-11-05|25-03-26|25-06-18|25-11-25|26-07-28)(?=[\"'`])")


def spec_version(tree: SourceTree, files: list[SourceFile]) -> dict[str, Any]:
    """{"value": revision or None, "sdk", "sdk_version", "sdks": {package: version}, "markers": {name: revision},
    "from": "sdk" | "sdk+markers" | None}."""
    dependencies = sdk_dependencies(tree)
    markers = source_markers(files)
    mapped = [(revision, dep) for dep in dependencies if (revision := sdk_revision(dep)) is not None]
    sdks = {dep.package: dep.resolved or dep.spec for dep in dependencies}
    if not mapped:
        first = dependencies[0] if dependencies else None
        return {"value": None, "sdk": first.package if first else None, "sdk_version": (first.resolved or first.spec) if first else None,
                "sdks": sdks, "markers": markers, "from": None}
    revision, dep = max(mapped, key=lambda pair: REVISIONS.index(pair[0]))
    raised = max([revision, *markers.values()], key=REVISIONS.index)
    return {"value": raised, "sdk": dep.package, "sdk_version": dep.resolved or lowest_version(dep.spec), "sdks": sdks,
            "markers": markers, "from": "sdk" if raised == revision else "sdk+markers"}


def sdk_revision(dep: SdkDependency) -> str | None:
    """The revision a dependency's version maps to, None when its SDK or version is not mapped."""
    if dep.sdk == "typescript-v2":
        return "2026-07-28"
    version = dep.resolved or lowest_version(dep.spec)
    if dep.sdk not in (*SEED_TABLE_SDKS, "fastmcp") or not version:
        return None
    major, minor = (_numbers(version) + [0, 0])[:2]
    if dep.sdk == "fastmcp":  # through the mcp it requires: < 2.0 mcp>=1.0; 2.x and 3.x mcp>=1.6 (or later); 4.x none
        return "2024-11-05" if major < 2 else "2025-11-25" if major < 4 else None
    if major >= 2:
        return "2026-07-28"
    if (major, minor) < (1, 1):
        return "2024-11-05"
    if (major, minor) < (1, 6):
        return "2025-06-18"
    return "2025-11-25"


def source_markers(files: list[SourceFile]) -> dict[str, str]:
    """Markers found in the selected files -> the first revision that has the feature."""
    found: dict[str, str] = {}
    for source in files:
        for name, (revision, patterns) in _COMPILED.items():
            if name not in found and any(p.search(source.text) for p in patterns):
                found[name] = revision
        literals = [m.group(0) for m in PROTOCOL_LITERAL.finditer(source.text) if source.text[m.start() - 1:m.start()] in ("\"", "'", "`")]
        if literals:
            found["protocol_literal"] = max(literals + [found.get("protocol_literal", REVISIONS[0])], key=REVISIONS.index)
    return dict(sorted(found.items()))


def lowest_version(spec: str) -> str | None:
    """The lower bound of a version spec: '^1.30.0' → 1.30.0, '>=1.3,<2' → 1.3, '<2,>=1.3' → 1.3, 'v0.8.0' → 0.8.0; an upper
    bound alone gives none."""
    candidates: list[str] = []
    for clause in re.split(r"\|\||,", spec or "")[:20]:
        clause = clause.strip()
        if clause.startswith(("<", "!=")):
            continue
        match = re.search(r"\d{1,6}(?:\.\d{1,6}){0,2}", clause)
        if match:
            candidates.append(match.group(0))
    return min(candidates, key=_numbers) if candidates else None


def _numbers(version: str) -> list[int]:
    return [int(p) for p in re.findall(r"\d{1,6}", version)[:3]]
