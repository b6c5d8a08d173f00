"""The retention policy (deviation 93): pure, and history-free: pruning by it after every publish for 400 days keeps
exactly what it says of every snapshot ever published."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fleet.retention import POLICY, RetentionPolicy, bucket, kept

START = datetime(2026, 1, 1, 3, 17, tzinfo=timezone.utc)


def simulate(days: int, seed: int, policy: RetentionPolicy = POLICY, skip: float = 0.1) -> tuple[set[datetime], list[datetime], datetime]:
    """Publish a few times on most days (none on some), pruning after each publish as `scoreboard snapshot publish` does."""
    rng = random.Random(seed)
    store: set[datetime] = set()
    every: list[datetime] = []
    now = START
    for day in range(days):
        if rng.random() < skip:
            continue
        for hour in sorted(rng.sample(range(24), rng.choice([1, 1, 2, 4]))):
            now = START + timedelta(days=day, hours=hour, minutes=rng.randint(0, 59))
            store.add(now)
            every.append(now)
            store = kept(sorted(store), now, policy)
    return store, every, now


def test_400_days_keep_exactly_what_the_policy_says():
    store, every, now = simulate(400, seed=7)
    assert store == kept(every, now)  # history-free: the same as the policy applied once to every snapshot ever published
    today = now.date()
    days = sorted({s.date() for s in store})
    recent = [d for d in days if (today - d).days < 30]
    published_recently = {s.date() for s in every if (today - s.date()).days < 30}
    assert set(recent) == published_recently, "one snapshot for each of the last 30 days that had one"
    for day in recent:
        assert [s for s in store if s.date() == day] == [max(s for s in every if s.date() == day)], "the newest of the day"
    weekly = [s for s in store if bucket(s, now)[0] == "week"]
    weeks = [s.isocalendar()[:2] for s in weekly]
    assert len(weeks) == len(set(weeks)) and 24 <= len(weekly) <= 27
    for snap in weekly:
        same_week = [s for s in every if s.isocalendar()[:2] == snap.isocalendar()[:2] and bucket(s, now)[0] == "week"]
        assert snap == max(same_week), "the newest of its ISO week"
    monthly = [s for s in store if bucket(s, now)[0] == "month"]
    months = [bucket(s, now)[1] for s in monthly]
    assert len(months) == len(set(months)) and 6 <= len(monthly) <= 8
    assert len(store) == len(recent) + len(weekly) + len(monthly)
    assert max(every) in store


def test_the_count_stays_bounded():
    """About 30 + 26 + one a month: a year of four publishes a day keeps ~60 snapshots, not ~1,400."""
    store, every, _ = simulate(400, seed=3, skip=0.0)
    assert len(every) > 700 and 55 <= len(store) <= 70


def test_without_the_monthly_tier_nothing_older_than_the_weeks_is_kept():
    policy = RetentionPolicy(monthly=False)
    store, every, now = simulate(400, seed=11, policy=policy)
    assert store == kept(every, now, policy)
    assert min(store).date() >= (now - timedelta(days=30 + 27 * 7)).date()


def test_a_week_belongs_to_the_month_of_its_thursday():
    now = datetime(2027, 12, 1, tzinfo=timezone.utc)
    # 2026-11-30 (Monday) to 2026-12-06: Thursday is 3 December, so the whole week is December's.
    assert bucket(datetime(2026, 11, 30, tzinfo=timezone.utc), now) == ("month", date(2026, 12, 1))
    assert bucket(datetime(2026, 12, 6, tzinfo=timezone.utc), now) == ("month", date(2026, 12, 1))
    assert bucket(datetime(2026, 11, 29, tzinfo=timezone.utc), now) == ("month", date(2026, 11, 1))


def test_the_newest_is_kept_even_long_after():
    old = [START, START + timedelta(days=1)]
    assert kept(old, START + timedelta(days=3000), RetentionPolicy(monthly=False)) == {old[1]}
    assert kept([], START) == set()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=500 * 24), min_size=1, max_size=60), st.integers(min_value=0, max_value=30))
def test_pruning_any_history_daily_is_the_policy_of_all(hours, extra_days):
    """Whatever was published when, pruning after each publish (and once more later) equals the policy of everything."""
    stamps = sorted({START + timedelta(hours=h) for h in hours})
    store: set[datetime] = set()
    for stamp in stamps:
        store = kept(sorted(store | {stamp}), stamp)
    later = stamps[-1] + timedelta(days=extra_days)
    assert kept(sorted(store), later) == kept(stamps, later)
