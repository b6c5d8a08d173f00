"""Which published snapshots to keep: a pure function of their times and now (methodology deviation 93).

Every snapshot of the last 30 days that is the newest of its day; then the newest of each ISO week, for weeks that
began less than 26 weeks ago; then the newest of each month, for ever. A week belongs to the month of its Thursday, as
a week belongs to the year of its Thursday in ISO 8601, so each bucket lies inside the next coarser one (day in week,
week in month) and a snapshot moves from tier to tier with the rest of its bucket. That is what makes pruning
history-free: keeping what the policy says every day gives exactly what the policy says of every snapshot ever
published, so a day on which the prune failed or did not run changes nothing later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta


@dataclass(frozen=True)
class RetentionPolicy:
    daily_days: int = 30  # the newest snapshot of each of the last 30 days
    weekly_weeks: int = 26  # then the newest of each ISO week that began less than 26 weeks before the daily window ended
    monthly: bool = True  # then the newest of each month, for ever (False: nothing older than the weekly tier)

    def describe(self) -> str:
        after = "then the newest of each month, kept for ever" if self.monthly else "nothing older"
        return f"the newest of each day for {self.daily_days} days, then the newest of each ISO week for {self.weekly_weeks} weeks, {after}"


POLICY = RetentionPolicy()


def bucket(taken: datetime, now: datetime, policy: RetentionPolicy = POLICY) -> tuple | None:
    """The bucket a snapshot taken at `taken` belongs to at `now`; None when the policy keeps nothing of its age."""
    day = taken.date()
    today = now.date()
    if (today - day).days < policy.daily_days:
        return ("day", day)
    monday = day - timedelta(days=day.weekday())
    daily_ends = today - timedelta(days=policy.daily_days - 1)  # the oldest day still kept whole
    if (daily_ends - monday).days < policy.weekly_weeks * 7:
        return ("week", monday)
    if policy.monthly:
        thursday = monday + timedelta(days=3)
        return ("month", date(thursday.year, thursday.month, 1))
    return None


def kept(stamps: list[datetime], now: datetime, policy: RetentionPolicy = POLICY) -> set[datetime]:
    """The snapshots to keep: the newest of each bucket (so the newest snapshot of all is always kept)."""
    newest: dict[tuple, datetime] = {}
    for stamp in stamps:
        key = bucket(stamp, now, policy)
        if key is not None and (key not in newest or stamp > newest[key]):
            newest[key] = stamp
    if stamps:
        newest[("newest",)] = max(stamps)
    return set(newest.values())
