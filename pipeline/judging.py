"""How the judges' readings of a tool are combined: the blend the score counts and the spread that
marks a tool ambiguous. Shared by the score (interpretability, the ambiguity flag) and the server
page, so both read the judges the same way."""

from __future__ import annotations

from typing import Sequence

from pipeline.models import Judgement

AMBIGUITY_SPREAD = 25  # points between real models on any dimension


def blend(scores: list[float]) -> float:
    """Minimum-weighted blend: 3 models 50/30/20 lowest first; 2 models 60/40."""
    ordered = sorted(scores)
    if len(ordered) >= 3:
        return 0.5 * ordered[0] + 0.3 * ordered[1] + 0.2 * ordered[-1]
    return 0.6 * ordered[0] + 0.4 * ordered[-1]


def judge_spread(judged: Sequence[Judgement]) -> float | None:
    """The widest disagreement between real models on one tool, over the three dimensions; None under two models."""
    counted = [j for j in judged if not j.offline]
    if len({j.model for j in counted}) < 2:
        return None
    return max(max(getattr(j, d) for j in counted) - min(getattr(j, d) for j in counted)
               for d in ("clarity", "input_completeness", "confidence"))
