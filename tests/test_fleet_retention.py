"""Fast-probe history: raw fast runs kept 48 hours, daily rollups for good, reliability unchanged (deviation 88)."""

from __future__ import annotations

import functools
import io
from datetime import timedelta

from pipeline import store
from pipeline.config import Settings
from pipeline.discover import run_discover
from pipeline.fleet import shards
from pipeline.models import ProbeOutcome, ProbeResult
from pipeline.probe.monitor import run_monitor
from pipeline.progress import Progress
from pipeline.sandbox.install import Installer
from pipeline.score import run_score
from tests.support import NOW, ListSource, entry, probe, quiet

DAYS = 30
EVERY = timedelta(minutes=90)


def fast(server_id: str, at, outcome: ProbeOutcome, connect_ms: float | None) -> ProbeResult:
    return ProbeResult(server_id=server_id, kind="fast", started_at=at, duration_ms=50, transport="streamable-http", outcome=outcome,
                       connect_ms=connect_ms, handshake="initialize" if outcome == ProbeOutcome.ok else None)


def history(db) -> None:
    """30 days of fast probes every 90 minutes and a daily deep probe, for: a healthy server, one down since day 3, one
    that answers two probes in three, and one down for its last five days (deep probes still answering until then)."""
    start = NOW - timedelta(days=DAYS)
    at, step = start, 0
    while at <= NOW:
        age = (NOW - at).days
        plans = {
            "healthy": ProbeOutcome.ok,
            "down": ProbeOutcome.ok if age > DAYS - 3 else ProbeOutcome.timeout,
            "flaky": ProbeOutcome.ok if step % 3 else ProbeOutcome.unreachable,
            "lately": ProbeOutcome.ok if age >= 5 else ProbeOutcome.timeout,
        }
        for server_id, outcome in plans.items():
            store.record_probe(db, fast(server_id, at, outcome, 40 + (step * 7) % 200 if outcome == ProbeOutcome.ok else None), None)
            if step % 16 == 0:  # one deep probe a day
                deep = probe(outcome if outcome != ProbeOutcome.ok else ProbeOutcome.ok).model_copy(
                    update={"server_id": server_id, "started_at": at, "transport": "streamable-http"})
                store.record_probe(db, deep, None)
        at, step = at + EVERY, step + 1


def cards(db) -> dict:
    """Every card whole: composite, grade, visibility, dimensions, each rule (points and reason), flags, badges, extras."""
    return {(r["server_id"], r["rubric"]): {k: r[k] for k in ("composite", "grade", "visibility", "dimensions", "rules", "flags", "badges", "extra")}
            for r in db.query("select * from scores")}


def test_thirty_days_of_fast_probes_keep_48_hours_raw_and_score_the_same(tmp_path):
    db = store.open_db(tmp_path / "x.db")
    ids = ["healthy", "down", "flaky", "lately"]
    run_discover(db, sources=[ListSource("test", [entry(i, transport="streamable-http", remote_url=f"https://{i}.example.com/mcp")
                                                  for i in ids])], now=NOW - timedelta(days=DAYS + 1), progress=quiet(1))
    history(db)
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW, progress=Progress("score", 4, stream=io.StringIO()))
    before, daily = cards(db), list(db.query("select * from probe_daily order by server_id, day, kind"))
    raw_before = db.execute("select count(*) from probe_runs where kind = 'fast'").fetchone()[0]

    settings = Settings(db_path=tmp_path / "x.db", cache_dir=tmp_path / "cache")
    report = run_monitor(db, servers=[], installer=Installer(tmp_path / "cache"), settings=settings, now=NOW,
                         progress=Progress("monitor", 0, stream=io.StringIO()))
    cutoff = store.iso(NOW - timedelta(hours=48))
    old = list(db.query("select server_id, outcome from probe_runs where kind = 'fast' and started_at < ?", [cutoff]))
    recent = db.execute("select count(*) from probe_runs where kind = 'fast' and started_at >= ?", [cutoff]).fetchone()[0]
    assert report.counts["pruned_raw"] == raw_before - recent - len(old) > 1500
    # Kept past 48 hours: the last answered fast run of a server whose latest one failed (the others' are within 48 hours);
    # its failures since are folded per day.
    assert sorted(r["server_id"] for r in old) == ["down", "lately"] and {r["outcome"] for r in old} == {"ok"}
    folded = dict(db.execute("select server_id, sum(failed) from fast_failures group by server_id").fetchall())
    assert set(folded) == {"down", "lately"} and folded["down"] > 400
    assert list(db.query("select * from probe_daily order by server_id, day, kind")) == daily
    assert db.execute("select count(*) from probe_runs where kind = 'deep'").fetchone()[0] == 4 * (DAYS + 1)

    run_score(db, servers=servers, now=NOW, progress=Progress("score", 4, stream=io.StringIO()))
    assert cards(db) == before
    assert "476 attempts over 670 h" in before[("down", "scoreboard")]["rules"]

def test_pruning_twice_changes_nothing_more(tmp_path):
    db = store.open_db(tmp_path / "x.db")
    run_discover(db, sources=[ListSource("test", [entry("down", transport="streamable-http", remote_url="https://d.example.com/mcp")])],
                 now=NOW - timedelta(days=5), progress=quiet(1))
    for hours in range(96, 0, -1):
        store.record_probe(db, fast("down", NOW - timedelta(hours=hours), ProbeOutcome.ok if hours > 80 else ProbeOutcome.timeout, 50), None)
    assert store.prune_fast_runs(db, NOW - timedelta(hours=48)) == 96 - 48 - 1  # 48 recent kept, and the last answer (81 h ago)
    assert db.execute("select sum(failed) from fast_failures").fetchone()[0] == 80 - 48
    assert store.prune_fast_runs(db, NOW - timedelta(hours=48)) == 0
    assert db.execute("select sum(failed) from fast_failures").fetchone()[0] == 80 - 48
    store.record_probe(db, fast("down", NOW, ProbeOutcome.ok, 50), None)  # it answers again: the folded failures no longer count
    store.prune_fast_runs(db, NOW - timedelta(hours=48))
    assert db["fast_failures"].count == 0


def test_a_shard_prunes_only_its_own_servers_raw_runs(tmp_path):
    """A monitor shard prunes its shard's servers: twenty shards would otherwise each delete the whole fleet's old runs and
    carry those deletions into the merge. No table holds a probe run's id (a tool list is named by its hash), so a delete
    reads no other table."""
    db = store.open_db(tmp_path / "x.db")
    names = [f"s{i}" for i in range(6)]
    run_discover(db, sources=[ListSource("test", [entry(n, transport="streamable-http", remote_url=f"https://{n}.example.com/mcp")
                                                  for n in names])], now=NOW - timedelta(days=5), progress=quiet(1))
    for name in names:
        for hours in range(60, 0, -1):
            store.record_probe(db, fast(name, NOW - timedelta(hours=hours), ProbeOutcome.ok, 50), None)
    mine = {n for n in names if shards.in_shard(n, shards.parse_shard("1/2"))}
    assert 0 < len(mine) < len(names)
    pruned = store.prune_fast_runs(db, NOW - timedelta(hours=48), functools.partial(shards.in_shard, shard=shards.parse_shard("1/2")))
    assert pruned == 12 * len(mine)  # hours 60 to 49; each server's latest run (an hour ago) answered and is recent
    old = dict(db.execute("select server_id, count(*) from probe_runs where started_at < ? group by server_id",
                          [store.iso(NOW - timedelta(hours=48))]).fetchall())
    assert {n: old.get(n, 0) for n in names} == {n: 0 if n in mine else 12 for n in names}
    assert [t for t in db.table_names() if any(key.other_table == "probe_runs" for key in db[t].foreign_keys)] == []
