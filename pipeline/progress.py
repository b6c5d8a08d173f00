"""Progress lines for long stages: counts, rate and time left.

The first item, every failure, the last item, and otherwise at most one line a second, so a
25,000-server stage stays readable and cheap to print. Lines quote server text (errors, details),
so they reach the terminal without its escape sequences.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from pipeline.clean import terminal_text


class Progress:
    def __init__(self, stage: str, total: int, stream: TextIO | None = None, clock=time.monotonic, interval: float = 1.0) -> None:
        self.stage = stage
        self.total = total
        self.done = 0
        self.failed = 0
        self.interval = interval
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._started = clock()
        self._last_line = float("-inf")

    def step(self, item: str, status: str, ok: bool = True) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        now = self._clock()
        if ok and self.done not in (1, self.total) and now - self._last_line < self.interval:
            return
        self._last_line = now
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        width = len(str(self.total))
        self._stream.write(
            terminal_text(f"[{self.stage}] {self.done:>{width}}/{self.total} {rate:5.1f}/s ~{left:4.0f}s left  {item}: {status}") + "\n"
        )
        self._stream.flush()

    def sub(self, stage: str, total: int) -> "Progress":
        """Progress of a step within this stage (a probe's installs), on the same stream and clock."""
        return Progress(stage, total, stream=self._stream, clock=self._clock, interval=self.interval)

    def note(self, message: str) -> None:
        self._stream.write(terminal_text(f"[{self.stage}] {message}") + "\n")
        self._stream.flush()

    @property
    def elapsed(self) -> float:
        return self._clock() - self._started
