"""What of the selected files the tool extractor reads, and whether that is all of them.

Seed 000's 25 KB per file is an LLM's context budget (deviation 47); the behavioural scan and inference keep it. The parsers cost far
less, so the extractor reads more: a selected file whole up to WHOLE_BYTES (Python, Go and Rust up to the fetch's
200 KB, JavaScript and TypeScript up to 256 KB), and a longer JavaScript file (a bundle holding its dependencies, up to
the archive's 8 MB) in windows around each tool-definition site, found by one linear regex pass; the regions that
overlap are merged and each is parsed alone. What could not be read whole (a file the fetch cut, more sites than the
window budget) is said, so a partial extraction never claims that the server lists tools its source lacks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.analyze.fetch import MAX_TEXT, SourceFile, SourceTree
from pipeline.models import ExtractedTool

WHOLE_BYTES = {"javascript": 256_000, "typescript": 256_000}  # other languages: MAX_TEXT
# Where a tool may be defined: the selection's definition sites, a local `tool("name", …)` helper, mcp-framework's classes,
# a `schema`/`parameters`/`config` key. One regex each, every one beginning with a literal, so the engine skips ahead to it
# (an alternation, or a leading \b, is tried at every position: ten times slower on a bundle's megabytes).
SITES = tuple(re.compile(p) for p in (
    r"\.(?:tool|registerTool|registerToolTask|addTool)\([ \t\n]{0,20}[\"'`]", r"ListToolsRequestSchema", r"inputSchema[ \t]{0,5}:",
    r"tool\([ \t\n]{0,20}[\"'`]", r"MCPTool\b", r"schema[ \t]{0,5}[:,}]", r"parameters[ \t]{0,5}[:,}]", r"config[ \t]{0,5}[:,}]"))
LEAD, TAIL = 12_000, 12_000  # characters read before a site (its name, description constants) and after it (its schema)
MAX_WINDOW_BYTES = 3_000_000  # characters parsed in windows per file; past it the file counts as read in part
MAX_SITES = 5_000


@dataclass
class Reach:
    files: list[SourceFile]  # what the extractor parses: whole files, or windows of one file (first_line says where)
    cut: list[str]  # selected files the extractor could not read whole


def extraction_texts(selected: list[SourceFile], tree: SourceTree) -> Reach:
    files: list[SourceFile] = []
    cut: list[str] = []
    for source in selected:
        whole = tree.read(source.path)
        if whole is None or len(whole) <= len(source.text):  # the excerpt is all the fetch kept
            files.append(source)
        elif len(whole) <= WHOLE_BYTES.get(source.language, MAX_TEXT):
            files.append(SourceFile(path=source.path, text=whole, language=source.language, reason=source.reason))
        elif source.language in WHOLE_BYTES:
            windows, complete = _windows(whole)
            for start, end in windows:
                prelude = _name_constants(whole, start, end)
                files.append(SourceFile(path=source.path, text=prelude + whole[start:end], language=source.language, reason=source.reason,
                                        first_line=whole.count("\n", 0, start) + 1 - prelude.count("\n")))
            if not windows:
                files.append(source)
            if not complete:
                cut.append(source.path)
        else:
            files.append(source)
            cut.append(source.path)
        if source.path in tree.cut and source.path not in cut:
            cut.append(source.path)
    return Reach(files, cut)


def _windows(text: str) -> tuple[list[tuple[int, int]], bool]:
    """Merged [start, end) regions around each site, each starting at a line (or, in a minified line, a statement) boundary;
    and whether every site was covered within the budget."""
    regions: list[list[int]] = []
    total = 0
    sites: list[int] = []
    for pattern in SITES:
        for site in pattern.finditer(text):
            sites.append(site.start())
            if len(sites) > MAX_SITES:
                break
    complete = len(sites) <= MAX_SITES
    for site in sorted(sites)[:MAX_SITES]:
        start, end = _boundary(text, max(0, site - LEAD)), min(len(text), site + TAIL)
        if regions and start <= regions[-1][1]:
            total += max(0, end - regions[-1][1])
            regions[-1][1] = max(regions[-1][1], end)
        else:
            total += end - start
            regions.append([start, end])
        if total > MAX_WINDOW_BYTES:
            return _closed(regions), False
    return _closed(regions), complete


NAME_USE = re.compile(r"name[ \t]{0,5}:[ \t]{0,5}([A-Za-z_$][\w$]{0,60})\b")
STRING = re.compile(r"\"[^\"\\\n]{0,500}(?:\\.[^\"\\\n]{0,500}){0,20}\"|'[^'\\\n]{0,500}(?:\\.[^'\\\n]{0,500}){0,20}'")
MAX_CONSTANTS = 200


def _name_constants(text: str, start: int, end: int) -> str:
    """`const X = "…";` lines for the string constants a window's `name: X` refers to but declares elsewhere in the file
    (a bundler names tools in one place and defines them in another, kilobytes apart). Only string literals are copied."""
    window = text[start:end]
    lines: list[str] = []
    for name in dict.fromkeys(m.group(1) for m in NAME_USE.finditer(window)):
        if len(lines) >= MAX_CONSTANTS or name in ("true", "false", "null", "undefined", "this") or f"{name}=" in window.replace(" ", ""):
            continue
        literal = _string_declaration(text, name)
        if literal is not None:
            lines.append(f"const {name} = {literal};\n")
    return "".join(lines)


def _string_declaration(text: str, name: str) -> str | None:
    """The string literal of the first `name = "…"` declaration in the text (`var`/`let`/`const`, or a minified `,name="…"`)."""
    pattern = re.compile(re.escape(name) + r"[ \t]{0,5}=[ \t]{0,5}(?=[\"'])")
    for count, match in enumerate(pattern.finditer(text)):
        if count >= 50:
            break
        before = text[match.start() - 1] if match.start() else " "
        if before.isalnum() or before in "_$.":
            continue
        literal = STRING.match(text, match.end())
        if literal is not None:
            return literal.group(0)
    return None


def _closed(regions: list[list[int]]) -> list[tuple[int, int]]:
    return [(start, end) for start, end in regions]


def _boundary(text: str, position: int) -> int:
    """A line start at or before `position` (within 2,000 characters), else just after a `;` (a minified bundle's one line)."""
    if position == 0:
        return 0
    newline = text.rfind("\n", max(0, position - 2_000), position)
    if newline >= 0:
        return newline + 1
    semicolon = text.rfind(";", max(0, position - 2_000), position)
    return semicolon + 1 if semicolon >= 0 else position


CALL_SITE = re.compile(r"\.(?:tool|registerTool|registerToolTask|addTool)\([ \t\n]{0,20}[\"'`]|NewTool\([ \t\n]{0,20}\"|#\[tool\(|"
                       r"@(?:[\w.]{1,60}\.)?tool\b")
SCHEMA_SITE = re.compile(r"\binputSchema[ \t]{0,5}:")


def unrecognised(files: list[SourceFile], tools: list[ExtractedTool] | None) -> list[str]:
    """Files with more tool-definition sites than tools read from them: registrations by name (`.tool("…"`, `registerTool(`,
    `NewTool(`, `#[tool(`, a `@tool` decorator) or `inputSchema:` keys, whichever are more. A file whose tools are built in a
    shape the extractor does not know (names computed, objects assembled elsewhere) is then said to be read in part."""
    sites: dict[str, tuple[int, int]] = {}
    for source in files:
        calls, schemas = sites.get(source.path, (0, 0))
        sites[source.path] = (calls + len(CALL_SITE.findall(source.text)), schemas + len(SCHEMA_SITE.findall(source.text)))
    found: dict[str, int] = {}
    for tool in tools or []:
        found[tool.file] = found.get(tool.file, 0) + 1
    return [path for path, (calls, schemas) in sites.items() if max(calls, schemas) > found.get(path, 0)]
