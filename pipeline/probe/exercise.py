"""Calls to a server's tools (seeds 000, 003): a tool that does not exist, the invocation smoke test, bad
arguments and fuzz cases, only ever on tools that are safe to call (pipeline.probe.invoke).
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult
from pydantic import ValidationError

from pipeline.models import CheckResult, FuzzCase, Invocation, ProbeResult
from pipeline.probe.invoke import call_plans, functional, fuzz_cases, given_by_schema, missing_required, wrong_type
from pipeline.probe.session import connection_closed, dump

UNKNOWN_TOOL = "scoreboard_probe_no_such_tool"
MAX_INVOKED = 8  # safe tools called once each (invocation smoke test)
MAX_FUZZED = 2  # safe tools sent seed 000's fuzz cases


# Errors the SDK's HTTP transport makes up when the server sent no JSON-RPC error: an HTTP 5xx, a body it could not
# parse (or our byte cap stopped), a stream that ended without an answer, a wrong content type. The server did not
# handle the request with an error of its own, so these never count as "handled".
_STAND_INS = ("Server returned an error response", "Failed to parse JSON response", "SSE stream", "Unexpected content type")


def _stand_in(exc: MCPError) -> bool:
    return exc.message.startswith(_STAND_INS)


RESERVE = 1.0  # seconds of the probe's time kept back from a call, so a call that hangs is recorded as that call's timeout


def _time_left() -> float:
    """Seconds until the probe's deadline (the session runs under one), less the reserve; infinite outside a deadline."""
    return anyio.current_effective_deadline() - anyio.current_time() - RESERVE


def _call_timeout(client: Client) -> float | None:
    """A call waits the session's read timeout, or less when the probe's budget would end first: a server that never
    answers a call is then that call's timeout, not a probe cut short with the call unrecorded."""
    left = _time_left()
    if math.isinf(left):
        return client.read_timeout_seconds
    return max(0.1, left if client.read_timeout_seconds is None else min(client.read_timeout_seconds, left))


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[str, Any, float]:
    """("ok" | "is_error" | "jsonrpc_error" | "timeout" | "crash", the result dict or the error text, ms)."""
    started = time.perf_counter()
    try:
        # Sent as a plain request: the SDK's call_tool would check the result against the tool's outputSchema with
        # Python's `re`, which a hostile pattern can stall for ever; functional() checks it with bounded patterns.
        reply = await client.session.send_request(CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments)), CallToolResult,
                                                  request_read_timeout_seconds=_call_timeout(client))
        payload = dump(reply)
        outcome = "is_error" if reply.is_error else "ok"
    except MCPError as exc:
        payload = f"{exc.code}: {exc.message}"[:500]
        outcome = ("timeout" if "timed out" in exc.message else "crash" if connection_closed(exc) or _stand_in(exc) else "jsonrpc_error")
    except (RuntimeError, ValidationError) as exc:  # a result that is not a CallToolResult of the negotiated version
        payload, outcome = f"{type(exc).__name__}: {exc}"[:500], "invalid_result"
    except Exception as exc:  # noqa: BLE001 - the session itself broke
        payload, outcome = f"{type(exc).__name__}: {exc}"[:500], "crash"
    if outcome == "timeout" and not await _alive(client):
        # A server that died mid-call leaves the SDK waiting out its read timeout: a timeout, then a dead session, is a crash.
        outcome, payload = "crash", f"{payload}; the server was gone afterwards"
    return outcome, payload, (time.perf_counter() - started) * 1000


async def _alive(client: Client) -> bool:
    """Does the session still answer at all? (A timeout again, or no time left to ask, is not proof of death.)"""
    try:
        with anyio.move_on_after(max(0.1, _time_left() + RESERVE / 2)):
            await client.list_tools()
    except MCPError as exc:
        return not connection_closed(exc)
    except Exception:  # noqa: BLE001 - closed streams and broken pipes: gone
        return False
    return True


async def exercise_tools(result: ProbeResult, client: Client) -> None:
    """Seed 000/003 invocation smoke test, functional outcome, error handling with bad arguments, and fuzzing,
    only ever on tools that are read-only by annotation and by name (pipeline.probe.invoke)."""
    plans = call_plans(result.tools or [])
    result.invocations = []
    for tool, arguments in plans[:MAX_INVOKED]:
        outcome, payload, ms = await _call(client, tool["name"], arguments)
        works, why = functional(payload, tool.get("outputSchema")) if outcome == "ok" else (False, str(payload)[:200])
        given = given_by_schema(tool.get("inputSchema"), arguments)
        shown = "ok" if outcome in ("ok", "invalid_result") else "rejected_input" if not given and _domain_error(outcome, payload) else outcome
        if shown == "rejected_input" and isinstance(payload, dict):
            why = _first_text(payload) or why
        result.invocations.append(Invocation(tool=tool["name"], outcome=shown, functional=works if shown == "ok" else None, ms=ms,
                                             detail=why[:300], arguments="schema" if given else "made_up"))
        if outcome in ("crash", "timeout"):
            return  # the session is gone, or may still be busy with that call: nothing more is asked of it
    with_required = next(((t, a) for t, a in plans if missing_required(t.get("inputSchema") or {}, a) is not None), None)
    if with_required is not None:
        tool, arguments = with_required
        schema = tool.get("inputSchema") or {}
        for name, bad in (("error_missing_parameter", missing_required(schema, arguments)), ("error_wrong_type", wrong_type(schema, arguments))):
            if bad is None:
                continue
            outcome, payload, ms = await _call(client, tool["name"], bad)
            handled = outcome in ("jsonrpc_error", "is_error")
            result.checks.append(CheckResult(name=name, outcome=outcome if outcome != "ok" else "accepted", passed=handled,
                                             detail=f"{tool['name']}: {str(payload)[:300]}", ms=ms))
            if outcome in ("crash", "timeout"):
                return
    result.fuzz = []
    for tool, arguments in plans[:MAX_FUZZED]:
        for case, bad in fuzz_cases(tool.get("inputSchema") or {}, arguments):
            outcome, _, _ = await _call(client, tool["name"], bad)
            verdict = {"jsonrpc_error": "proper_error", "is_error": "proper_error", "timeout": "timeout", "crash": "crash"}.get(outcome, "accepted")
            result.fuzz.append(FuzzCase(tool=tool["name"], case=case, outcome=verdict))
            if outcome in ("crash", "timeout"):
                return

# JSON-RPC errors that say the exchange itself failed (parse error, invalid request, method not found, internal error):
# never a tool's answer to its input. Any other code (invalid params, an application's own) is the tool's domain error.
PROTOCOL_FAILURES = (-32700, -32600, -32601, -32603)


def _domain_error(outcome: str, payload: Any) -> bool:
    """The tool's own refusal of its input: an isError result, or a JSON-RPC error that is no protocol failure."""
    if outcome == "is_error":
        return True
    if outcome != "jsonrpc_error":
        return False
    code = str(payload).split(":", 1)[0].strip()
    return code.lstrip("-").isdigit() and int(code) not in PROTOCOL_FAILURES


async def check_unknown_tool(checks: list[CheckResult], client: Client, listed: list[dict[str, Any]] | None) -> None:
    """Seed 000 error handling: calling a tool that does not exist must yield an error, not a crash.

    Safe: no server tool runs (the name is one the server did not list). JSON-RPC error and isError result both
    count as handled."""
    names = {t.get("name") for t in listed or [] if isinstance(t.get("name"), str)}
    name = UNKNOWN_TOOL
    while name in names:
        name += "_"
    outcome, payload, ms = await _call(client, name, {})
    shown = {"ok": "accepted", "is_error": "is_error_result", "invalid_result": "accepted"}.get(outcome, outcome)
    detail = _first_text(payload) if isinstance(payload, dict) else str(payload)[:500]
    checks.append(CheckResult(name="error_unknown_tool", outcome=shown, passed=outcome in ("is_error", "jsonrpc_error"), detail=detail, ms=ms))


def _first_text(reply: dict[str, Any]) -> str | None:
    for block in reply.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        if text:
            return text[:500]
    return None
