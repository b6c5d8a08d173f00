"""The calibration loop: a fixed pure-Python workload timed in the same run as a benchmark's own figures.

On a shared VM the machine's speed drifts by a quarter between runs, and a workload's time drifts with it. Each bench
prints the loop's seconds measured before and after its workload, so figures compare across runs and machines.
"""

from __future__ import annotations

import time


def calibration() -> float:
    """CPU seconds of the fixed workload: this machine's speed right now (lower is faster)."""
    started = time.process_time()
    sum(i * i for i in range(3_000_000))
    return time.process_time() - started


def calibration_line(before: float, after: float) -> str:
    return f"calibration loop {before:.2f} s before, {after:.2f} s after (lower is a faster machine)"
