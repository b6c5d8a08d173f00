"""The `scoreboard` rubric's Schema Interpretability dimension (seed 000): LLM judges' consensus on the tools."""

from __future__ import annotations

from pipeline.judging import blend
from pipeline.score.engine import Outcome, RuleSet, percent, unmeasured
from pipeline.score.facts import Facts

INTERPRETABILITY_RULES = RuleSet()
rule = INTERPRETABILITY_RULES.rule


@rule("schema_interpretability", 100)
def interpretability_consensus(facts: Facts) -> Outcome:
    """Three-judge consensus on clarity, input completeness, confidence; blended lowest-first; ×0.90 when models spread by more than 25."""
    counted = [j for j in facts.current_judgements if not j.offline]
    by_model: dict[str, list[float]] = {}
    for j in counted:
        by_model.setdefault(j.model, []).append((j.clarity + j.input_completeness + j.confidence) / 3)
    if len(by_model) < 2:
        offline = "; an offline heuristic judgement is shown but not counted" if facts.current_judgements else ""
        superseded = len(facts.judgements) - len(facts.current_judgements)
        offline += f"; {superseded} judgements of removed or changed tool texts not counted" if superseded else ""
        return unmeasured(f"needs 2+ LLM judges, has {len(by_model)}{offline}")
    model_scores = [sum(v) / len(v) for v in by_model.values()]
    value = blend(model_scores)
    spread = max(model_scores) - min(model_scores)
    if spread > 25:
        value *= 0.9
    return percent(value, f"{len(by_model)} models, spread {spread:.0f}")
