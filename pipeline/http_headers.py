"""HTTP header values both the discovery fetchers and the prober read (pure)."""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def retry_after(value: str | None, now: float, cap: float = 86_400.0) -> float | None:
    """Seconds a Retry-After (or X-Retry-After) header asks for: delta-seconds or an HTTP date, between 0 and `cap`."""
    if not value:
        return None
    try:
        return min(cap, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        return min(cap, max(0.0, parsedate_to_datetime(value).timestamp() - now))
    except (TypeError, ValueError):
        return None
