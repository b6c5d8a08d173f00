"""Which judgements count and how the judges' readings of a tool are combined: the blend the score
counts and the spread that marks a tool ambiguous. Shared by the score (interpretability, the
ambiguity flag, seed 004's judged reading), the judge and the server page, so all read the judges
the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Sequence

from pipeline.models import Judgement
from pipeline.store.encoding import content_hash

AMBIGUITY_SPREAD = 25  # points between real models on any dimension
DIMENSIONS = ("clarity", "input_completeness", "confidence")
# Seed 000's consensus levels: the spread between the models' server scores, the level, and the factor it applies.
CONSENSUS_LEVELS = ((10.0, "High", 1.0), (25.0, "Medium", 1.0), (float("inf"), "Low", 0.90))


def text_hash(tool: dict[str, Any]) -> str:
    """The hash of one tool's text as listed (name, description, schemas, annotations), the one a judgement records."""
    return content_hash(tool)


def current_judgements(judgements: Sequence[Judgement], tools: Sequence[dict[str, Any]] | None) -> list[Judgement]:
    """The judgements that count: of the tool texts listed now (same tool name and text hash; deviation 63), by a model still
    in the panel (not retired), and of each tool by each model only the newest, so a text read again under a newer prompt
    version counts in that reading alone (deviation 117). A removed tool's judgement, one of a text since changed, or one
    by a model that left the panel is history, left out. Ordered by tool, then model."""
    if not judgements or not tools:
        return []
    listed = {(str(tool.get("name", "")), text_hash(tool)) for tool in tools}
    newest: dict[tuple[str, str], Judgement] = {}
    for j in judgements:
        if (j.tool_name, j.tool_hash) not in listed or j.retired:
            continue
        seen = newest.get((j.tool_name, j.model))
        if seen is None or (j.judged_at, j.prompt_version) > (seen.judged_at, seen.prompt_version):
            newest[(j.tool_name, j.model)] = j
    return [newest[key] for key in sorted(newest)]


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
    return max(max(getattr(j, d) for j in counted) - min(getattr(j, d) for j in counted) for d in DIMENSIONS)


def tool_average(j: Judgement) -> float:
    """One judge's reading of one tool: its three dimensions averaged (seed 000's derived scoring)."""
    return (j.clarity + j.input_completeness + j.confidence) / 3


def consensus_level(spread: float) -> tuple[str, float]:
    """High (spread <= 10), Medium (<= 25) or Low (> 25), and the factor the level applies to the blend (x0.90 when Low)."""
    return next((level, factor) for limit, level, factor in CONSENSUS_LEVELS if spread <= limit)


@dataclass(frozen=True)
class Consensus:
    """The panel's reading of a server: each counted model's score (its tool averages averaged), the blend, the level."""

    models: dict[str, float]  # counted model -> its server score
    partial: dict[str, int]  # a real model that has not read every listed tool -> how many it has read (not counted)
    tools: int
    spread: float | None = None
    level: str | None = None
    factor: float = 1.0
    value: float | None = None  # None under two counted models: not measured

    def detail(self) -> str:
        scores = ", ".join(f"{m} {v:.0f}" for m, v in sorted(self.models.items()))
        waiting = "; " + ", ".join(f"{m} read {n}/{self.tools} tools" for m, n in sorted(self.partial.items())) if self.partial else ""
        if self.value is None:
            return f"needs 2+ LLM judges of every tool, has {len(self.models)}{': ' + scores if scores else ''}{waiting}"
        penalty = f", x{self.factor:.2f}" if self.factor != 1.0 else ""
        return f"{len(self.models)} models ({scores}) over {self.tools} tools; spread {self.spread:.0f}: {self.level} consensus{penalty}{waiting}"


def panel_consensus(current: Sequence[Judgement], tool_names: Collection[str]) -> Consensus:
    """Seed 000's server-level interpretability from the current judgements: a real model counts once it has read every
    listed tool (deviation 118); each model's score is the average of its tool averages; 2+ models are blended lowest-first
    (50/30/20 or 60/40) and the blend takes x0.90 when their spread is over 25 (Low consensus)."""
    names = set(tool_names)
    read: dict[str, dict[str, float]] = {}
    for j in current:
        if not j.offline and j.tool_name in names:
            read.setdefault(j.model, {})[j.tool_name] = tool_average(j)
    models = {m: sum(by_tool.values()) / len(by_tool) for m, by_tool in read.items() if names and set(by_tool) == names}
    partial = {m: len(by_tool) for m, by_tool in read.items() if m not in models}
    if len(models) < 2:
        return Consensus(models, partial, len(names))
    spread = max(models.values()) - min(models.values())
    level, factor = consensus_level(spread)
    return Consensus(models, partial, len(names), spread, level, factor, blend(list(models.values())) * factor)


def directive_reports(current: Sequence[Judgement]) -> dict[str, list[str]]:
    """Per tool, the real models whose current judgement says its text tries to instruct the model reading it."""
    found: dict[str, list[str]] = {}
    for j in current:
        if not j.offline and j.directive:
            found.setdefault(j.tool_name, []).append(j.model)
    return {tool: sorted(models) for tool, models in sorted(found.items())}


def corroborated_directives(current: Sequence[Judgement]) -> dict[str, list[str]]:
    """The tools that 2+ real models, and most of the real models that read them, call directive: one model's word alone
    never condemns a server (deviation 119)."""
    readers: dict[str, int] = {}
    for j in current:
        if not j.offline:
            readers[j.tool_name] = readers.get(j.tool_name, 0) + 1
    return {tool: models for tool, models in directive_reports(current).items() if len(models) >= 2 and 2 * len(models) > readers[tool]}
