"""Source inference (seed 000's three passes), deterministic: error handling, input validation and fuzz resilience,
security and auth patterns, read from the selected source files. The scorer uses them only as the fallback when no
probe data exists.

Each pass adds the points of the signals it finds (the tables below; methodology deviation 53), with the file and line
of the first places that show each. A pass says None ("not measured") when no MCP server code is recognised in the
files: an absent pattern in code that is not a server says nothing.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

import jsonschema

from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool

MAX_EVIDENCE = 3  # places kept per signal
MAX_LINE = 2_000  # characters of one line matched

# Recognising MCP server code at all: SDK imports and server constructions of every official SDK.
_SERVER = re.compile(r"FastMCP\(|McpServer\(|new Server\(|Server\(\s{0,4}[\"']|from mcp|import mcp|@modelcontextprotocol/|mcp\.server"
                     r"|mcp-go|mark3labs/mcp-go|modelcontextprotocol/go-sdk|rmcp|#\[tool\b|ServerHandler|server\.NewMCPServer|mcp\.NewServer")
# The SDK's high-level APIs catch a tool handler's exception and answer with an isError result themselves.
_FRAMEWORK = re.compile(r"@(?:\w{1,40}\.)?tool\(|FastMCP\(|\.tool\(|\.registerTool\(|#\[tool\b|mcp\.AddTool|\.AddTool\(")

Pattern = tuple[str, frozenset[str] | None, "re.Pattern[str] | _Folded"]
ANY = None
PY, JS, GO, RS = frozenset({"python"}), frozenset({"typescript", "javascript"}), frozenset({"go"}), frozenset({"rust"})


def _p(text: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern run over a whole file's code (so ^ is a line's start). A case-blind one is compiled in lower case and
    run over the lower-cased code: Python's IGNORECASE matching is several times slower, and this is the stage's hot loop."""
    if flags & re.I:
        return _Folded(re.compile(re.sub(r"(?<!\\)[A-Z]", lambda m: m.group().lower(), text), (flags & ~re.I) | re.M),
                       re.compile(text, flags | re.M))
    return re.compile(text, flags | re.M)


class _Folded:
    """A case-blind pattern: `lowered` runs over lower-cased text, `blind` (IGNORECASE) where lower-casing moved offsets."""

    def __init__(self, lowered: re.Pattern[str], blind: re.Pattern[str]) -> None:
        self.lowered, self.blind = lowered, blind

    def search(self, text: str) -> re.Match[str] | None:
        return self.blind.search(text)


# Pass 1, error handling (0–100): signal -> points, and the patterns that show it.
ERROR_POINTS = {"exception_handling": 35, "mcp_error_results": 30, "timeouts": 20, "graceful_degradation": 15}
ERROR_PATTERNS: list[Pattern] = [
    ("exception_handling", PY, _p(r"^\s*(?:try:|except\b)")),
    ("exception_handling", JS, _p(r"\btry\s{0,4}\{|\bcatch\s{0,4}[({]|\.catch\(")),
    ("exception_handling", GO, _p(r"if\s+err\s*!=\s*nil")),
    ("exception_handling", RS, _p(r"\.map_err\(|Result<|\?;|match\s.{0,80}Err\(")),
    ("mcp_error_results", ANY, _p(r"McpError|isError|is_error|ErrorCode\.|ErrorData\(|ToolError|INVALID_PARAMS|InvalidParams|-3260[0-3]"
                                  r"|NewToolResultError|JSONRPCError|ErrorData::")),
    ("timeouts", ANY, _p(r"\btimeout\b|Timeout|AbortController|AbortSignal|wait_for\(|WithTimeout|WithDeadline|deadline", re.I)),
    ("graceful_degradation", ANY, _p(r"logger\.(?:error|exception|warning)|logging\.(?:error|exception)|console\.error|log\.(?:Printf|Error)"
                                     r"|\bfinally\b|fallback|retry|retries|tracing::(?:error|warn)|eprintln!", re.I)),
]
# Pass 2, input validation and fuzz resilience (0–100).
FUZZ_POINTS = {"schema_validation": 35, "type_checks": 20, "bounds": 20, "null_handling": 15, "injection_prevention": 10}
FUZZ_PATTERNS: list[Pattern] = [
    ("schema_validation", ANY, _p(r"\bz\.(?:object|string|number|enum|array|boolean)\(|from zod|BaseModel\b|pydantic|Field\(|Annotated\["
                                  r"|jsonschema|\bajv\b|Ajv\(|JsonSchema\b|schemars|validate\(|\.parse\(|safeParse\(|mcp\.WithString|mcp\.Required")),
    ("type_checks", ANY, _p(r"isinstance\(|typeof\s+\w{1,60}\s*[!=]==|Number\.is(?:NaN|Integer|Finite)|Array\.isArray|strconv\."
                            r"|\.(?:as_str|as_i64|as_u64)\(")),
    ("bounds", ANY, _p(r"max_length|min_length|maxLength|minLength|\.max\(|\.min\(|\bge=|\ble=|\bgt=|\blt=|maximum|minimum|clamp|\blimit\b"
                       r"|len\(\w{1,60}\)\s*[<>]|\.length\s*[<>]", re.I)),
    ("null_handling", ANY, _p(r"\bis None\b|is not None|Optional\[|\|\s*None|\?\?|\?\.|===?\s*(?:null|undefined)|!==?\s*(?:null|undefined)"
                              r"|\.optional\(\)|\.nullable\(\)|==\s*nil|!=\s*nil|Option<|\.unwrap_or")),
    ("injection_prevention", ANY, _p(r"shlex\.quote|realpath|commonpath|is_relative_to|path\.resolve|startsWith\(|sanitize|escape\(|parameteri[sz]"
                                     r"|execFile\(|shell\s*=\s*False|filepath\.Clean|canonicalize\(", re.I)),
]
# Pass 3, security and auth patterns: auth discovery is True with protected-resource metadata, False when the server checks
# credentials on requests without it, None when it asks for none (stdio, or open).
AUTH_PATTERNS: list[Pattern] = [
    ("protected_resource_metadata", ANY, _p(r"oauth-protected-resource|protectedResourceMetadata|ProtectedResourceMetadata|mcpAuthMetadataRouter"
                                            r"|resource_metadata|resource_server_url|AuthSettings\(|requireBearerAuth|RequireBearerToken")),
    # The server checking a request's credentials (not a client sending its own Authorization header to an API it calls).
    ("bearer_checks", ANY, _p(r"(?:req|request|ctx|r)\.(?:headers|Header)(?:\.get\(\s{0,4}|\[\s{0,4}|\.Get\(\s{0,4}|\.)[\"']?authorization"
                              r"|WWW-Authenticate|requireBearerAuth|RequireBearerToken|TokenVerifier|verify_token|verifyToken|BearerAuthBackend"
                              r"|status\(401\)|sendStatus\(401\)|status_code\s{0,4}=\s{0,4}401|HTTPException\(\s{0,4}401|StatusUnauthorized"
                              r"|jwt\.verify\(", re.I)),
    ("secrets_from_env", ANY, _p(r"os\.environ|os\.getenv|process\.env|os\.Getenv|env::var|std::env")),
    ("https", ANY, _p(r"https://|ssl_context|tls\.|rejectUnauthorized|verify=True|HTTPS", re.I)),
]


def infer_protocol(files: list[SourceFile], tools: list[ExtractedTool] | None) -> dict[str, Any] | None:
    """The three passes over `files`; None when there are no source files at all."""
    if not files:
        return None
    server = any(_SERVER.search(f.text) for f in files) or bool(tools)
    framework = any(_FRAMEWORK.search(f.text) for f in files) or bool(tools)
    error = _signals(files, ERROR_PATTERNS)
    if framework and "mcp_error_results" not in error:
        error["mcp_error_results"] = ["SDK tool API: handler exceptions become isError results"]
    fuzz = _signals(files, FUZZ_PATTERNS)
    if tools and any(t.input_schema.get("properties") for t in tools) and "schema_validation" not in fuzz:
        fuzz["schema_validation"] = [f"{t.file}:{t.line}" for t in tools if t.input_schema.get("properties")][:MAX_EVIDENCE]
    auth = _signals(files, AUTH_PATTERNS)
    return {
        "server_code": server,
        "error_handling": _pass(error, ERROR_POINTS, server),
        "fuzz": _pass(fuzz, FUZZ_POINTS, server),
        "schema_validity": schema_validity(tools),
        "auth_discovery": _auth(auth, server),
    }


def _signals(files: list[SourceFile], patterns: list[Pattern]) -> dict[str, list[str]]:
    """signal -> the first places (file:line) that show it, in file order. Each pattern runs once over a file's code
    (comment lines blanked, lines cut at MAX_LINE, line numbers kept), not once per line: the regex engine does the walking."""
    found: dict[str, list[str]] = {}
    for file in files:
        code, starts = _code(file.text)
        lowered = code.lower()
        same_offsets = len(lowered) == len(code)  # not so for a few non-ASCII letters (İ)
        offset = file.first_line
        for name, languages, pattern in patterns:
            if languages is not None and file.language not in languages:
                continue
            places = found.setdefault(name, [])
            if isinstance(pattern, _Folded):
                matches = pattern.lowered.finditer(lowered) if same_offsets else pattern.blind.finditer(code)
            else:
                matches = pattern.finditer(code)
            for match in matches:
                if len(places) >= MAX_EVIDENCE:
                    break
                places.append(f"{file.path}:{bisect_right(starts, match.start()) - 1 + offset}")
    return {name: places for name, places in found.items() if places}


def _code(text: str) -> tuple[str, list[int]]:
    """The text with comment lines blanked and every line left-stripped and cut at MAX_LINE, and each line's start offset."""
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()[:MAX_LINE]
        lines.append("" if stripped.startswith(("#", "//", "/*", "*")) else stripped)
    starts, position = [], 0
    for line in lines:
        starts.append(position)
        position += len(line) + 1
    return "\n".join(lines), starts


def _pass(signals: dict[str, list[str]], points: dict[str, int], server: bool) -> dict[str, Any]:
    if not server:
        return {"value": None, "reason": "no MCP server code recognised in the selected files", "signals": {}, "evidence": []}
    value = sum(points[name] for name in points if name in signals)
    return {
        "value": value,
        "signals": {name: name in signals for name in points},
        "evidence": [place for name in points for place in signals.get(name, [])],
    }


def _auth(signals: dict[str, list[str]], server: bool) -> dict[str, Any]:
    metadata, bearer = signals.get("protected_resource_metadata"), signals.get("bearer_checks")
    value = None if not server else True if metadata else False if bearer else None
    return {
        "value": value,
        "signals": {name: name in signals for name, _, _ in AUTH_PATTERNS},
        "evidence": [place for name, _, _ in AUTH_PATTERNS for place in signals.get(name, [])],
    }


def schema_validity(tools: list[ExtractedTool] | None) -> dict[str, Any]:
    """Share (0–100) of the extracted tools whose inputSchema is a valid object JSON Schema; None without tools. A tool
    whose schema the extractor could not read (imported, computed: `{}`) is left out, neither valid nor invalid."""
    tools = [t for t in tools or [] if t.input_schema]
    if not tools:
        return {"value": None, "valid": 0, "total": 0, "invalid": []}
    invalid = [f"{t.name}: {problem}" for t in tools if (problem := schema_problem(t.input_schema))]
    valid = len(tools) - len(invalid)
    return {"value": round(100 * valid / len(tools), 1), "valid": valid, "total": len(tools), "invalid": invalid[:10],
            "evidence": [f"{t.file}:{t.line}" for t in tools][:10]}


def schema_problem(schema: Any) -> str | None:
    """Why a schema is not a valid object JSON Schema (the probe's own test, applied to what the source declares)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "not an object schema"
    try:
        error = jsonschema.exceptions.best_match(_META_VALIDATOR.iter_errors(schema))
    except Exception as exc:  # noqa: BLE001 - recursion or an unusable schema: invalid, never a crash of the stage
        return f"unusable: {type(exc).__name__}"
    return f"invalid: {error.message[:160]}" if error is not None else None


# One validator of the meta-schema, built once: check_schema would build one per schema (most of the stage's time).
_META_VALIDATOR = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
