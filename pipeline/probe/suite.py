"""The deep probe's check suite, run in one SDK session: ping, every list, schema validity, the tool text,
MCP Apps views, and the tool exercise (pipeline.probe.exercise). A session that keeps timing out is asked
nothing more.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import jsonschema
from mcp import Client

from pipeline.models import AppsFacts, CheckResult, EraFacts, ProbeOutcome, ProbeResult
from pipeline.probe.exercise import check_unknown_tool, exercise_tools
from pipeline.probe.listing import Listing, list_all
from pipeline.probe.session import classify, dump
from pipeline.probe.tooltext import tool_label, tool_text_checks


def _listed(noun: str) -> Callable[[Listing], tuple[bool, str]]:
    """A list that came back passes, with what was wrong with it (a loop, items the SDK objected to) in its detail:
    the items themselves are judged by the checks that follow."""
    return lambda listing: (True, listing.summary(noun))


def schema_validity(tools: list[dict[str, Any]]) -> CheckResult:
    """Each tool's schemas judged on their own: every invalid one is named, by the tool's name or its place in the list."""
    invalid = [(tool_label(tool, index), problems) for index, tool in enumerate(tools) if (problems := schema_problems(tool))]
    return CheckResult(name="schema_validity", outcome=f"{len(invalid)} of {len(tools)} invalid" if invalid else "valid", passed=not invalid,
                       detail="; ".join(f"{label}: {', '.join(p)}" for label, p in invalid)[:2000] or None)


def schema_problems(tool: dict[str, Any]) -> list[str]:
    """Why a tool's schemas are not valid object JSON Schemas (empty when they are)."""
    problems = []
    for key in ("inputSchema", "outputSchema"):
        schema = tool.get(key)
        if schema is None:
            if key == "inputSchema":
                problems.append("inputSchema missing")
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"{key} is not an object schema")
            continue
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            problems.append(f"{key} invalid: {exc.message[:200]}")
    return problems


async def run_checks(result: ProbeResult, client: Client) -> None:
    caps = result.capabilities or {}
    checks = result.checks

    if result.era == "legacy":
        await _check(checks, "ping", lambda: client.session.send_ping(), lambda _: (True, "pong"))
        if checks[-1].passed:
            result.ping_ms = checks[-1].ms

    async def tools() -> Listing:
        listing = await list_all(client, "tools/list", lambda cursor: client.list_tools(cursor=cursor))
        result.tools = listing.items
        if result.era == "modern":  # seed 003's list-cache hint, as the session saw it (stdio has no raw list)
            result.eras = EraFacts(list_cache_hints=any("ttlMs" in page for page in listing.pages))
        return listing

    await _check(checks, "tools/list", tools, _listed("tools"))
    others = (("resources/list", "resources", "resources", client.list_resources),
              ("resources/templates/list", "resource_templates", "resource templates", client.list_resource_templates),
              ("prompts/list", "prompts", "prompts", client.list_prompts))
    for method, field, noun, fetch in others:
        if method.split("/")[0] not in caps or _busy(result):
            continue

        async def listed(method: str = method, field: str = field, fetch: Callable[..., Any] = fetch) -> Listing:
            listing = await list_all(client, method, lambda cursor: fetch(cursor=cursor))
            setattr(result, field, listing.items)
            return listing

        await _check(checks, method, listed, _listed(noun))

    if result.tools is not None:
        checks.append(schema_validity(result.tools))
    if result.tools is not None:
        checks.extend(tool_text_checks(result.tools, result.instructions))
    if not _busy(result):
        await check_unknown_tool(checks, client, result.tools)
    if result.tools and not _busy(result):
        await _check_apps(result, client)
    if result.tools and not _busy(result):
        await exercise_tools(result, client)


MAX_TIMEOUTS = 2


def _busy(result: ProbeResult) -> bool:
    """Has the session timed out often enough that nothing more should be asked of it? Over the legacy era a request
    that timed out keeps its connection until the server answers; from the second on, the remaining checks are not
    run (and the tool exercise stops at its own first timeout), so the SDK's connection pool never runs dry mid-probe."""
    timeouts = sum(1 for c in result.checks if c.outcome == "timeout") + sum(1 for i in result.invocations or [] if i.outcome == "timeout")
    return timeouts >= MAX_TIMEOUTS


MAX_VIEWS = 10


def ui_views(tools: list[dict[str, Any]]) -> list[str]:
    """The ui:// views tools link to (MCP Apps: `_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`)."""
    views: list[str] = []
    for tool in tools:
        meta = tool.get("_meta") if isinstance(tool.get("_meta"), dict) else {}
        ui = meta.get("ui") if isinstance(meta.get("ui"), dict) else {}
        for uri in (ui.get("resourceUri"), meta.get("ui/resourceUri")):
            if isinstance(uri, str) and uri.startswith("ui://") and uri not in views:
                views.append(uri)
    return views


async def _check_apps(result: ProbeResult, client: Client) -> None:
    """Seed 001 MCP Apps: each linked ui:// view is read (reading is safe) for its MIME type and CSP metadata."""
    views = ui_views(result.tools or [])
    if not views:
        return
    listed = {r.get("uri"): r for r in result.resources or [] if isinstance(r, dict)}
    apps = AppsFacts(views=len(views))
    problems = []
    timed_out = False
    for uri in views[:MAX_VIEWS]:
        try:
            contents = dump(await client.read_resource(uri)).get("contents") or []
        except Exception as exc:  # noqa: BLE001 - an unreadable view is the finding
            problems.append(f"{uri}: {type(exc).__name__}: {exc}"[:200])
            if classify(exc, connected=True)[0] == ProbeOutcome.timeout:
                timed_out = True
                break  # the session may still be busy with it: the other views are not asked for
            continue
        if not contents:
            problems.append(f"{uri}: no contents")
            continue
        apps.readable += 1
        first = contents[0]
        if str(first.get("mimeType") or listed.get(uri, {}).get("mimeType") or "").lower().startswith("text/html"):
            apps.html_mime += 1
        metas = [first.get("_meta"), listed.get(uri, {}).get("_meta")]
        if any(isinstance(m, dict) and isinstance(m.get("ui"), dict) and "csp" in m["ui"] for m in metas):
            apps.csp += 1
    result.apps = apps
    result.checks.append(CheckResult(name="mcp_apps", outcome="timeout" if timed_out else f"{apps.readable}/{apps.views} readable",
                                     passed=apps.readable == apps.views, detail="; ".join(problems) or None))

async def _check(checks: list[CheckResult], name: str, call, judge) -> None:
    started = time.perf_counter()
    try:
        value = await call()
        passed, detail = judge(value)
        outcome = "ok" if passed else "failed"
    except Exception as exc:  # noqa: BLE001
        outcome, detail = classify(exc, connected=True)
        outcome, passed = outcome.value, False
    checks.append(CheckResult(name=name, outcome=outcome, passed=passed, detail=detail, ms=(time.perf_counter() - started) * 1000))
