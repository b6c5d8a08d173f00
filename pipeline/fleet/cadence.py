"""What is due: seed 000's Ongoing Maintenance table and Score Lifecycle as pure functions of when each server was last
examined (deviations 85 and 86). Every selection is oldest first (never examined before all), so a run cut short by its
budget is taken up by the next run where it stopped.

- analysis: hourly batches of at most 1,000 servers not checked in the last hour (an unchanged source costs one cheap call);
- fast probes of remote servers: a server is due 20 minutes after its last one; the workflow runs the monitor every 10
  minutes, so each server is probed every 20-30 minutes, inside seed 000's 15-30;
- deep probes of remote servers: daily; sandbox probes of packages: when the listed version differs from the one the last
  sandbox run installed, else weekly;
- judgements: daily (a tool whose text did not change is not judged again: that is by hash, in the judge stage);
- the freshness sweep: weekly, the oldest eighth of the fleet's analyses, so the fleet is refreshed about every 8 weeks;
- a priority rescore: at most one per server per 24 hours.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Callable, Iterable, Mapping, Sequence, TypeVar

from pipeline.models import Server

T = TypeVar("T")

SLACK = timedelta(hours=4)  # a daily or weekly job that starts a little early or late still finds yesterday's servers due
ANALYSIS_INTERVAL = timedelta(hours=1)
ANALYSIS_BATCH = 1_000
FAST_INTERVAL = timedelta(minutes=20)
DEEP_INTERVAL = timedelta(days=1) - SLACK
SANDBOX_INTERVAL = timedelta(days=7) - SLACK
JUDGE_INTERVAL = timedelta(days=1) - SLACK
SWEEP_WEEKS = 8
RESCORE_INTERVAL = timedelta(hours=24)


def oldest_first(items: Iterable[T], last: Mapping[str, datetime], key: Callable[[T], str]) -> list[T]:
    """Never examined first, then the longest ago; ties keep their order."""
    floor = datetime.min
    return sorted(items, key=lambda item: (key(item) in last, last[key(item)].replace(tzinfo=None) if key(item) in last else floor))


def due(servers: Sequence[Server], last: Mapping[str, datetime], now: datetime, interval: timedelta, limit: int | None = None) -> list[Server]:
    """The servers not examined within `interval` of `now`, oldest first, at most `limit`."""
    chosen = [s for s in oldest_first(servers, last, lambda s: s.id) if s.id not in last or now - last[s.id] >= interval]
    return chosen[:limit] if limit is not None else chosen


def due_for_analysis(servers: Sequence[Server], last: Mapping[str, datetime], now: datetime) -> list[Server]:
    return due(servers, last, now, ANALYSIS_INTERVAL, ANALYSIS_BATCH)


def due_for_monitor(servers: Sequence[Server], last: Mapping[str, datetime], now: datetime) -> list[Server]:
    """Remote servers only: a package we would have to start is not health-checked (deviation 86)."""
    return due([s for s in servers if not s.is_local], last, now, FAST_INTERVAL)


def listed_version(server: Server) -> str | None:
    """The package version the catalog lists for a server we start: its launch's pin, else its registry package's version."""
    if server.launch is None:
        return None
    if server.launch.version:
        return server.launch.version
    listed = [p.version for p in server.packages if p.identifier == server.launch.package and p.version]
    return listed[0] if listed else None


def due_for_probe(servers: Sequence[Server], last: Mapping[str, datetime], now: datetime, sandboxed: Mapping[str, str | None]) -> list[Server]:
    """Remote servers daily; servers we start when their listed version is not the one last sandboxed, else weekly."""
    def is_due(server: Server) -> bool:
        if server.id not in last:
            return True
        if not server.is_local:
            return now - last[server.id] >= DEEP_INTERVAL
        version = listed_version(server)
        changed = version is not None and server.id in sandboxed and sandboxed[server.id] != version
        return changed or now - last[server.id] >= SANDBOX_INTERVAL

    return [s for s in oldest_first(servers, last, lambda s: s.id) if is_due(s)]


def due_for_judging(servers: Sequence[Server], last: Mapping[str, datetime], now: datetime) -> list[Server]:
    return due(servers, last, now, JUDGE_INTERVAL)


def sweep_size(fleet: int) -> int:
    """How many servers a weekly sweep refreshes so the whole fleet is refreshed every SWEEP_WEEKS weeks."""
    return math.ceil(fleet / SWEEP_WEEKS)


def oldest(servers: Sequence[Server], analysed: Mapping[str, datetime], count: int) -> list[Server]:
    """The freshness sweep: the `count` servers whose stored analysis is oldest (none at all first)."""
    return oldest_first(servers, analysed, lambda s: s.id)[:count]


def rescore_refusal(last: datetime | None, now: datetime) -> str | None:
    """Why a priority rescore is refused now (None: it may run)."""
    if last is None or now - last >= RESCORE_INTERVAL:
        return None
    again = last + RESCORE_INTERVAL
    return f"this server was priority-rescored at {last:%Y-%m-%d %H:%M} UTC; one priority rescore per 24 hours: again from {again:%Y-%m-%d %H:%M} UTC"
