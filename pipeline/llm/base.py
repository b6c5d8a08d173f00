"""The contract every LLM provider keeps: one structured completion, validated, with its usage, or one LLMError.

The retry loop lives here so the three providers retry alike (deviation 112): at most 3 attempts in all on a rate
limit, a server error or a timeout; a Retry-After is honoured up to RETRY_AFTER_CAP seconds, otherwise exponential
backoff (1 s, then 2 s) times a random 0.5-1.5, so concurrent callers do not retry in step. The SDKs' own retries are
off so these are the only ones. Sleep, jitter and clock are injected so tests run in milliseconds.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Generic, Mapping, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

KINDS = ("config", "auth", "refusal", "malformed", "rate_limited", "server_error", "timeout", "transport")
RETRYABLE = frozenset({"rate_limited", "server_error", "timeout"})
MAX_ATTEMPTS = 3
BACKOFF_BASE = 1.0  # seconds before the second attempt; doubled for the third
RETRY_AFTER_CAP = 30.0  # a longer Retry-After is waited only this long (deviation 112)
RETRY_AFTER_SPREAD = 0.5  # up to this many seconds added to a Retry-After
DEFAULT_TIMEOUT = 60.0  # seconds per request, SCOREBOARD_LLM_TIMEOUT


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None once any part was priced at an unknown rate
    calls: int = 0  # requests sent, retries included
    retries: int = 0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(input_tokens=self.input_tokens + other.input_tokens, output_tokens=self.output_tokens + other.output_tokens,
                     cost_usd=cost, calls=self.calls + other.calls, retries=self.retries + other.retries)


class LLMError(Exception):
    """One failed completion. `kind` is one of KINDS; `usage` is what the failed call still cost (a malformed answer was
    paid for). The message names provider and model and never holds a key."""

    def __init__(self, kind: str, message: str, *, usage: Usage | None = None):
        assert kind in KINDS, kind
        super().__init__(message)
        self.kind = kind
        self.usage = usage or Usage()


@dataclass
class Completion(Generic[T]):
    value: T
    usage: Usage


class Provider(Protocol):
    provider: str  # the family: "openai" | "google" | "mistral"
    model: str
    offline: bool
    base_url: str | None

    def complete(self, *, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int = 1024) -> Completion[T]:
        ...


class Attempt(Exception):
    """Raised by a provider's single request: the failure's kind, a short reason, and the server's Retry-After."""

    def __init__(self, kind: str, reason: str, *, retry_after: float | None = None, usage: Usage | None = None):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retry_after = retry_after
        self.usage = usage or Usage()


@dataclass
class RetryPolicy:
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random  # in [0, 1)
    clock: Callable[[], float] = time.time  # for a Retry-After given as an HTTP date
    attempts: int = MAX_ATTEMPTS
    cap: float = RETRY_AFTER_CAP

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:  # at least what the server asked, and callers told the same do not return in step
            return min(max(retry_after, 0.0) + RETRY_AFTER_SPREAD * self.jitter(), self.cap)
        return min(BACKOFF_BASE * 2 ** (attempt - 1) * (0.5 + self.jitter()), self.cap)


def retry_after(headers: Mapping[str, str] | None, clock: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asks us to wait: retry-after-ms (OpenAI), Retry-After in seconds or as an HTTP date."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return float(lowered["retry-after-ms"]) / 1000
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            return parsedate_to_datetime(value).timestamp() - clock()
    except (ValueError, TypeError, OverflowError):
        return None


def run_with_retries(label: str, call: Callable[[], tuple[T, Usage]], policy: RetryPolicy) -> Completion[T]:
    """Call `call` up to policy.attempts times; the usage of every attempt (failed ones included) is summed."""
    spent = Usage()
    for attempt in range(1, policy.attempts + 1):
        try:
            value, usage = call()
        except Attempt as failure:
            spent = spent + failure.usage + Usage(calls=1)
            if failure.kind not in RETRYABLE or attempt == policy.attempts:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise LLMError(failure.kind, f"{label}: {failure.kind}{tries}: {failure.reason}", usage=spent) from None
            spent = spent + Usage(retries=1)
            policy.sleep(policy.wait(attempt, failure.retry_after))
            continue
        return Completion(value=value, usage=spent + usage + Usage(calls=1))
    raise AssertionError("unreachable")


def status_failure(status: int, headers: Any, message: str, policy: RetryPolicy) -> Attempt:
    """An HTTP error status as an attempt's failure, the same for every provider. A 401/403 message is not repeated: a
    server may echo part of the key in it."""
    if status in (401, 403):
        return Attempt("auth", f"the key was refused (HTTP {status})")
    wait = retry_after(headers, policy.clock)
    if status == 429:
        return Attempt("rate_limited", "HTTP 429" + (f", Retry-After {wait:g} s" if wait is not None else ""), retry_after=wait)
    if status == 408:
        return Attempt("timeout", "HTTP 408", retry_after=wait)
    if status >= 500:
        return Attempt("server_error", f"HTTP {status}: {one_line(message, 120)}", retry_after=wait)
    return Attempt("config", f"HTTP {status}: {one_line(message, 160)}")


def parse_answer(text: str | None, schema: type[T], usage: Usage) -> T:
    """The model's text as a validated instance of `schema`: empty is a refusal, anything else invalid is malformed."""
    if text is None or not text.strip():
        raise Attempt("refusal", "empty answer", usage=usage)
    try:
        return schema.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise Attempt("malformed", f"not JSON ({error.msg}, char {error.pos})", usage=usage) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
        raise Attempt("malformed", f"does not fit {schema.__name__}: {where}: {first.get('msg', 'invalid')}", usage=usage) from None


def server_message(body: object, fallback: str) -> str:
    """The message in an error body ({"message"} or {"error": {"message"}}, as a dict or JSON text), else `fallback`."""
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except ValueError:
            return fallback
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(inner.get("message"), str) and inner["message"].strip():
            return inner["message"]
    return fallback


def one_line(text: object, limit: int = 200) -> str:
    """A server's error message as one short line (it may be long, multi-line or hostile)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
