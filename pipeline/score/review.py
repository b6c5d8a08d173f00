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
from pipeline.outcomes import Reading
from pipeline.score.engine import Dimension, Outcome, Rubric, RuleSet, pass_or_fail, unmeasured, weighted_composite
from pipeline.score.facts import Facts
from pipeline.score.review_tools import TOOL_RULES
from pipeline.score.tool_docs import doc_scores

RUBRIC = "review"
RULES_VERSION = "review/1.1"
GRADES = ((85, "A"), (70, "B"), (55, "C"), (40, "D"), (0, "F"))
RULES = RuleSet()  # the sections read from the handshake and the endpoint; the tools' sections are TOOL_RULES
rule = RULES.rule
STABLE_NAME = re.compile(r"^[a-z0-9][a-z0-9._\-/@]*$")


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
    return pass_or_fail(bool(STABLE_NAME.match(name)), f"name {name!r}", f"name {name!r} is not machine-friendly",
                        "use a lower-case, hyphenated serverInfo.name")


@rule("server_metadata", 10)
def human_title(facts: Facts) -> Outcome:
    """A display title clients can show (serverInfo.title)."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    return pass_or_fail(bool((info.get("title") or "").strip()), f"title {info.get('title')!r}", "no serverInfo.title", "set serverInfo.title")


@rule("server_metadata", 20)
def useful_description(facts: Facts) -> Outcome:
    """At least 40 characters in serverInfo.description on what the server helps an agent do."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    text = (info.get("description") or "").strip()
    return pass_or_fail(len(text) >= 40, f"{len(text)}-character description", f"description has {len(text)} characters; 40 needed",
                        "set serverInfo.description to what the server helps an agent do (40+ characters)")


@rule("server_metadata", 10)
def server_version(facts: Facts) -> Outcome:
    """A version string so clients can track releases."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    return pass_or_fail(bool(str(info.get("version") or "").strip()), f"version {info.get('version')!r}", "no version", "set serverInfo.version")


@rule("server_metadata", 10)
def public_website(facts: Facts) -> Outcome:
    """A valid http(s) websiteUrl."""
    info = _handshake(facts)
    if info is None:
        return _no_handshake()
    url = str(info.get("websiteUrl") or "")
    return pass_or_fail(url.lower().startswith(("https://", "http://")), f"website {url}", "no valid websiteUrl", "set serverInfo.websiteUrl")


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
    return pass_or_fail(any(_scalable(i) for i in icons), f"{len(icons)} icons, one scalable", f"{len(icons)} icons, none SVG or ≥128px",
                        "add an SVG icon, or a PNG of at least 128×128, to serverInfo.icons")


@rule("server_metadata", 20)
def server_instructions(facts: Facts) -> Outcome:
    """Usage instructions for agents in the handshake result."""
    if _handshake(facts) is None and not (facts.probe and facts.probe.reachable):
        return _no_handshake()
    text = (facts.probe.instructions or "").strip()
    return pass_or_fail(bool(text), f"{len(text)} characters of instructions", "no instructions", "return instructions for agents from the handshake")


@rule("server_metadata", 10)
def declared_capabilities(facts: Facts) -> Outcome:
    """Tools, resources or prompts declared in capabilities."""
    if not (facts.probe and facts.probe.reachable):
        return _no_handshake()
    declared = sorted(k for k in (facts.probe.capabilities or {}) if k in ("tools", "resources", "prompts"))
    return pass_or_fail(bool(declared), f"declares {', '.join(declared)}", "declares no tools, resources or prompts",
                        "declare your primitives in capabilities")


# ---------------------------------------------------------------- Discoverability


@rule("discoverability", 1)
def server_card(facts: Facts) -> Outcome:
    """An mcp.json manifest or Server Card under /.well-known declaring this endpoint."""
    http = facts.probe.http if facts.probe else None
    if http is None or http.server_card is None:
        return unmeasured("not checked yet")
    return pass_or_fail(http.server_card, "server card found", "no /.well-known/mcp.json or server card", "publish a server card (SEP-2127)")


@rule("discoverability", 1)
def setup_page(facts: Facts) -> Outcome:
    """Opening the endpoint in a browser returns a readable HTML setup page."""
    http = facts.probe.http if facts.probe else None
    if http is None or http.html_setup_page is None:
        return unmeasured("not checked yet")
    return pass_or_fail(http.html_setup_page, "HTML setup page", "no HTML page for a browser", "answer a browser GET with an HTML setup page")


# ---------------------------------------------------------------- Protocol


@rule("protocol", 1)
def negotiation(facts: Facts) -> Outcome:
    """The MCP handshake succeeds (modern server/discover or legacy initialize; HTTP, SSE or stdio). Not measured behind
    an authentication gate, for a 429, an opt-out or our own refusal, nor for a remote failure that does not stand yet."""
    if facts.probe is None:
        return unmeasured("not probed yet")
    if (why := facts.not_measured) is not None:
        return unmeasured(why, facts.not_measured_gain)
    if facts.reading is Reading.gated:
        return unmeasured("it answered behind an authentication gate: the handshake behind the gate is not measured")
    if (why := facts.unconfirmed_failure) is not None:
        return unmeasured(why)
    return pass_or_fail(facts.probe.reachable, f"negotiated {facts.probe.protocol_version} via {facts.probe.handshake}",
                        f"handshake failed: {facts.probe.outcome.value}", "make the server answer the handshake")


def _list_check(facts: Facts, capability: str, check_name: str) -> Outcome:
    if not (facts.probe and facts.probe.reachable):
        return unmeasured("no handshake")
    if capability not in (facts.probe.capabilities or {}):
        return unmeasured(f"{capability} capability not declared")
    check = facts.check(check_name)
    if check is None:
        return unmeasured(f"{check_name} not called")
    return pass_or_fail(bool(check.passed), f"{check_name}: {check.detail or check.outcome}",
                        f"{check_name} failed: {check.outcome} {check.detail or ''}", f"make {check_name} answer")


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
    return pass_or_fail("tools" in (facts.probe.capabilities or {}), "tools capability declared", "tools offered without the tools capability",
                        "declare capabilities.tools")


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
                    "The live review rubric: a live session read in six sections (server metadata, discoverability, protocol, tools, tool "
                    "documentation, MCP Apps); only servers that completed a handshake and list a tool are ranked.", RULES_VERSION,
                    nav="Review"),
    dimensions=SECTIONS,
    rules=(*RULES.rules, *TOOL_RULES.rules),
    composite=overall,
    visibility=visibility,
    grades=GRADES,
    extra=extra,
    tables=("rules", "grades"),
)
