"""One time budget per probe: a monotonic deadline every step shares, and the moment the probe stops asking.

A server that never answers must cost one budget, not one call timeout per step. So every exchange waits
min(its own timeout, the time left), and once the server has shown it will not answer (no answer to the first
request of the handshake, an endless stream, a slow-loris) or has asked us to wait (HTTP 429), nothing more is
sent to it in that probe: what was not asked is recorded as not measured, never as "no".
"""

from __future__ import annotations

import time


class Budget:
    """The time one probe may take, shared by every step (`Limits.within`), and why it stopped asking, if it did."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.halted: str | None = None  # why nothing more is sent: the server did not answer, or asked us to wait
        self.retry_after: str | None = None  # set by a 429: its Retry-After header ("" when it gave none)

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def halt(self, why: str) -> None:
        """Send nothing more to this server in this probe (the first reason is the one kept)."""
        if self.halted is None:
            self.halted = why

    def rate_limited(self, retry_after: str | None) -> None:
        if self.retry_after is None:
            self.retry_after = retry_after or ""
        self.halt(f"the server answered HTTP 429 (Retry-After: {retry_after or 'not given'})")

    def stopped(self) -> str | None:
        """Why the next request is not to be sent (None: send it)."""
        if self.halted is not None:
            return self.halted
        return f"the probe's {self.seconds:g} s budget ran out" if self.left() <= 0.01 else None
