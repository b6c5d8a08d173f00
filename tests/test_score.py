"""The first headline composite: weights, renormalisation, grades, latency curve, visibility."""

from __future__ import annotations

import pytest

from pipeline.models import EnvVar, ProbeOutcome
from pipeline.score import scoreboard
from pipeline.score.facts import Facts, Rollup
from tests.support import CATALOG_SIZE, NOW, analysis, dims, probe, server


@pytest.mark.parametrize("score,grade", [(100, "A+"), (95, "A+"), (94.99, "A"), (85, "A"), (84.9, "B"), (70, "B"), (69.9, "C"), (55, "C"),
                                         (54.9, "D"), (40, "D"), (39.9, "F"), (0, "F")])
def test_grade_boundaries(score, grade):
    assert scoreboard.SCOREBOARD.grade(score) == grade


@pytest.mark.parametrize("ms,expected", [(50, 100), (100, 100), (150, 95), (200, 90), (350, 80), (500, 70), (1000, 50), (1500, 37.5), (2000, 25),
                                         (3500, 17.5), (5000, 10), (60000, 10)])
def test_latency_curve(ms, expected):
    assert scoreboard.latency_score(ms) == pytest.approx(expected)


def test_local_server_with_probe_and_analysis_is_verified_four_of_four():
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(), analysis=analysis()))
    d = dims(card)
    assert d["reliability"].status == "not_applicable"
    assert d["schema_interpretability"].status == "pending"
    assert card.visibility == "verified" and card.dimension_indicator == "4/4"
    assert d["schema_quality"].score == 100.0  # complete runtime schema, perfect description
    assert d["protocol_compliance"].score == 100.0  # three measured components, all passed
    # docs: documentation 30 + dependency 15×0.3 + license 15, over the 60 measured points
    assert d["docs_maintenance"].score == pytest.approx(100 * (30 + 4.5 + 15) / 60, abs=0.05)
    assert d["security_hygiene"].score == pytest.approx(20 + 15 + 15 + 15 + 17.5)
    weights = {"schema_quality": 25, "protocol_compliance": 20, "docs_maintenance": 15, "security_hygiene": 20}
    expected = sum(d[k].score * w for k, w in weights.items()) / 80
    assert card.composite == pytest.approx(expected, abs=0.05)
    assert d["schema_quality"].weight == pytest.approx(25 / 80)
    assert card.grade == scoreboard.SCOREBOARD.grade(card.composite)


def test_renormalisation_three_dimensions_matches_the_seed_column():
    # seed 000 "Base (3 dims)": schema ~42%, docs ~25%, security ~33%
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=None, analysis=analysis()))
    d = dims(card)
    assert d["protocol_compliance"].status == "not_applicable"  # no probe data, no signals inferred from source
    weights = (d["schema_quality"].weight, d["docs_maintenance"].weight, d["security_hygiene"].weight)
    assert weights == pytest.approx((25 / 60, 15 / 60, 20 / 60), abs=1e-4)
    assert card.visibility == "assessed" and card.dimension_indicator == "3/3"


def test_unreachable_server_scores_zero_protocol_and_names_the_outcome():
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(outcome=ProbeOutcome.timeout, checks=[]), analysis=analysis()))
    rule = next(r for r in card.rules if r.rule == "reachability")
    assert rule.points == 0 and "timeout" in rule.reason and rule.how_to_gain
    assert dims(card)["protocol_compliance"].score == 0
    assert card.visibility == "assessed"  # every applicable dimension scored, but no live data


def test_under_two_dimensions_is_unscored():
    remote = server(launch=None, transport="streamable-http", remote_url="https://example.com/mcp", repository=None)
    card = scoreboard.SCOREBOARD.score(Facts(server=remote, now=NOW))
    assert card.composite is None and card.grade is None and card.visibility == "unscored"
    assert dims(card)["reliability"].status == "not_applicable"  # no monitoring history yet


def test_template_description_costs_fifteen_points():
    good = scoreboard.SCOREBOARD.score(Facts(server=server(description="Reads clocks."), now=NOW, probe=probe(), analysis=analysis()))
    bad = scoreboard.SCOREBOARD.score(Facts(server=server(description="A Model Context Protocol server"), now=NOW, probe=probe(),
                                            analysis=analysis()))
    assert dims(good)["schema_quality"].score - dims(bad)["schema_quality"].score == pytest.approx(15)


@pytest.mark.parametrize("text,placeholder", [
    ("A Model Context Protocol server", True), ("an MCP server.", True), ("MCP server for ...", True), ("MCP Server for Slack", True),
    ("Add your description here", True), ("TODO: add description", True),
    ("MCP server for enabling memory for Claude through a knowledge graph", False),
    ("A Model Context Protocol server that provides time and timezone conversion", False), ("Reads clocks.", False),
])
def test_template_descriptions_match_whole_placeholders_only(text, placeholder):
    verdict = scoreboard.SCOREBOARD.outcome("template_description", Facts(server=server(description=text), now=NOW))
    assert (verdict.points == -15) is placeholder


def test_secrets_and_credentials():
    envs = [EnvVar(name="API_TOKEN", secret=True), EnvVar(name="DB_PASSWORD", secret=True), EnvVar(name="PORT")]
    card = scoreboard.SCOREBOARD.score(Facts(server=server(env_vars=envs), now=NOW, probe=probe(), analysis=analysis()))
    points = {r.rule: r.points for r in card.rules}
    assert points["secret_env_vars"] == 11 and points["credential_sensitivity"] == 5


def test_reliability_needs_ten_probes_and_uses_70_30_without_p95():
    remote = server(launch=None, transport="streamable-http", remote_url="https://example.com/mcp")
    facts = Facts(server=remote, now=NOW, probe=probe(), analysis=analysis(), fast=Rollup.of(9, 9, [90.0] * 9))
    assert dims(scoreboard.SCOREBOARD.score(facts))["reliability"].status == "not_applicable"  # no monitoring history yet
    facts.fast = Rollup.of(10, 9, [90.0] * 9)
    reliability = dims(scoreboard.SCOREBOARD.score(facts))["reliability"]
    assert reliability.score == pytest.approx(0.7 * 90 + 0.3 * 100)
    facts.fast = Rollup.of(20, 20, [90.0] * 18 + [1000.0] * 2)  # nearest-rank p95 falls in the 1000 ms bucket
    p95 = facts.fast.percentile(0.95)
    assert p95 == pytest.approx(1000, rel=0.03)
    reliability = dims(scoreboard.SCOREBOARD.score(facts))["reliability"]
    assert reliability.score == pytest.approx(60 + 25 + 15 * scoreboard.latency_score(p95) / 100, abs=0.05)


def test_offline_judgements_are_not_counted_as_interpretability():
    from pipeline.judging import text_hash
    from pipeline.models import Judgement

    offline = Judgement(server_id="s", tool_name="get_time", tool_hash=text_hash(probe().tools[0]), provider="offline", model="offline-heuristic-1",
                        offline=True, judged_at=NOW, clarity=90, input_completeness=90, confidence=90)
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(), analysis=analysis(), judgements=[offline]))
    assert dims(card)["schema_interpretability"].status == "pending"
    online = [offline.model_copy(update={"offline": False, "model": m, "clarity": c, "input_completeness": c, "confidence": c})
              for m, c in (("a", 90), ("b", 60), ("c", 80))]
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(), analysis=analysis(), judgements=online))
    assert dims(card)["schema_interpretability"].score == pytest.approx((0.5 * 60 + 0.3 * 80 + 0.2 * 90) * 0.9)
    assert card.visibility == "complete" and card.dimension_indicator == "5/5"


def test_every_rule_is_documented_and_unique():
    rules = scoreboard.SCOREBOARD.rules
    assert len({r.name for r in rules}) == len(rules)
    assert all(r.doc for r in rules)


def test_rescoring_is_deterministic_and_offline(db, tmp_path):
    """The same stored evidence gives the same cards, byte for byte (but for the time of scoring)."""
    import json as _json

    from pipeline import store
    from pipeline.discover import run_discover
    from pipeline.discover.local import LocalCatalogSource
    from pipeline.score import run_score
    from tests.support import quiet

    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    for server_id in ("mcp-server-time", "server-memory"):
        store.record_probe(db, probe().model_copy(update={"server_id": server_id}), None)
        store.record_analysis(db, analysis().model_copy(update={"server_id": server_id}))
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW, progress=quiet(7))
    first = [dict(r) for r in db.query("select * from scores order by server_id, rubric")]
    run_score(db, servers=servers, now=NOW, progress=quiet(7))
    second = [dict(r) for r in db.query("select * from scores order by server_id, rubric")]
    assert first == second and len(first) == 4 * CATALOG_SIZE
    card = next(r for r in first if r["server_id"] == "mcp-server-time" and r["rubric"] == "scoreboard")
    assert _json.loads(card["rules"]) and card["rules_version"] == scoreboard.RULES_VERSION


def test_tools_stored_as_the_server_sent_them_are_judged_and_scored(db):
    """The probe keeps each tool as sent (a non-object schema, no name, a number for a name or description): the judge
    and every rubric read them from the store without failing."""
    from pipeline import store
    from pipeline.discover import run_discover
    from pipeline.discover.local import LocalCatalogSource
    from pipeline.judge import Panel, run_judge
    from pipeline.score import run_score
    from tests.support import TOOL, quiet
    from tests.test_rubrics import ODD_TOOLS

    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    store.record_probe(db, probe(tools=[TOOL, *ODD_TOOLS]).model_copy(update={"server_id": "mcp-server-time"}), None)
    store.record_analysis(db, analysis().model_copy(update={"server_id": "mcp-server-time"}))
    servers = [s for s in store.active_servers(db) if s.id == "mcp-server-time"]
    run_score(db, servers=servers, now=NOW, progress=quiet(1))  # the judge waits for Assessed visibility
    judged = run_judge(db, servers=servers, panel=Panel.offline(), now=NOW, progress=quiet(1))
    assert judged.counts["judged"] == 1 + len(ODD_TOOLS)
    run_score(db, servers=servers, now=NOW, progress=quiet(1))
    assert db.execute("select count(*) from scores where server_id = 'mcp-server-time'").fetchone()[0] == 4
