"""The `review` rubric's sections on a server's tools (seed 001): the tool checks, each tool's documentation
(scored per tool in pipeline.score.tool_docs, averaged here) and the MCP Apps views the tools link to
(reported, never counted). Registered on their own RuleSet, after the review's other sections.
"""

from __future__ import annotations

import re

from pipeline.score.engine import Outcome, RuleSet, on_scale, pass_or_fail, unmeasured
from pipeline.score.facts import Facts
from pipeline.score.markers import findings
from pipeline.score.tool_docs import DOC_PARTS, doc_scores
from pipeline.score.tools import ToolView, tool_views

TOOL_RULES = RuleSet()
rule = TOOL_RULES.rule
NAME_RULE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
FIELD_LIMIT = 2048  # Claude Code's field size: descriptions and instructions under 2 KB


# ---------------------------------------------------------------- Tools checks


def _tools_or_unmeasured(facts: Facts) -> list[ToolView] | None:
    views = tool_views(facts)
    return views if views else None


def _all(tools: list[ToolView], predicate, what: str, gain: str) -> Outcome:
    failing = [v.name for v in tools if not predicate(v)]
    return pass_or_fail(not failing, f"all {len(tools)} tools {what}", f"{len(failing)} tools fail: {', '.join(failing[:8])}", gain)


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
    return pass_or_fail(not bad, f"{len(names)} valid, unique names", f"invalid or duplicate names: {', '.join(bad[:8])}",
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
    return pass_or_fail(not big, "every field under 2 KB", f"over 2 KB: {', '.join(big[:5])}",
                        "keep each description and the instructions under 2 KB")


@rule("tools", 1)
def no_hidden_characters(facts: Facts) -> Outcome:
    """No invisible or control characters in tool-facing text."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    found = [f"{where} ({', '.join(chars)})" for where, chars in findings(facts)["hidden"]]
    return pass_or_fail(not found, "no hidden characters", f"hidden characters in {'; '.join(found[:5])}",
                        "remove zero-width, bidi and control characters")


@rule("tools", 1)
def no_prompt_injection(facts: Facts) -> Outcome:
    """Tool text and server instructions carry no tool-poisoning directives (ignore instructions, hide actions from the user, read local secrets)."""
    tools = _tools_or_unmeasured(facts)
    if tools is None:
        return unmeasured("no tools listed")
    found = [f"{where}: {', '.join(m)}" for where, m in findings(facts)["injection"]]
    return pass_or_fail(not found, "no tool-poisoning markers", "; ".join(found[:5]), "remove directives aimed at the agent from tool text")


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
        return pass_or_fail(not problems, "all input schemas are object schemas", "; ".join(problems[:5]), "make every inputSchema an object schema")
    return pass_or_fail(bool(check.passed), "all schemas valid", check.detail or check.outcome,
                        "make every inputSchema an object schema and every outputSchema valid")


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
    return _per_tool(facts, "inputs", "describe what every argument is for and where its value comes from, leaving its type, bounds and "
                                      "required flag to the schema, in")


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
    return pass_or_fail(apps.readable == apps.views, f"{apps.readable}/{apps.views} views readable", f"{apps.readable}/{apps.views} views readable")


@rule("mcp_apps", 1)
def apps_html(facts: Facts) -> Outcome:
    """Views are served with an HTML MIME type."""
    apps = _apps(facts)
    if apps is None:
        return unmeasured("no ui:// views")
    return pass_or_fail(apps.html_mime == apps.views, f"{apps.html_mime}/{apps.views} HTML", f"{apps.html_mime}/{apps.views} HTML")


@rule("mcp_apps", 1)
def apps_csp(facts: Facts) -> Outcome:
    """Each view declares its content security policy."""
    apps = _apps(facts)
    if apps is None:
        return unmeasured("no ui:// views")
    return pass_or_fail(apps.csp == apps.views, f"{apps.csp}/{apps.views} declare CSP", f"{apps.csp}/{apps.views} declare CSP")
