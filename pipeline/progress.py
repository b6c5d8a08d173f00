"""Progress lines for long stages: counts, rate and time left, one line per finished item."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stage: str, total: int, stream: TextIO | None = None, clock=time.monotonic) -> None:
        self.stage = stage
        self.total = total
        self.done = 0
        self.failed = 0
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._started = clock()

    def step(self, item: str, status: str, ok: bool = True) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        width = len(str(self.total))
        self._stream.write(
            f"[{self.stage}] {self.done:>{width}}/{self.total} {rate:5.1f}/s ~{left:4.0f}s left  {item}: {status}\n"
        )
        self._stream.flush()

    def note(self, message: str) -> None:
        self._stream.write(f"[{self.stage}] {message}\n")
        self._stream.flush()

    @property
    def elapsed(self) -> float:
        return self._clock() - self._started
