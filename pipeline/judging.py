"""Which judgements count and how the judges' readings of a tool are combined: the blend the score
counts and the spread that marks a tool ambiguous. Shared by the score (interpretability, the
ambiguity flag, seed 004's judged reading), the judge and the server page, so all read the judges
the same way."""

from __future__ import annotations

from typing import Any, Sequence

from pipeline.models import Judgement
from pipeline.store.encoding import content_hash

AMBIGUITY_SPREAD = 25  # points between real models on any dimension


def text_hash(tool: dict[str, Any]) -> str:
    """The hash of one tool's text as listed (name, description, schemas, annotations), the one a judgement records."""
    return content_hash(tool)


def current_judgements(judgements: Sequence[Judgement], tools: Sequence[dict[str, Any]] | None) -> list[Judgement]:
    """The judgements of the tool texts listed now: same tool name and same text hash. A removed tool's judgement, or
    one of a text since changed, reads a text the server no longer shows, and is left out (deviation 63)."""
    if not judgements or not tools:
        return []
    listed = {(str(tool.get("name", "")), text_hash(tool)) for tool in tools}
    return [j for j in judgements if (j.tool_name, j.tool_hash) in listed]


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
