"""A stage's wall-clock budget: when it runs out the stage takes no new work, lets what is in flight end within its own
bounds (a probe's budget, a fetch's timeouts), commits what it has and counts what it skipped (`skipped_budget`).

The clock is injected, so tests step time instead of waiting for it (deviation 89).
"""

from __future__ import annotations

import time
from typing import Callable

SKIPPED = "skipped_budget"  # the StageReport count of work not started because the budget ran out


class Deadline:
    """`seconds` of wall clock from now on `clock` (None: no budget, never expires)."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        if seconds is not None and seconds < 0:
            raise ValueError("a budget is a number of seconds, 0 or more")
        self.seconds = seconds
        self.clock = clock
        self.ends = None if seconds is None else clock() + seconds

    def expired(self) -> bool:
        return self.ends is not None and self.clock() >= self.ends

    def left(self) -> float | None:
        return None if self.ends is None else max(0.0, self.ends - self.clock())


NO_BUDGET = Deadline(None)
