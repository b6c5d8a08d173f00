"""The official MCP conformance suite's client scenarios, run against `scoreboard probe` (Node 22 and the suite
come from npm into the cache on first use; bench/conformance.py prints the same figures).

A prober is a client with restraint: it must pass the scenarios about meeting a server (initialize, SSE
reconnection, OAuth discovery) and must fail, by never making the request, the checks that want it to call a
tool that may mutate or to register with an authorization server and ask for tokens.
"""

from __future__ import annotations

import shutil

import pytest

from bench.conformance import run_all

DISCOVERY = {"prm-pathbased-requested", "authorization-server-metadata"}
NEVER_MADE = {"client-registration", "authorization-request", "token-request"}  # an OAuth flow is not ours to start


@pytest.fixture(scope="module")
def outcomes(settings):
    if shutil.which("npm") is None:
        pytest.skip("npm is needed to fetch Node 22 and the conformance suite")
    scenarios = ["initialize", "sse-retry", "tools_call", "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var3",
                 "auth/2025-03-26-oauth-metadata-backcompat"]
    results = run_all(scenarios, settings.cache_dir / "conformance")
    return {scenario: {name: status for name, status, _ in checks} for scenario, checks in results.items()}


def test_initialize_and_sse_reconnection_pass(outcomes):
    assert outcomes["initialize"] and set(outcomes["initialize"].values()) == {"SUCCESS"}
    assert outcomes["sse-retry"] == {"client-sse-graceful-reconnect": "SUCCESS", "client-sse-retry-timing": "SUCCESS",
                                     "client-sse-last-event-id": "SUCCESS"}


@pytest.mark.parametrize("scenario", ["auth/metadata-default", "auth/metadata-var1", "auth/metadata-var3"])
def test_oauth_metadata_is_discovered_and_no_oauth_flow_is_started(outcomes, scenario):
    checks = outcomes[scenario]
    assert {name: checks.get(name) for name in DISCOVERY} == dict.fromkeys(DISCOVERY, "SUCCESS")
    assert {name: checks.get(name) for name in NEVER_MADE} == dict.fromkeys(NEVER_MADE, "FAILURE")


def test_the_2025_03_26_fallback_reads_metadata_at_the_servers_origin(outcomes):
    checks = outcomes["auth/2025-03-26-oauth-metadata-backcompat"]
    assert checks.get("authorization-server-metadata") == "SUCCESS"
    assert {name: checks.get(name) for name in NEVER_MADE} == dict.fromkeys(NEVER_MADE, "FAILURE")


def test_a_tool_that_is_not_read_only_is_never_called(outcomes):
    # The scenario asks the client to call add_numbers, which carries no read-only annotation: the prober must not.
    assert outcomes["tools_call"] == {"tool-add-numbers": "FAILURE"}
