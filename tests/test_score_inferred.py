"""Seed 000's Source Code Inference Fallback: Protocol Compliance from the analysis' inferred signals when no live
probe data exists; a probe that reached the server always wins."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.inference import infer_protocol
from pipeline.models import ExtractedTool, HttpFacts, ProbeOutcome
from pipeline.score import scoreboard
from pipeline.score.facts import Facts
from tests.support import NOW, analysis, dims, probe, server

SOURCE = '''
from mcp.server.fastmcp import FastMCP
from mcp.server.auth.settings import AuthSettings
mcp = FastMCP("acme", auth=AuthSettings(issuer_url="https://auth.acme.dev", resource_server_url="https://mcp.acme.dev/mcp"))

@mcp.tool()
async def lookup(city: str) -> str:
    if not isinstance(city, str) or len(city) > 100:
        raise ValueError("city must be a short string")
    try:
        return await fetch(city, timeout=10)
    except Exception:
        logger.exception("lookup failed")
        raise
'''
TOOLS = [ExtractedTool(name="lookup", input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                       file="server.py", line=6, language="python", pattern="fastmcp-decorator"),
         ExtractedTool(name="broken", input_schema={"type": "string"}, file="server.py", line=20, language="python", pattern="fastmcp-decorator")]
PROTOCOL = ("reachability", "schema_validity", "error_handling", "fuzz_resilience", "invocation_smoke_test", "auth_discovery_bonus")


def inferred_analysis(text: str = SOURCE, tools=TOOLS, age_days: float = 0):
    result = analysis()
    result.analyzed_at = NOW - timedelta(days=age_days)
    result.metrics["source_inference"] = infer_protocol([SourceFile(path="server.py", text=text, language="python")], tools)
    return result


def card_of(probe_result=None, analysed=None, **server_fields):
    facts = Facts(server=server(**server_fields), now=NOW, probe=probe_result, probe_ref="probe_runs:1" if probe_result else None,
                  analysis=analysed or inferred_analysis(), analysis_ref="analyses:7")
    card = scoreboard.SCOREBOARD.score(facts)
    return card, {r.rule: r for r in card.rules}


def test_source_only_server_gets_protocol_compliance_from_inference():
    card, rules = card_of()
    signals = inferred_analysis().metrics["source_inference"]
    assert not rules["reachability"].measured and not rules["invocation_smoke_test"].measured  # nothing ran
    for name in ("schema_validity", "error_handling", "fuzz_resilience", "auth_discovery_bonus"):
        assert rules[name].measured and rules[name].reason.startswith("inferred from source"), name
        assert rules[name].evidence == "analyses:7"
    assert rules["error_handling"].points == pytest.approx(20 * signals["error_handling"]["value"] / 100)
    assert rules["fuzz_resilience"].points == pytest.approx(20 * signals["fuzz"]["value"] / 100)
    assert rules["schema_validity"].points == pytest.approx(10)  # 1 of 2 extracted tools valid
    assert "broken" in rules["schema_validity"].how_to_gain
    assert rules["auth_discovery_bonus"].points == 10
    assert "server.py:" in rules["error_handling"].reason
    protocol = dims(card)["protocol_compliance"]
    assert protocol.status == "scored"
    # (10 + 20·eh + 20·fuzz) over the 60 measured points, +10 bonus
    expected = 100 * (10 + 0.2 * signals["error_handling"]["value"] + 0.2 * signals["fuzz"]["value"]) / 60 + 10
    assert protocol.score == pytest.approx(min(100, expected))
    assert card.visibility == "assessed"  # every applicable dimension scored, none from a live probe


def test_without_inference_the_dimension_does_not_apply():
    card, rules = card_of(analysed=analysis())
    # seed 000: no probe data and no inferred signals is the "Base (3 dims)" case, a local server Assessed 3/3
    assert dims(card)["protocol_compliance"].status == "not_applicable"
    assert card.visibility == "assessed" and card.dimension_indicator == "3/3"
    assert not any(name in rules for name in PROTOCOL)  # the rules of a dimension that does not apply are not run


def test_code_that_is_not_a_server_infers_nothing():
    card, rules = card_of(analysed=inferred_analysis("def add(a, b):\n    return a + b\n", tools=None))
    assert dims(card)["protocol_compliance"].status == "not_applicable"  # nothing inferred, no probe: the dimension does not apply
    assert not any(name in rules for name in ("error_handling", "fuzz_resilience", "schema_validity"))


@pytest.mark.parametrize("outcome", [ProbeOutcome.start_failed, ProbeOutcome.install_failed, ProbeOutcome.unreachable,
                                     ProbeOutcome.crashed_on_start, ProbeOutcome.needs_external_service])
def test_a_probe_without_protocol_data_falls_back_to_inference(outcome):
    failed = probe(outcome=outcome, checks=[])
    failed.kind = "sandbox"
    _, rules = card_of(failed)
    assert rules["error_handling"].reason.startswith("inferred from source")
    assert rules["fuzz_resilience"].reason.startswith("inferred from source")
    assert rules["schema_validity"].reason.startswith("inferred from source")
    assert not rules["invocation_smoke_test"].measured


def test_live_probe_data_always_wins():
    live = probe()
    live.http = HttpFacts(auth_required=True, protected_resource_metadata=False)
    _, rules = card_of(live)
    assert rules["error_handling"].evidence == "probe_runs:1" and rules["error_handling"].points == 20
    assert not rules["fuzz_resilience"].measured  # the live probe ran no fuzz case: not replaced by a guess
    assert rules["schema_validity"].evidence == "probe_runs:1"
    assert rules["auth_discovery_bonus"].points == 0 and "inferred" not in rules["auth_discovery_bonus"].reason


def test_inferred_points_decay_with_the_analysis():
    _, fresh = card_of(analysed=inferred_analysis())
    _, old = card_of(analysed=inferred_analysis(age_days=45))
    assert old["error_handling"].points == pytest.approx(fresh["error_handling"].points * 0.75)
    assert old["schema_validity"].points == pytest.approx(fresh["schema_validity"].points * 0.75)
    assert "×0.75" in old["fuzz_resilience"].reason


def test_inferred_auth_without_metadata_earns_no_bonus_and_says_how():
    bearer = "from mcp.server.lowlevel import Server\nif request.headers.get('Authorization') != expected:\n    return 401\n"
    _, rules = card_of(analysed=inferred_analysis(bearer, tools=None))
    assert rules["auth_discovery_bonus"].points == 0 and "oauth-protected-resource" in rules["auth_discovery_bonus"].how_to_gain
    _, none = card_of(analysed=inferred_analysis("from mcp.server.lowlevel import Server\n", tools=None))
    assert none["auth_discovery_bonus"].reason.startswith("no authentication required")
