"""A 429 in the middle of the SDK session (after the raw negotiation answered) ends the probe there: nothing more
reaches the server (no list, no tool call, no stream, no closing DELETE), the probe is `rate_limited` with the wait the
server asked for, what the session had found stands, and `scoreboard probe` exits with the rate-limited code."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone

import anyio
import pytest

from pipeline.models import ProbeOutcome
from pipeline.probe.deep import deep_probe
from pipeline.probe.raw import Limits
from pipeline.probe.sandbox import Running
from tests.servers.late_limit import serving
from tests.support import REPO

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def after_the_429(requests: list[str], method: str = "tools/list", answered: int = 0) -> list[str]:
    """What reached the server after the 429 (to the first `method` after the `answered` ones)."""
    asked = [i for i, r in enumerate(requests) if r.endswith(f" {method}")]
    assert len(asked) == answered + 1, requests  # the session asked once, and was answered 429
    return requests[asked[-1] + 1:]


def probe(transport: str, limited: str = "tools/list"):
    with serving(transport, limited) as (url, server):
        started = time.monotonic()
        result = anyio.run(lambda: deep_probe("late", Running(transport=transport, url=url), limits=Limits(timeout=8, allow_private=True),
                                              total_timeout=15, now=NOW))
        took = time.monotonic() - started
        time.sleep(0.3)  # anything the closing session might still send has arrived by now
        return result, took, list(server.requests)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_429_mid_session_ends_the_probe_and_nothing_more_reaches_the_server(transport):
    result, took, requests = probe(transport)
    assert result.outcome is ProbeOutcome.rate_limited and result.retry_after_s == 120, (result.outcome, result.detail)
    assert "HTTP 429 to tools/list" in result.detail and "Retry-After: 120" in result.detail
    assert after_the_429(requests) == [], requests  # no tools/call, no other list, no GET, no DELETE
    if transport == "streamable-http":
        assert any(r.startswith("POST /mcp") for r in requests[:-1])  # the session did reach the server before
    # What was found before the 429 stands; what was not asked is not measured.
    assert result.era == "legacy" and result.server_info["name"] == "late-limit" and result.transport == transport
    checks = {c.name: c for c in result.checks}
    assert checks["era_negotiation"].outcome == "legacy" and checks["ping"].outcome == "ok"
    assert "tools/list" not in checks and result.tools is None and not result.invocations
    assert checks["skipped"].passed is None and "HTTP 429 to tools/list" in checks["skipped"].detail
    assert took < 5, took  # the 429 ends it at once, not after the call timeout (8 s)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_429_to_the_sessions_own_handshake_is_rate_limited_too(transport):
    """The raw negotiation's `initialize` is answered, the SDK session's gets 429: nothing is asked after it."""
    result, took, requests = probe(transport, limited="initialize")
    assert result.outcome is ProbeOutcome.rate_limited and result.retry_after_s == 120, (result.outcome, result.detail)
    assert "HTTP 429 to initialize" in result.detail and took < 5  # at once, not after the call timeout (8 s)
    assert after_the_429(requests, "initialize", answered=1) == [], requests  # no notifications/initialized, no list, no DELETE
    checks = {c.name: c for c in result.checks}
    assert checks["era_negotiation"].outcome == "legacy" and result.era is None and result.tools is None
    assert checks["skipped"].passed is None and "HTTP 429 to initialize" in checks["skipped"].detail


def test_scoreboard_probe_exits_rate_limited_after_a_429_mid_session():
    with serving("streamable-http") as (url, server):
        done = subprocess.run([sys.executable, "-m", "pipeline.cli", "probe", url, "--json", "--timeout", "3"], capture_output=True, text=True,
                              cwd=REPO, timeout=120)
        time.sleep(0.3)
        requests = list(server.requests)
    seen = json.loads(done.stdout)
    assert done.returncode == 7, (done.returncode, done.stderr)
    assert seen["outcome"] == "rate_limited" and seen["retry_after_s"] == 120
    assert after_the_429(requests) == [], requests
