"""Seed 000's consensus arithmetic on the panel's judgements: per-tool averages, per-model scores, the lowest-first blend,
High/Medium/Low consensus and the ×0.90, per-tool ambiguity and the Ambiguous Schemas flag; which judgements count."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.judging import consensus_level, corroborated_directives, current_judgements, panel_consensus, text_hash
from pipeline.models import Judgement
from pipeline.score import scoreboard
from pipeline.score.facts import Facts
from pipeline.score.flags import ambiguous_schemas, prompt_injection
from pipeline.score.scoreboard_interpretability import interpretability_consensus
from tests.support import NOW, probe, server

TOOLS = [{"name": f"t{i}", "description": f"Tool {i} does a thing.", "inputSchema": {"type": "object"}} for i in range(3)]


def judgement(tool: dict, model: str, c: float, i: float, f: float, **more) -> Judgement:
    return Judgement(server_id="s", tool_name=tool["name"], tool_hash=text_hash(tool), provider="openai", model=model, offline=False,
                     judged_at=NOW, clarity=c, input_completeness=i, confidence=f, **{"prompt_version": "tool-judge-1", **more})


def flat(model_scores: dict[str, float], tools=TOOLS) -> list[Judgement]:
    """Every tool read by each model with all three dimensions at its score."""
    return [judgement(t, m, s, s, s) for m, s in model_scores.items() for t in tools]


@pytest.mark.parametrize("scores,value,level", [
    ({"a": 80}, None, None),
    ({"a": 90, "b": 70}, 0.6 * 70 + 0.4 * 90, "Medium"),
    ({"a": 90, "b": 80, "c": 85}, 0.5 * 80 + 0.3 * 85 + 0.2 * 90, "High"),
    ({"a": 70, "b": 80, "c": 75}, 0.5 * 70 + 0.3 * 75 + 0.2 * 80, "High"),  # spread exactly 10
    ({"a": 60, "b": 85, "c": 70}, 0.5 * 60 + 0.3 * 70 + 0.2 * 85, "Medium"),  # spread exactly 25: no penalty
    ({"a": 60, "b": 86, "c": 70}, (0.5 * 60 + 0.3 * 70 + 0.2 * 86) * 0.90, "Low"),  # 26: ×0.90
    ({"a": 40, "b": 90}, (0.6 * 40 + 0.4 * 90) * 0.90, "Low"),
])
def test_the_blend_and_the_consensus_levels(scores, value, level):
    consensus = panel_consensus(flat(scores), {t["name"] for t in TOOLS})
    assert consensus.level == level
    assert consensus.value == (pytest.approx(value) if value is not None else None)
    card = interpretability_consensus(Facts(server=server(), now=NOW, probe=probe(tools=TOOLS), judgements=flat(scores)))
    assert card.measured == (value is not None)
    if value is not None:
        assert card.points(100) == pytest.approx(value) and f"{level} consensus" in card.reason
        assert ("x0.90" in card.reason) == (level == "Low")
    else:
        assert "needs 2+ LLM judges" in card.reason


def test_levels_at_their_edges():
    assert [consensus_level(s) for s in (0, 10, 10.01, 25, 25.01)] == [
        ("High", 1.0), ("High", 1.0), ("Medium", 1.0), ("Medium", 1.0), ("Low", 0.90)]


def test_a_model_score_is_the_average_of_its_tool_averages():
    judged = [judgement(TOOLS[0], "a", 90, 60, 30), judgement(TOOLS[1], "a", 100, 100, 100), judgement(TOOLS[2], "a", 0, 30, 60),
              *[judgement(t, "b", 60, 60, 60) for t in TOOLS]]
    consensus = panel_consensus(judged, {t["name"] for t in TOOLS})
    assert consensus.models == {"a": pytest.approx((60 + 100 + 30) / 3), "b": 60}


def test_a_model_that_has_not_read_every_tool_is_not_counted_yet():
    judged = flat({"a": 80, "b": 70}) + [judgement(TOOLS[0], "c", 10, 10, 10)]
    consensus = panel_consensus(judged, {t["name"] for t in TOOLS})
    assert set(consensus.models) == {"a", "b"} and consensus.partial == {"c": 1}
    assert "c read 1/3 tools" in consensus.detail()


def facts_with(judged: list[Judgement], tools=TOOLS) -> Facts:
    return Facts(server=server(), now=NOW, probe=probe(tools=tools), judgements=judged)


@pytest.mark.parametrize("apart,ambiguous", [(25, False), (26, True)])
def test_ambiguity_needs_more_than_25_points_on_one_dimension(apart, ambiguous):
    judged = [judgement(TOOLS[0], "a", 50, 80, 80), judgement(TOOLS[0], "b", 50 + apart, 80, 80),
              judgement(TOOLS[1], "a", 80, 50, 80), judgement(TOOLS[1], "b", 80, 50 + apart, 80)]
    fired = ambiguous_schemas(facts_with(judged))
    assert (fired is not None) == ambiguous
    if ambiguous:
        assert fired == "2 ambiguous tools: t0, t1"


def test_one_ambiguous_tool_does_not_flag_and_the_offline_judge_never_makes_one():
    judged = [judgement(TOOLS[0], "a", 10, 80, 80), judgement(TOOLS[0], "b", 90, 80, 80),
              judgement(TOOLS[1], "a", 80, 80, 80), judgement(TOOLS[1], "offline-heuristic-1", 0, 0, 0).model_copy(update={"offline": True})]
    assert ambiguous_schemas(facts_with(judged)) is None
    card = scoreboard.SCOREBOARD.score(facts_with(judged))
    assert "ambiguous_schemas" not in {f.name for f in card.flags}


def test_what_counts_the_current_text_a_panel_model_and_its_newest_reading():
    old = judgement(TOOLS[0], "a", 10, 10, 10, prompt_version="tool-judge-0")
    newer = judgement(TOOLS[0], "a", 90, 90, 90).model_copy(update={"judged_at": NOW + timedelta(days=1)})
    retired = judgement(TOOLS[0], "b", 50, 50, 50, retired=True)
    changed = judgement({**TOOLS[0], "description": "it changed"}, "c", 50, 50, 50)
    assert current_judgements([old, newer, retired, changed], TOOLS) == [newer]
    assert current_judgements([old, retired, changed], TOOLS) == [old]  # until the newer prompt has read it, the old reading counts


def test_a_directive_condemns_only_when_most_judges_and_two_at_least_report_it():
    one = [judgement(TOOLS[0], "a", 80, 80, 80, directive=True), judgement(TOOLS[0], "b", 80, 80, 80, directive=False),
           judgement(TOOLS[0], "c", 80, 80, 80, directive=False)]
    assert corroborated_directives(one) == {} and prompt_injection(facts_with(one)) is None
    two = [one[0], one[1].model_copy(update={"directive": True}), one[2]]
    assert corroborated_directives(two) == {"t0": ["a", "b"]}
    assert prompt_injection(facts_with(two)) == "t0: judged directive by a, b"
