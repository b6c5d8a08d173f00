"""The aggregate shift of a model transition (seed 000's Model Transition Policy), as pure arithmetic over per-server readings.

A model's reading of a server is its server score as Schema Interpretability computes it before blending
(pipeline.judging.panel_consensus: the mean, over the server's current tools, of each tool's three dimensions averaged). The shift is the relative
change of the sample's mean reading, new model against old, in percent; the switch is refused at 3% or more either way
(deviation 124). The distributions' quantiles and the per-server deltas are reported beside it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from pipeline.latency import percentile

TOLERANCE = 3.0  # percent; seed 000: "only deployed if the aggregate score shift is within tolerance (<3%)"
MIN_COMPARED = 0.9  # the share of sampled servers both models must judge in full for the shift to mean anything (deviation 125)
QUANTILES = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class Distribution:
    mean: float
    p10: float
    p50: float
    p90: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        """Mean and nearest-rank quantiles (the rank the project's other percentiles use) of a non-empty sample."""
        p10, p50, p90 = (float(percentile({}, q, exact=values) or 0.0) for q in QUANTILES)
        return cls(mean=sum(values) / len(values), p10=p10, p50=p50, p90=p90)


@dataclass(frozen=True)
class Comparison:
    servers: int
    old: Distribution
    new: Distribution
    delta: Distribution  # per server: new reading minus old, in points
    shift: float  # percent: 100 × (new mean − old mean) / old mean


@dataclass(frozen=True)
class Decision:
    accepted: bool
    reason: str


def compare(pairs: Sequence[tuple[float, float]]) -> Comparison:
    """The comparison of (old reading, new reading) per server; at least one pair."""
    old = Distribution.of([o for o, _ in pairs])
    new = Distribution.of([n for _, n in pairs])
    delta = Distribution.of([n - o for o, n in pairs])
    if old.mean:
        shift = 100 * (new.mean - old.mean) / old.mean
    else:  # an old model that read every tool as 0: any reading above is an unbounded change
        shift = 0.0 if new.mean == 0 else float("inf")
    return Comparison(servers=len(pairs), old=old, new=new, delta=delta, shift=shift)


def decide(comparison: Comparison | None, sampled: int, failures: Sequence[str] = ()) -> Decision:
    """Accept the switch only when nearly every sampled server was read by both models and the shift is under tolerance.
    `failures`: one line per judge whose calls failed (its first error), said in the refusal so it is never a bare number."""
    compared = comparison.servers if comparison else 0
    said = f": {'; '.join(failures)}" if failures else ""
    if sampled == 0:
        return Decision(False, "no judged server to sample: the panel has not judged any current tool text yet")
    if compared < MIN_COMPARED * sampled or comparison is None:
        return Decision(False, f"only {compared} of {sampled} sampled servers were judged in full by both models, "
                               f"{MIN_COMPARED:.0%} needed{said}")
    if abs(comparison.shift) >= TOLERANCE:
        return Decision(False, f"aggregate shift {comparison.shift:+.2f}% is outside the {TOLERANCE:g}% tolerance")
    return Decision(True, f"aggregate shift {comparison.shift:+.2f}% is within the {TOLERANCE:g}% tolerance")


def sample(server_ids: Sequence[str], size: int, seed: int) -> list[str]:
    """A reproducible sample: the same ids, size and seed draw the same servers, whatever order the ids came in."""
    ordered = sorted(server_ids)
    if size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size))
