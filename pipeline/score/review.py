"""The `review` rubric (seed 001): a live review in six sections.

Server metadata is 100 weighted points; discoverability, protocol and tools are passed ÷
applicable checks; tool documentation quality is the average of per-tool scores (10/30/30/15/15);
MCP Apps is reported, never counted. Overall = mean of the applicable, non-optional sections.
Only servers that completed a handshake and expose at least one tool are listed (ranked).
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.models import DimensionScore, RubricInfo
from pipeline.score.engine import Dimension, Outcome, Rubric, RuleSet, on_scale, share, unmeasured, weighted_composite
from pipeline.score.facts import Facts
from pipeline.score.markers import findings
from pipeline.score.tools import ToolView, read_tool, tool_views

RUBRIC = "review"
RULES_VERSION = "review/1.0"
GRADES = ((85, "A"), (70, "B"), (55, "C"), (40, "D"), (0, "F"))
DOC_PARTS = {"title": 10, "description": 30, "inputs": 30, "annotations": 15, "output_schema": 15}  # one tool's documentation, in points
RULES = RuleSet()
rule = RULES.rule
NAME_RULE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
FIELD_LIMIT = 2048  # Claude Code's field size: descriptions and instructions under 2 KB
STABLE_NAME = re.compile(r"^[a-z0-9][a-z0-9._\-/@]*$")
WHEN_TO_USE = re.compile(r"\b(use (this|it|when|to|for)|when (you|the user|an agent)|call (this|it) (when|to|before|after)"
                         r"|useful (for|when)|if you need)\b", re.I)
RETURNS = re.compile(r"\b(returns?|responds? with|outputs?|yields?|gives back|result(s)? (in|is|are)|produces?)\b", re.I)
RESTATED_RULE = re.compile(r"^\s*(an? )?(string|integer|number|boolean|array|object)\b[\s.,;:()\w-]{0,30}$"
                           r"|\((string|integer|number|boolean|required|optional)[,)]", re.I)


def _applicable_if_http(facts: Facts) -> str | None:
    if facts.server.transport == "stdio":
        return "a stdio server has no URL to discover or open in a browser"
    return None


SECTIONS = (
    Dimension("server_metadata", "Server metadata", 1),
    Dimension("discoverability", "Discoverability", 1, applicable=_applicable_if_http),
    Dimension("protocol", "Protocol", 1),
    Dimension("tools", "Tools", 1),
    Dimension("tool_docs", "Tool documentation quality", 1),
    Dimension("mcp_apps", "MCP Apps (reported, never counted)", 0, optional=True),
)


def _handshake(facts: Facts) -> dict[str, Any] | None:
    return facts.probe.server_info if facts.probe and facts.probe.reachable else None


def _pass(condition: bool, reason_ok: str, reason_fail: str, gain: str | None = None) -> Outcome:
    return share(1 if condition else 0, reason_ok if condition else reason_fail, how_to_gain=None if condition else gain)


def _no_handshake() -> Outcome:
    return unmeasured("no completed handshake to read", "make the server answer the MCP handshake")


# ---------------------------------------------------------------- Server metadata (100 weighted points)


@rule("server_metadata", 10)
def stable_name(facts: Facts) -> Outcome:
    """A machine-friendly serverInfo.name such as acme-orders."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    name = str(info.get("name") or "")
    return _pass(bool(STABLE_NAME.match(name)), f"name {name!r}", f"name {name!r} is not machine-friendly",
                 "use a lower-case, hyphenated serverInfo.name")


@rule("server_metadata", 10)
def human_title(facts: Facts) -> Outcome:
    """A display title clients can show (serverInfo.title)."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    return _pass(bool((info.get("title") or "").strip()), f"title {info.get('title')!r}", "no serverInfo.title", "set serverInfo.title")


@rule("server_metadata", 20)
def useful_description(facts: Facts) -> Outcome:
    """At least 40 characters in serverInfo.description on what the server helps an agent do."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    text = (info.get("description") or "").strip()
    return _pass(len(text) >= 40, f"{len(text)}-character description", f"description has {len(text)} characters; 40 needed",
                 "set serverInfo.description to what the server helps an agent do (40+ characters)")


@rule("server_metadata", 10)
def server_version(facts: Facts) -> Outcome:
    """A version string so clients can track releases."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    return _pass(bool(str(info.get("version") or "").strip()), f"version {info.get('version')!r}", "no version", "set serverInfo.version")


@rule("server_metadata", 10)
def public_website(facts: Facts) -> Outcome:
    """A valid http(s) websiteUrl."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    url = str(info.get("websiteUrl") or "")
    return _pass(url.lower().startswith(("https://", "http://")), f"website {url}", "no valid websiteUrl", "set serverInfo.websiteUrl")


def _scalable(icon: dict[str, Any]) -> bool:
    if "svg" in str(icon.get("mimeType") or "").lower() or str(icon.get("src") or "").lower().split("?")[0].endswith(".svg"):
        return True
    for size in icon.get("sizes") or []:
        if str(size) == "any":
            return True
        match = re.match(r"(\d+)x(\d+)", str(size))
        if match and min(int(match.group(1)), int(match.group(2))) >= 128:
            return True
    return False


@rule("server_metadata", 10)
def scalable_icon(facts: Facts) -> Outcome:
    """An SVG icon, or a raster icon of 128px or larger."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    icons = [i for i in info.get("icons") or [] if isinstance(i, dict)]
    return _pass(any(_scalable(i) for i in icons), f"{len(icons)} icons, one scalable", f"{len(icons)} icons, none SVG or ≥128px",
                 "add an SVG icon, or a PNG of at least 128×128, to serverInfo.icons")


@rule("server_metadata", 20)
def server_instructions(facts: Facts) -> Outcome:
    """Usage instructions for agents in the handshake result."""
    if _handshake(facts) is None and not (facts.probe and facts.probe.reachable):
        return _no_handshake()
    text = (facts.probe.instructions or "").strip()
    return _pass(bool(text), f"{len(text)} characters of instructions", "no instructions", "return instructions for agents from the handshake")


@rule("server_metadata", 10)
def declared_capabilities(facts: Facts) -> Outcome:
    """Tools, resources or prompts declared in capabilities."""
    if not (facts.probe and facts.probe.reachable):
        return _no_handshake()
    declared = sorted(k for k in (facts.probe.capabilities or {}) if k in ("tools", "resources", "prompts"))
    return _pass(bool(declared), f"declares {', '.join(declared)}", "declares no tools, resources or prompts",
                 "declare your primitives in capabilities")


# ---------------------------------------------------------------- Discoverability


@rule("discoverability", 1)
def server_card(facts: Facts) -> Outcome:
    """An mcp.json manifest or Server Card under /.well-known declaring this endpoint."""
    http = facts.probe.http if facts.probe else None
    if http is None or http.server_card is None:
        return unmeasured("not checked yet")
    return _pass(http.server_card, "server card found", "no /.well-known/mcp.json or server card", "publish a server card (SEP-2127)")


@rule("discoverability", 1)
def setup_page(facts: Facts) -> Outcome:
    """Opening the endpoint in a browser returns a readable HTML setup page."""
    http = facts.probe.http if facts.probe else None
    if http is None or http.html_setup_page is None:
        return unmeasured("not checked yet")
    return _pass(http.html_setup_page, "HTML setup page", "no HTML page for a browser", "answer a browser GET with an HTML setup page")


# ---------------------------------------------------------------- Protocol


@rule("protocol", 1)
def negotiation(facts: Facts) -> Outcome:
    """The MCP handshake succeeds (modern server/discover or legacy initialize; HTTP, SSE or stdio)."""
    if facts.probe is None:
        return unmeasured("not probed yet")
    return _pass(facts.probe.reachable, f"negotiated {facts.probe.protocol_version} via {facts.probe.handshake}",
                 f"handshake failed: {facts.probe.outcome.value}", "make the server answer the handshake")


def _list_check(facts: Facts, capability: str, check_name: str) -> Outcome:
    if not (facts.probe and facts.probe.reachable):
        return unmeasured("no handshake")
    if capability not in (facts.probe.capabilities or {}):
        return unmeasured(f"{capability} capability not declared")
    check = facts.check(check_name)
    if check is None:
        return unmeasured(f"{check_name} not called")
    return _pass(bool(check.passed), f"{check_name}: {check.detail or check.outcome}", f"{check_name} failed: {check.outcome} {check.detail or ''}",
                 f"make {check_name} answer")


@rule("protocol", 1)
def tools_list(facts: Facts) -> Outcome:
    """tools/list returns the tools when the tools capability is declared."""
    return _list_check(facts, "tools", "tools/list")


@rule("protocol", 1)
def resources_list(facts: Facts) -> Outcome:
    """resources/list responds when the resources capability is declared (an empty list passes)."""
    return _list_check(facts, "resources", "resources/list")


@rule("protocol", 1)
def tools_capability(facts: Facts) -> Outcome:
    """The tools capability is declared whenever tools are offered."""
    if not facts.tools:
        return unmeasured("no tools offered")
    return _pass("tools" in (facts.probe.capabilities or {}), "tools capability declared", "tools offered without the tools capability",
                 "declare capabilities.tools")


# ---------------------------------------------------------------- Tools checks


def _tools_or_unmeasured(facts: Facts) -> list[ToolView] | None:
    views = tool_views(facts)
    return views if views else None


def _all(tools: list[ToolView], predicate, what: str, gain: str) -> Outcome:
    failing = [v.name for v in tools if not predicate(v)]
    return _pass(not failing, f"all {len(tools)} tools {what}", f"{len(failing)} tools fail: {', '.join(failing[:8])}", gain)


@rule("tools", 1)
def tool_descriptions(facts: Facts) -> Outcome:
    """Every tool has a non-empty description."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    return _all(tools, lambda v: bool(v.description), "have descriptions", "describe every tool")


@rule("tools", 1)
def behavior_hints(facts: Facts) -> Outcome:
    """readOnlyHint, destructiveHint and openWorldHint declared as booleans."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    return _all(tools, lambda v: v.behaviour_hints_declared, "declare the behaviour hints",
                "declare readOnlyHint, destructiveHint and openWorldHint on every tool")


@rule("tools", 1)
def display_titles(facts: Facts) -> Outcome:
    """Every tool has title or annotations.title."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    return _all(tools, lambda v: bool(v.title), "have display titles", "give every tool a title")


@rule("tools", 1)
def name_rules(facts: Facts) -> Outcome:
    """Unique names of 64 characters or fewer using A–Z, digits, underscore, hyphen and dot."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    names = [v.name for v in tools]
    bad = sorted({n for n in names if not NAME_RULE.match(n)} | {n for n in names if names.count(n) > 1})
    return _pass(not bad, f"{len(names)} valid, unique names", f"invalid or duplicate names: {', '.join(bad[:8])}",
                 "use unique names of up to 64 characters from A–Z, a–z, 0–9, _ - .")


@rule("tools", 1)
def field_size(facts: Facts) -> Outcome:
    """Tool descriptions and server instructions under 2 KB each (Claude Code's field size)."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    fields = [(f"{v.name}.description", str(v.tool.get("description") or "")) for v in tools]
    fields.append(("server instructions", facts.probe.instructions or ""))
    big = [where for where, text in fields if len(text.encode()) >= FIELD_LIMIT]
    return _pass(not big, "every field under 2 KB", f"over 2 KB: {', '.join(big[:5])}", "keep each description and the instructions under 2 KB")


@rule("tools", 1)
def no_hidden_characters(facts: Facts) -> Outcome:
    """No invisible or control characters in tool-facing text."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    found = [f"{where} ({', '.join(chars)})" for where, chars in findings(facts)["hidden"]]
    return _pass(not found, "no hidden characters", f"hidden characters in {'; '.join(found[:5])}", "remove zero-width, bidi and control characters")


@rule("tools", 1)
def no_prompt_injection(facts: Facts) -> Outcome:
    """Tool text and server instructions carry no tool-poisoning directives (ignore instructions, hide actions from the user, read local secrets)."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    found = [f"{where}: {', '.join(m)}" for where, m in findings(facts)["injection"]]
    return _pass(not found, "no tool-poisoning markers", "; ".join(found[:5]), "remove directives aimed at the agent from tool text")


@rule("tools", 1)
def schemas(facts: Facts) -> Outcome:
    """inputSchema is an object schema; any outputSchema is a valid JSON Schema object."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    # The probe validated every schema against JSON Schema 2020-12 when it listed the tools;
    # the rule reads that stored verdict rather than validating again on every rescore.
    check = facts.check("schema_validity")
    if check is None:
        problems = [f"{v.name}: not an object schema" for v in tools if not v.input_is_object]
        return _pass(not problems, "all input schemas are object schemas", "; ".join(problems[:5]), "make every inputSchema an object schema")
    return _pass(bool(check.passed), "all schemas valid", check.detail or check.outcome,
                 "make every inputSchema an object schema and every outputSchema valid")


# ---------------------------------------------------------------- Tool documentation quality (per tool)


def _squash(text: str) -> str:
    return re.sub(r"[\s_.\-]+", "", text.lower())


def tool_doc_scores(tool: dict[str, Any] | ToolView) -> dict[str, float]:
    """One tool's documentation: title 10, description 30, inputs 30, annotations 15, output schema 15."""
    view = tool if isinstance(tool, ToolView) else read_tool(tool)
    name, title, description, props = view.name, view.title, view.description, view.props
    scores = {"title": 10.0 if title and _squash(title) != _squash(name) else 0.0}
    scores["description"] = ((10.0 if len(description) >= 20 else 0.0) + (10.0 if WHEN_TO_USE.search(description) else 0.0)
                             + (10.0 if RETURNS.search(description) else 0.0))
    if props:
        texts = {k: str(v.get("description") or "").strip() if isinstance(v, dict) else "" for k, v in props.items()}
        described = sum(1 for t in texts.values() if t) / len(props)
        ids = [k for k in props if re.search(r"(^|_)id$|Id$", k)]
        ids_explained = all(re.search(r"\b(from|returned by|as returned|obtained|get it|use the)\b|`\w+`", texts[k], re.I) for k in ids)
        restated = any(RESTATED_RULE.search(t) for t in texts.values() if t)
        scores["inputs"] = 20 * described + (5.0 if ids_explained else 0.0) + (0.0 if restated else 5.0)
    else:
        scores["inputs"] = 30.0  # no arguments, nothing to document
    hints = view.hints
    declared = sum(isinstance(hints.get(h), bool) for h in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"))
    scores["annotations"] = 15 * declared / 4
    output = view.output_schema
    if output is None:
        scores["output_schema"] = 0.0
    else:
        fields = output.get("properties") if isinstance(output.get("properties"), dict) else {}
        all_described = bool(fields) and all(isinstance(f, dict) and f.get("description") for f in fields.values())
        scores["output_schema"] = 15.0 if all_described else 7.5
    return scores


def doc_scores(facts: Facts) -> dict[str, dict[str, float]]:
    """Per-tool documentation scores, computed once per server and shared by the five rules."""
    if "review.docs" not in facts.memo:
        facts.memo["review.docs"] = {v.name: tool_doc_scores(v) for v in tool_views(facts) or []}
    return facts.memo["review.docs"]


def _per_tool(facts: Facts, part: str, gain: str) -> Outcome:
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    values = {name: scores[part] for name, scores in doc_scores(facts).items()}
    mean = sum(values.values()) / len(values)
    weakest = sorted((v, k) for k, v in values.items() if v < DOC_PARTS[part])[:5]
    return on_scale(mean, f"average {mean:.1f}/{DOC_PARTS[part]:g} over {len(values)} tools",
                    how_to_gain=(gain + ": " + ", ".join(k for _, k in weakest)) if weakest else None)


@rule("tool_docs", DOC_PARTS["title"])
def doc_title(facts: Facts) -> Outcome:
    """Title (10%): a short human title, not a copy of the tool name."""
    return _per_tool(facts, "title", "give a human title to")


@rule("tool_docs", DOC_PARTS["description"])
def doc_description(facts: Facts) -> Outcome:
    """Description (30%): says what the tool does, when to use it and what it returns."""
    return _per_tool(facts, "description", "say what it does, when to use it and what it returns, for")


@rule("tool_docs", DOC_PARTS["inputs"])
def doc_inputs(facts: Facts) -> Outcome:
    """Inputs (30%): every argument described; IDs say which tool returns them; no restated schema rules."""
    return _per_tool(facts, "inputs", "describe every argument of")


@rule("tool_docs", DOC_PARTS["annotations"])
def doc_annotations(facts: Facts) -> Outcome:
    """Annotations (15%): all four hints — readOnly, destructive, idempotent, openWorld."""
    return _per_tool(facts, "annotations", "declare all four hints on")


@rule("tool_docs", DOC_PARTS["output_schema"])
def doc_output_schema(facts: Facts) -> Outcome:
    """Output schema (15%): a declared outputSchema whose fields are described."""
    return _per_tool(facts, "output_schema", "declare a described outputSchema on")


# ---------------------------------------------------------------- MCP Apps (reported, never counted)


def _apps(facts: Facts):
    apps = facts.probe.apps if facts.probe else None
    return apps if apps and apps.views else None


@rule("mcp_apps", 1)
def apps_readable(facts: Facts) -> Outcome:
    """Every tool-linked ui:// resource is readable."""
    apps = _apps(facts)
    if apps is None:
        return unmeasured("no ui:// views")
    return _pass(apps.readable == apps.views, f"{apps.readable}/{apps.views} views readable", f"{apps.readable}/{apps.views} views readable")


@rule("mcp_apps", 1)
def apps_html(facts: Facts) -> Outcome:
    """Views are served with an HTML MIME type."""
    apps = _apps(facts)
    if apps is None:
        return unmeasured("no ui:// views")
    return _pass(apps.html_mime == apps.views, f"{apps.html_mime}/{apps.views} HTML", f"{apps.html_mime}/{apps.views} HTML")


@rule("mcp_apps", 1)
def apps_csp(facts: Facts) -> Outcome:
    """Each view declares its content security policy."""
    apps = _apps(facts)
    if apps is None:
        return unmeasured("no ui:// views")
    return _pass(apps.csp == apps.views, f"{apps.csp}/{apps.views} declare CSP", f"{apps.csp}/{apps.views} declare CSP")


# ---------------------------------------------------------------- overall


def listed(facts: Facts) -> bool:
    """Seed 001's listing rule: the latest review completed a handshake and exposes at least one tool."""
    return bool(facts.probe and facts.probe.reachable and facts.tools)


def overall(facts: Facts, sections: list[DimensionScore]) -> float | None:
    """The mean of the applicable, counted sections; only for a listed server."""
    value = weighted_composite(sections, {s.name: s.weight for s in SECTIONS})
    return value if listed(facts) else None


def visibility(facts: Facts, sections: list[DimensionScore], composite: float | None) -> str:
    return "listed" if listed(facts) else "not listed"


def extra(facts: Facts, composite: float | None) -> dict:
    return {"tool_docs": doc_scores(facts), "listed": listed(facts)}


REVIEW = Rubric(
    info=RubricInfo(RUBRIC, "Live review", "Live review",
                    "Seed 001's six sections; only servers that completed a handshake and list a tool are ranked.", RULES_VERSION),
    dimensions=SECTIONS,
    rules=tuple(RULES.rules),
    composite=overall,
    visibility=visibility,
    grades=GRADES,
    extra=extra,
    tables=("rules", "grades"),
)
