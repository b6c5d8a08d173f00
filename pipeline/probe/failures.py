"""What a probe result says when the raw layer saw the server fail: the most telling failure, as a named state."""

from __future__ import annotations

import time
from typing import Sequence

from pipeline.http_headers import retry_after
from pipeline.models import ProbeOutcome, ProbeResult
from pipeline.probe.raw import NAMED_STATES, Exchange, telling_failure


def record_failure(result: ProbeResult, exchanges: list[Exchange], problems: Sequence[str] = ()) -> None:
    """Why the server could not be met, from the raw exchanges: their most telling failure, and the wait it asked for."""
    failed = telling_failure(exchanges)
    result.outcome = failed.outcome if failed else ProbeOutcome.protocol_error
    detail = (failed.detail or (f"JSON-RPC error {failed.error}" if failed.error else None)) if failed else None
    result.detail = "; ".join(filter(None, [detail, *problems]))[:1000] or "neither era answered well-formed"
    if result.outcome == ProbeOutcome.rate_limited and failed:
        result.retry_after_s = retry_after(failed.headers.get("retry-after"), time.time())


def named_state(result: ProbeResult, exchanges: list[Exchange]) -> None:
    """Where the SDK session failed and the raw layer saw a gate, a rate limit or a refusal (which the SDK flattens
    into "Server returned an error response"), record that instead: a state with a name, not "down"."""
    failed = telling_failure(exchanges)
    if result.outcome != ProbeOutcome.ok and failed is not None and failed.outcome in NAMED_STATES:
        record_failure(result, exchanges)
