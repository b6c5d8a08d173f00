"""The LLM passes' questions and the answers they accept (deviations 127–133).

Each pass asks for a small JSON object (the `*Answer` models: plain fields, every one required, so each provider's
structured output can constrain it). What the model answers is then checked item by item here, as any untrusted text
is: a tool's name must follow MCP's tool-name rules, its schema must parse as a JSON object within the size caps, a file
it cites must be one it was sent; anything else is dropped and counted, never repaired, never executed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool

# Bumped whenever a pass's question or its reading of the answer changes: a new version asks again (the cache key).
PROMPT_VERSIONS = {"tools": "tools-1", "endpoints": "endpoints-1", "error_handling": "infer-1", "fuzz": "infer-1", "auth": "infer-1",
                   "review": "review-1"}
INFERENCE_PASSES = ("error_handling", "fuzz", "auth")

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")  # MCP's tool names: 1-128 of ASCII letters, digits, _ - .
MAX_TOOLS = 200  # tools read from one answer
MAX_DESCRIPTION = 8_000  # characters of a tool's description; a longer one is not a description
MAX_SCHEMA_CHARS = 32_000  # characters of one inputSchema's JSON
MAX_SCHEMA_DEPTH = 32
MAX_URLS = 20  # endpoint candidates read from one answer
MAX_EVIDENCE = 5  # places kept per inference pass
MAX_CONCERNS = 20
MAX_RATIONALE = 300
_PLACE = re.compile(r"^(?P<file>[^:\n]{1,300}):(?P<line>\d{1,7})$")


class WireTool(BaseModel):
    name: str
    description: str
    input_schema_json: str
    file: str


class ToolsAnswer(BaseModel):
    tools: list[WireTool]


class EndpointsAnswer(BaseModel):
    urls: list[str]


class InferenceAnswer(BaseModel):
    score: int
    signals: list[str]
    evidence: list[str]
    rationale: str


class WireConcern(BaseModel):
    kind: str
    file: str
    line: int
    detail: str


class ReviewAnswer(BaseModel):
    score: int
    concerns: list[WireConcern]
    rationale: str


# The signals each inference pass may name: those of the deterministic passes (inference.py), so the two read alike.
SIGNALS = {
    "error_handling": ("exception_handling", "mcp_error_results", "timeouts", "graceful_degradation"),
    "fuzz": ("schema_validation", "type_checks", "bounds", "null_handling", "injection_prevention"),
    "auth": ("protected_resource_metadata", "bearer_checks", "secrets_from_env", "https", "safe_file_access"),
}
CONCERN_KINDS = ("exfiltration", "dangerous_operation", "scope_creep", "prompt_injection", "hardcoded_secret")

QUESTIONS = {
    "tools": ("List every tool this MCP server registers, however it registers them (decorators, calls, tables, loops, generated "
              "names spelled out in the code). For each: its exact name, its description (empty when none), its inputSchema as JSON "
              "text (an object schema; {\"type\": \"object\"} when the code declares no parameters) and the file that defines it, "
              "named exactly as in its BEGIN line. List no tool the files do not define."),
    "endpoints": ("List the URLs of remote MCP endpoints of this server that the README states (an https URL a client connects "
                  "to, often ending in /mcp or /sse). Copy each URL exactly as the README writes it. List no documentation, "
                  "package, badge, example or placeholder URL, and no URL the README does not itself contain."),
    "error_handling": ("Assess the server's error handling: try/catch around tool work, errors answered as MCP error results "
                       "(isError, McpError), timeouts, graceful degradation. score: 0-100. signals: the names among "
                       f"{', '.join(SIGNALS['error_handling'])} that the code shows."),
    "fuzz": ("Assess the server's input validation and resilience to malformed input: schema validation (zod, pydantic, JSON "
             "Schema), type checks, bounds, null handling, injection prevention. score: 0-100. signals: the names among "
             f"{', '.join(SIGNALS['fuzz'])} that the code shows."),
    "auth": ("Assess the server's security and auth patterns: OAuth protected-resource metadata, checks of a request's bearer "
             "token, secrets read from the environment (not hard-coded), HTTPS, safe file access. score: 0-100. signals: the "
             f"names among {', '.join(SIGNALS['auth'])} that the code shows."),
    "review": ("Review the server's behaviour for security concerns: data exfiltration, dangerous operations (deleting files, "
               "running processes), scope creep beyond its stated purpose, prompt-injection text in tool descriptions, hard-coded "
               f"credentials. score: 0-100, 100 when nothing is of concern. concerns: each with kind (one of {', '.join(CONCERN_KINDS)}), "
               "file, line and a short detail."),
}
EVIDENCE_NOTE = " evidence: up to five places as file:line. rationale: one or two sentences."


class Rejected(Exception):
    """An answer that cannot be used as a whole (a score out of range): the pass counts as malformed."""


def read_tools(answer: ToolsAnswer, files: dict[str, SourceFile], model: str) -> tuple[list[ExtractedTool], list[str]]:
    """The answer's tools that pass every check, labelled with the model; and why each other one was dropped."""
    tools: dict[str, ExtractedTool] = {}
    dropped: list[str] = []
    for wire in answer.tools[:MAX_TOOLS]:
        problem, tool = _tool(wire, files, model)
        if tool is None:
            dropped.append(problem)
        elif tool.name not in tools:
            tools[tool.name] = tool
    if len(answer.tools) > MAX_TOOLS:
        dropped.append(f"{len(answer.tools) - MAX_TOOLS} tools past the cap of {MAX_TOOLS}")
    return list(tools.values()), dropped[:20]


def _tool(wire: WireTool, files: dict[str, SourceFile], model: str) -> tuple[str, ExtractedTool | None]:
    shown = wire.name[:60].encode("ascii", "backslashreplace").decode()
    if not TOOL_NAME.match(wire.name):
        return f"{shown!r}: not an MCP tool name", None
    if len(wire.description) > MAX_DESCRIPTION:
        return f"{shown}: description longer than {MAX_DESCRIPTION} characters", None
    source = files.get(wire.file)
    if source is None:
        return f"{shown}: names a file it was not sent", None
    schema, problem = json_object(wire.input_schema_json)
    if schema is None:
        return f"{shown}: inputSchema {problem}", None
    return "", ExtractedTool(name=wire.name, description=wire.description or None, input_schema=schema, file=source.path,
                             line=_line_of(wire.name, source), language=source.language, pattern=f"llm:{model}")


def json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """A JSON object parsed from `text` within the size and depth caps, or why not."""
    if len(text) > MAX_SCHEMA_CHARS:
        return None, f"longer than {MAX_SCHEMA_CHARS} characters"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, "is not JSON"
    if not isinstance(value, dict):
        return None, "is not a JSON object"
    if _depth(value) > MAX_SCHEMA_DEPTH:
        return None, f"nested deeper than {MAX_SCHEMA_DEPTH}"
    return value, ""


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_SCHEMA_DEPTH:
        return level
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((_depth(child, level + 1) for child in children if isinstance(child, (dict, list))), default=level)


def _line_of(name: str, source: SourceFile) -> int:
    """The first line of the file that names the tool (quoted, or as a function), else the excerpt's first."""
    pattern = re.compile(rf"""["'`]{re.escape(name)}["'`]|\b(?:def|function|fn|func)\s+{re.escape(name)}\b""")
    match = pattern.search(source.text)
    return source.first_line + (source.text.count("\n", 0, match.start()) if match else 0)


def read_inference(name: str, answer: InferenceAnswer, sent: set[str]) -> dict[str, Any]:
    """An inference pass's reading: its score, the known signals it names, the places it cites in files it was sent."""
    if not 0 <= answer.score <= 100:
        raise Rejected(f"score {answer.score} is not 0-100")
    named = set(answer.signals)
    reading: dict[str, Any] = {"value": answer.score, "signals": {s: s in named for s in SIGNALS[name]},
                               "evidence": places(answer.evidence, sent), "rationale": answer.rationale[:MAX_RATIONALE]}
    if name == "auth":
        # As the deterministic pass reads it: True with protected-resource metadata, False with bearer checks without it.
        signals = reading["signals"]
        reading["security"] = reading.pop("value")
        reading["value"] = True if signals["protected_resource_metadata"] else False if signals["bearer_checks"] else None
    return reading


def places(cited: list[str], sent: set[str]) -> list[str]:
    found = []
    for place in cited:
        match = _PLACE.match(place.strip())
        if match and match.group("file") in sent and int(match.group("line")) > 0:
            found.append(f"{match.group('file')}:{int(match.group('line'))}")
    return found[:MAX_EVIDENCE]


def read_review(answer: ReviewAnswer, sent: set[str]) -> dict[str, Any]:
    if not 0 <= answer.score <= 100:
        raise Rejected(f"score {answer.score} is not 0-100")
    concerns = [{"kind": c.kind, "place": f"{c.file}:{c.line}", "detail": c.detail[:MAX_RATIONALE]}
                for c in answer.concerns if c.kind in CONCERN_KINDS and c.file in sent and c.line > 0][:MAX_CONCERNS]
    return {"value": answer.score, "concerns": concerns, "rationale": answer.rationale[:MAX_RATIONALE]}
