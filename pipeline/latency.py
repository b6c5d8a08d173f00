"""Latency histograms: log-spaced buckets 5% wide, so percentiles from daily rollups stay within ~2.5%."""

from __future__ import annotations

import math
from typing import Iterable

GROWTH = 1.05
# The endpoint answered, whatever it said; a 429 is no run of the server at all (pipeline.outcomes: not measured).
REACHED = ("ok", "auth_required", "http_error")


def bucket(ms: float) -> int:
    return max(0, int(math.floor(math.log(max(ms, 1.0)) / math.log(GROWTH))))


def representative(index: int) -> float:
    """The geometric middle of a bucket."""
    return GROWTH ** (index + 0.5)


def add(histogram: dict[str, int], ms: float) -> None:
    key = str(bucket(ms))
    histogram[key] = histogram.get(key, 0) + 1


def merge(histograms: Iterable[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for histogram in histograms:
        for key, count in histogram.items():
            merged[key] = merged.get(key, 0) + count
    return merged


def count(histogram: dict[str, int]) -> int:
    return sum(histogram.values())


def percentile(histogram: dict[str, int], q: float, exact: Iterable[float] = ()) -> float | None:
    """Nearest-rank percentile over histogram buckets plus exact samples (None when both are empty).

    Exact samples (deep runs, kept raw) stay exact; rolled-up ones stand at their bucket's middle.
    """
    values = sorted([(representative(int(key)), n) for key, n in histogram.items()] + [(ms, 1) for ms in exact])
    total = sum(n for _, n in values)
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for value, n in values:
        seen += n
        if seen >= rank:
            return value
    return values[-1][0]


def from_samples(samples: Iterable[float]) -> dict[str, int]:
    histogram: dict[str, int] = {}
    for ms in samples:
        add(histogram, ms)
    return histogram
