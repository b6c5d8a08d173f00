"""The rule registry: every scoring rule is a pure, named, documented function registered here.

A rule reads Facts and returns a Verdict: points out of its maximum, measured or not, and why.
The methodology page's tables are generated from this registry, so docs cannot drift from code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipeline.score.facts import Facts


@dataclass(slots=True)
class Verdict:
    points: float
    reason: str
    measured: bool = True
    how_to_gain: str | None = None
    evidence: str | None = None
    max_points: float | None = None  # when the rule's weight depends on the evidence (e.g. no p95)


def unmeasured(reason: str, how_to_gain: str | None = None) -> Verdict:
    return Verdict(points=0.0, reason=reason, measured=False, how_to_gain=how_to_gain)


@dataclass(frozen=True)
class Rule:
    rubric: str
    dimension: str
    name: str
    max_points: float  # 0 for pure penalties
    fn: Callable[[Facts], Verdict]

    @property
    def doc(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())


REGISTRY: list[Rule] = []


def rule(rubric: str, dimension: str, max_points: float) -> Callable[[Callable[[Facts], Verdict]], Callable[[Facts], Verdict]]:
    def register(fn: Callable[[Facts], Verdict]) -> Callable[[Facts], Verdict]:
        name = fn.__name__
        if any(r.rubric == rubric and r.name == name for r in REGISTRY):
            raise ValueError(f"rule {rubric}.{name} registered twice")
        REGISTRY.append(Rule(rubric, dimension, name, max_points, fn))
        _BY_RUBRIC.pop(rubric, None)
        return fn

    return register


def rules_for(rubric: str) -> list[Rule]:
    return _BY_RUBRIC.get(rubric) or _BY_RUBRIC.setdefault(rubric, [r for r in REGISTRY if r.rubric == rubric])


_BY_RUBRIC: dict[str, list[Rule]] = {}
