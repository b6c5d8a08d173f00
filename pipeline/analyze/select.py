"""File selection (seed 000): which of a tree's source files are read for tools, behaviour and inference.

In the seed's stages: manifests confirm an MCP SDK dependency; an SDK-import scan and the tool-definition patterns find
the files that matter; entry points are always included for confirmed MCP projects; then files whose path names an
MCP-relevant keyword, the usual source directories (src/, lib/, packages/, servers/, plugins/) and finally any source
file. The top MAX_SELECTED files are kept, each cut at MAX_FILE_BYTES, in a deterministic order, each with its reason.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass

from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.analyze.sdk import manifest_texts, sdk_dependencies

MAX_SELECTED = 20  # seed 000: the top 20 files
MAX_FILE_BYTES = 25_000  # seed 000: 25 KB per file
MAX_SCANNED = 400  # source files read for the import and pattern scans (a monorepo's deepest corners are left unread)

LANGUAGES = {".py": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript", ".mjs": "javascript",
             ".jsx": "javascript", ".go": "go", ".rs": "rust",
             # ours (deviation 47): the module-kind forms of the same languages (a package may ship only dist/index.cjs)
             ".cjs": "javascript", ".mts": "typescript", ".cts": "typescript"}
KEYWORDS = ("tool", "server", "mcp", "handler", "route", "api", "endpoint", "function", "core", "plugin", "command", "service",
            "index", "main", "app")
SOURCE_DIRS = ("src", "lib", "packages", "servers", "plugins")
COMPILED_DIRS = {"dist", "build", "out"}  # the published form of TypeScript: the source when nothing else is shipped
SKIPPED_DIRS = {"node_modules", "vendor", "third_party", "third-party", "site-packages", ".venv", "venv", "__pycache__", ".git", "target",
                "test", "tests", "__tests__", "__test__", "spec", "specs", "testdata", "fixtures", "__mocks__", "e2e", "coverage",
                ".github", "bower_components", "jspm_packages", ".next", ".nuxt"}
SIDE_DIRS = {"examples", "example", "docs", "doc", "scripts", "benchmarks", "bench"}  # read only when nothing better remains
SKIPPED_FILE = re.compile(r"(^test_.*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|\.d\.[cm]?ts$|[.-]min\.js$|\.bundle\.js$|"
                          r"^(conftest|setup|noxfile|fabfile)\.py$|\.config\.[cm]?[jt]s$|^(gulpfile|gruntfile|webpack\.[\w.]+)\.js$)", re.I)
# Each pattern starts with a literal, so the engine skips ahead to it (one alternation over every position is far slower).
SDK_IMPORTS = tuple(re.compile(p) for p in (
    r"from[ \t]{1,10}(?:mcp|fastmcp)\b", r"import[ \t]{1,10}(?:mcp|fastmcp)\b", r"@modelcontextprotocol/", r"fastmcp[\"']",
    r"github\.com/modelcontextprotocol/go-sdk", r"github\.com/mark3labs/mcp-go", r"rmcp::", r"use[ \t]{1,10}rmcp\b"))
TOOL_PATTERNS = tuple(re.compile(p) for p in (
    r"\.tool[ \t]{0,10}[(\n\r]", r"registerTool(?:Task)?\b", r"ListToolsRequestSchema", r"list_tools", r"add_tool\b", r"addTool\b",
    r"NewTool\b", r"AddTool\b", r"#\[tool\b", r"\bTool\(", r"inputSchema\b", r"define\w{0,30}Tool\b", r"createTool\b",
    r"extends[ \t]{1,10}(?:[\w$]{1,60}\.)?MCPTool\b"))
# A tool definition with a literal name, a tool list handler, or a tool-shaped object: where a long file's excerpt begins.
DEFINITION = re.compile(r"\.(?:tool|registerTool|registerToolTask|addTool)\([ \t\n]{0,20}[\"'`]|ListToolsRequestSchema[ \t]{0,5},|"
                        r"NewTool\([ \t\n]{0,20}\"|\binputSchema[ \t]{0,5}:|#\[tool\(")
WINDOW_LEAD = 3_000  # bytes kept before the first definition (the constants it refers to)
ENTRY_NAMES = ("index.ts", "index.js", "index.mjs", "server.ts", "server.js", "main.ts", "main.py", "server.py", "__main__.py", "app.py",
               "main.go", "main.rs", "lib.rs")


@dataclass
class _Candidate:
    path: str
    language: str
    tier: int = 9
    reason: str = ""
    text: str | None = None
    first_line: int = 1


@dataclass
class Selection:
    files: list[SourceFile]
    left_out: list[str]  # files with a tool-definition pattern not among the top MAX_SELECTED (their tools go unread)


def select_files(tree: SourceTree) -> list[SourceFile]:
    """The seed's top files of the tree, each with why it was chosen; unreadable files are passed over."""
    return select(tree).files


def select(tree: SourceTree) -> Selection:
    """The top files, and the files with tool patterns that did not make the cut."""
    candidates = _candidates(tree.files)
    confirmed = bool(sdk_dependencies(tree))
    entries = _entry_points(tree, {c.path for c in candidates})
    scanned = 0
    for candidate in sorted(candidates, key=_scan_order):
        if scanned >= MAX_SCANNED:
            break
        text = tree.read(candidate.path)
        scanned += 1
        if text is None:
            continue
        candidate.text, candidate.first_line = _excerpt(text, candidate.language)
        imports, tools = found_any(SDK_IMPORTS, candidate.text), found_any(TOOL_PATTERNS, candidate.text)
        confirmed = confirmed or imports
        if imports and tools:
            candidate.tier, candidate.reason = 1, "sdk import and tool pattern"
        elif tools:
            candidate.tier, candidate.reason = 2, "tool pattern"
        elif imports:
            candidate.tier, candidate.reason = 3, "sdk import"
        else:
            candidate.tier, candidate.reason = _path_tier(candidate.path)
    if confirmed:
        for candidate in candidates:
            if candidate.path in entries and candidate.text is not None:
                candidate.tier, candidate.reason = 0, f"entry point ({entries[candidate.path]})"
    readable = [c for c in candidates if c.text is not None]
    ranked = sorted(readable, key=lambda c: (c.tier, c.path.count("/"), c.path))
    chosen = ranked[:MAX_SELECTED]
    left_out = [c.path for c in ranked[MAX_SELECTED:] if c.tier <= 2 and not is_side_file(c.path)]
    files = [SourceFile(path=c.path, text=c.text or "", language=c.language, reason=c.reason, first_line=c.first_line) for c in chosen]
    return Selection(files, left_out)


def found_any(patterns: tuple[re.Pattern, ...], text: str) -> bool:
    return any(pattern.search(text) for pattern in patterns)


def _candidates(files: list[str]) -> list[_Candidate]:
    """Source files of a supported language, without tests, vendored code, bundles and type declarations. Compiled output
    (dist/, build/, out/) counts only when the tree has no other source: a published npm package often ships nothing else."""
    found: list[_Candidate] = []
    for path in files:
        dot = path.rfind(".")
        language = LANGUAGES.get(path[dot:].lower()) if dot > 0 else None
        parts = path.split("/")
        if language is None or SKIPPED_FILE.search(parts[-1]) or any(p in SKIPPED_DIRS or p.endswith((".dist-info", ".egg-info"))
                                                                       for p in parts[:-1]):
            continue
        found.append(_Candidate(path, language))
    if any(not _compiled(c.path) and not _launcher(c.path) for c in found):
        found = [c for c in found if not _compiled(c.path)]
    paths = {c.path for c in found}
    return [c for c in found if not _twin_of_esm(c.path, paths)]


def _twin_of_esm(path: str, paths: set[str]) -> bool:
    """dist/cjs/x.js when dist/esm/x.js is there too, x.cjs beside x.js or x.mjs: a dual package's second build says
    nothing new."""
    if path.endswith(".cjs") and any(path[:-4] + ext in paths for ext in (".js", ".mjs")):
        return True
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in ("cjs", "commonjs"):
            return any("/".join(parts[:index] + [twin] + parts[index + 1:]) in paths for twin in ("esm", "mjs", "es"))
    return False


def _launcher(path: str) -> bool:
    """bin/x.js: the script a package.json `bin` starts, which only loads the compiled server; no source of its own."""
    return path.startswith("bin/")


def _compiled(path: str) -> bool:
    return any(part in COMPILED_DIRS for part in path.split("/")[:-1])


def _scan_order(candidate: _Candidate) -> tuple:
    tier, _ = _path_tier(candidate.path)
    return (tier, candidate.path.count("/"), candidate.path)


def is_side_file(path: str) -> bool:
    """A file of examples/, docs/, scripts/ or benchmarks: read for want of better, never the server's own definitions."""
    return any(part in SIDE_DIRS for part in path.lower().split("/")[:-1])


def _path_tier(path: str) -> tuple[int, str]:
    parts = path.lower().split("/")
    if is_side_file(path):
        return 7, "fallback (examples or docs)"
    stem = parts[-1].rsplit(".", 1)[0]
    if any(k in stem for k in KEYWORDS) or any(k in p for p in parts[:-1] for k in KEYWORDS[:10]):
        return 4, "keyword"
    if parts[0] in SOURCE_DIRS or (parts[0] in COMPILED_DIRS and len(parts) > 1):
        return 5, "source directory"
    return 6, "fallback"


def _excerpt(text: str, language: str) -> tuple[str, int]:
    """The file's 25 KB and the line they start on: its head, unless it is longer and its first tool definition lies past
    the head (a bundled dist file keeps its own code after its dependencies); then from a little before that definition.
    Python is always read from its head, where `ast` can parse it."""
    if len(text) <= MAX_FILE_BYTES // 4:
        return text, 1
    start = 0
    if language != "python" and len(text.encode("utf-8")) > MAX_FILE_BYTES:
        definition = DEFINITION.search(text)
        if definition is not None and definition.start() > MAX_FILE_BYTES - WINDOW_LEAD:
            start = max(text.rfind("\n", 0, definition.start() - WINDOW_LEAD) + 1, 0)
    excerpt = text[start:].encode("utf-8")[:MAX_FILE_BYTES].decode("utf-8", "ignore")
    return excerpt, text.count("\n", 0, start) + 1


def _entry_points(tree: SourceTree, paths: set[str]) -> dict[str, str]:
    """Entry files by path -> what names them: the conventional names, package.json main/bin/module targets (and the TypeScript
    source beside a compiled target), pyproject scripts' modules, cmd/*/main.go."""
    found: dict[str, str] = {}
    for path in sorted(paths):
        if _conventional_entry(path):
            found.setdefault(path, "conventional name")
    for manifest, text in manifest_texts(tree, {"package.json", "pyproject.toml"}):
        prefix = manifest[: -len(manifest.rsplit("/", 1)[-1])]
        targets = _package_targets(text) if manifest.endswith("package.json") else _script_modules(text)
        for target in targets:
            for path in _target_files(prefix + target.lstrip("./")):
                if path in paths:
                    found.setdefault(path, f"{manifest.rsplit('/', 1)[-1]} target")
    return found


def _conventional_entry(path: str) -> bool:
    """src/index.ts, index.js, dist/index.js, main.py, server.py, __main__.py (also a package's, under src/), cmd/*/main.go,
    src/main.rs …: the names, where a project keeps them (a tools/index.js is no entry point)."""
    parts = path.split("/")
    name, parents = parts[-1], parts[:-1]
    if name not in ENTRY_NAMES:
        return False
    if name.endswith(".py"):
        return len(parents) <= 2 and (not parents or parents[0] not in SOURCE_DIRS[1:])
    if name == "main.go":
        return not parents or (len(parents) == 2 and parents[0] == "cmd")
    if name.endswith(".rs"):
        return parents == ["src"]
    return len(parents) <= 1 and (not parents or parents[0] in ("src", *COMPILED_DIRS))


def _package_targets(text: str) -> list[str]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(document, dict):
        return []
    bin_field = document.get("bin")
    targets = [document.get("main"), document.get("module")]
    targets += list(bin_field.values()) if isinstance(bin_field, dict) else [bin_field]
    return [t for t in targets if isinstance(t, str) and t][:20]


def _script_modules(text: str) -> list[str]:
    try:
        scripts = (tomllib.loads(text).get("project") or {}).get("scripts") or {}
    except (ValueError, RecursionError, AttributeError):
        return []
    modules = [value.split(":")[0].strip() for value in scripts.values() if isinstance(value, str)][:20] if isinstance(scripts, dict) else []
    return [m.replace(".", "/") for m in modules if re.fullmatch(r"[\w.]{1,200}", m)]


def _target_files(target: str) -> list[str]:
    """A manifest target and the files it may stand for: a compiled dist/x.js also names src/x.ts; a module names its .py file,
    its package's __init__.py and __main__.py, under src/ as well."""
    if target.endswith((".js", ".mjs", ".cjs", ".ts")):
        stem = target.rsplit(".", 1)[0]
        sources = [target] + [stem + ext for ext in (".js", ".mjs", ".ts")]
        for compiled in COMPILED_DIRS:
            if stem.startswith(compiled + "/"):
                sources += [f"src/{stem[len(compiled) + 1:]}.ts", f"{stem[len(compiled) + 1:]}.ts"]
        return sources
    return [f"{root}{target}{suffix}" for root in ("", "src/") for suffix in (".py", "/__init__.py", "/__main__.py", "/server.py")]
