"""The `scoreboard` rubric's Schema Interpretability dimension (seed 000): LLM judges' consensus on the tools."""

from __future__ import annotations

from pipeline.judging import panel_consensus
from pipeline.score.engine import Outcome, RuleSet, percent, unmeasured
from pipeline.score.facts import Facts

INTERPRETABILITY_RULES = RuleSet()
rule = INTERPRETABILITY_RULES.rule


@rule("schema_interpretability", 100)
def interpretability_consensus(facts: Facts) -> Outcome:
    """Three-judge consensus on clarity, input completeness, confidence per tool; each model's tool averages averaged; blended
    lowest-first (50/30/20, 60/40); High/Medium/Low consensus by the models' spread (10, 25), ×0.90 when Low (over 25)."""
    consensus = panel_consensus(facts.current_judgements, facts.current_tool_names)
    if consensus.value is None:
        notes = "; an offline heuristic judgement is shown but not counted" if any(j.offline for j in facts.current_judgements) else ""
        counted = {id(j) for j in facts.current_judgements}
        superseded = sum(1 for j in facts.judgements if id(j) not in counted)
        notes += f"; {superseded} judgements of removed or changed tool texts, older prompts or retired models not counted" if superseded else ""
        return unmeasured(consensus.detail() + notes)
    return percent(consensus.value, consensus.detail())
