"""How fast and how far the panel may go: per-provider concurrency and request rate, and the run's token or cost budget.

Default limits keep the pinned models under their providers' published rate limits at the lowest paid tier, with room
to spare (deviation 120): OpenAI gpt-5-nano, 500 requests a minute at tier 1: 8 in flight, 5 a second (300 a minute);
Google gemini-2.0-flash, 2,000 a minute at tier 1 (15 on the free tier): 4 in flight, 5 a second; Mistral, 1 request a
second per workspace on the default plan: 2 in flight, 1 a second. SCOREBOARD_JUDGE_LIMITS overrides them, per family or
per model: "openai=8/5,mistral:mistral-small-2501=2/1" (in flight / requests a second).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar


@dataclass(frozen=True)
class Limits:
    in_flight: int
    per_second: float


DEFAULT_LIMITS = {"openai": Limits(8, 5.0), "google": Limits(4, 5.0), "mistral": Limits(2, 1.0)}
FALLBACK = Limits(2, 1.0)  # a family we hold no published limit for


class LimitsError(ValueError):
    """SCOREBOARD_JUDGE_LIMITS cannot be read: one line naming the entry."""


def limits_for(family: str, model: str, env: Mapping[str, str]) -> Limits:
    """The limits of one judge: its model's entry in SCOREBOARD_JUDGE_LIMITS, else its family's, else the default."""
    entries: dict[str, Limits] = {}
    for entry in filter(None, (e.strip() for e in env.get("SCOREBOARD_JUDGE_LIMITS", "").split(","))):
        key, _, value = entry.rpartition("=")
        in_flight, _, rate = value.partition("/")
        try:
            limits = Limits(int(in_flight), float(rate))
        except ValueError:
            raise LimitsError(f"SCOREBOARD_JUDGE_LIMITS: {entry!r} is not NAME=IN_FLIGHT/PER_SECOND") from None
        if not key or limits.in_flight < 1 or limits.per_second <= 0:
            raise LimitsError(f"SCOREBOARD_JUDGE_LIMITS: {entry!r} needs a name, 1+ in flight and a rate above 0")
        entries[key] = limits
    return entries.get(f"{family}:{model}") or entries.get(family) or DEFAULT_LIMITS.get(family, FALLBACK)


T = TypeVar("T")
SPACING_MARGIN = 1.2  # requests spaced a fifth wider than the rate: one sent on time may arrive a little early (a loaded machine)
SLOW_DOWN_QUIET = 2.0  # seconds after a slow-down in which further 429s (of requests already in flight) do not slow it again


class RateLimiter:
    """Requests spaced at least 1.2/per_second apart, shared by one judge's threads, so that no window of a second (a
    provider's count, whatever the network's jitter) holds more than per_second of them."""

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = SPACING_MARGIN / per_second
        self.clock, self.sleep = clock, sleep
        self._next = float("-inf")
        self._slowed = float("-inf")
        self._lock = threading.Lock()

    def slow_down(self) -> None:
        """A request of this judge was answered 429: its real limit may be below ours (a free tier, a shared key), so
        its requests are spaced a quarter further apart for the rest of the run (at most a minute apart). The 429s of
        one crowded second (the requests then in flight) slow it once."""
        with self._lock:
            now = self.clock()
            if now - self._slowed < SLOW_DOWN_QUIET:
                return
            self._slowed = now
            self.interval = min(self.interval * 1.25, 60.0)

    def sent_now(self) -> None:
        """A request reached the provider only now (an SDK client's first, slow to build): the next one waits a full
        interval from here, not from when this one took its turn."""
        with self._lock:
            self._next = max(self._next, self.clock() + self.interval)

    def wait(self) -> None:
        with self._lock:
            now = self.clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            self.sleep(slot - now)
            self.sent_now()  # a thread that woke late (a loaded machine) must not leave the next one too close behind


class Pace:
    """How one judge's requests go out: its first alone (an SDK client's first use takes a second or more, and requests
    spaced while it was being made would all reach the provider at once, over its rate, and their retries with them),
    then each on its rate limiter's turn, spaced further once one was retried (most often a 429: the provider's limit
    is below ours). The panel and the model transition pace their judges alike through it."""

    def __init__(self, rate: RateLimiter) -> None:
        self.rate = rate
        self._warm, self._warming = threading.Event(), threading.Lock()

    def send(self, request: Callable[[], T]) -> T:
        """Run `request` (which waits for its turn through `self.rate.wait()`); the first one alone."""
        if not self._warm.is_set():
            with self._warming:
                if not self._warm.is_set():
                    try:
                        return request()
                    finally:
                        self.rate.sent_now()
                        self._warm.set()
        return request()

    def answered(self, outcome: Any) -> None:
        """A completion or an LLMError came back: a retried or rate-limited one slows this judge for the rest of the run."""
        if outcome.usage.retries or getattr(outcome, "kind", None) == "rate_limited":
            self.rate.slow_down()
