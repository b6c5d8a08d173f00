"""The history a month of the real cadence leaves in the database, written without running a month of probes.

On top of bench/synthetic.py's fleet (30 days of fast-probe daily rollups, one to three probes, an analysis each), up
to `end` (the start of the real day run on top):
- the remote share's URLs point at the loopback endpoints (bench/fleet_endpoints.py), a black-holed share included;
- raw fast-probe runs of every remote server every 20 minutes for the last 48 hours (older ones are rolled up and
  dropped), their evidence a real fast probe's of an endpoint of the same behaviour;
- a deep probe of every remote server every day for 30 days (its tool list unchanged: stored once, as record_probe
  stores it), a sandbox run of every local server every week;
- a re-analysis of a quarter of the servers (their sources changed once in the month);
- a score_history row per server, rubric and day for 30 days (the cards scored once, copied to each day);
- the `runs` rows of the job graph's stage runs (per shard: fast probes every 15 minutes, analysis hourly, the rest daily).
Deterministic for a fleet: every choice hashes the server id.
"""

from __future__ import annotations

import hashlib
import io
from datetime import datetime, timedelta, timezone
from typing import Callable

import anyio
from sqlite_utils import Database

from bench.fleet_endpoints import Endpoints
from pipeline import ENGINE_VERSION
from pipeline.config import Settings
from pipeline.probe.fast import raw_fast_probe
from pipeline.probe.raw import Limits
from pipeline.progress import Progress
from pipeline.score import run_score
from pipeline.store import dumps, iso
from pipeline.store.encoding import cleaned_json

# Of the remote servers not black-holed, which behave how (bench/fleet_endpoints.py): most answer, a few are slow,
# failing or behind a login.
SHARES = (("ok", 0.70), ("legacy", 0.12), ("slow", 0.06), ("failing", 0.06), ("auth", 0.06))
FAST_EVERY = timedelta(minutes=20)
RAW_KEPT = timedelta(hours=48)
DAYS = 30


def _fraction(server_id: str, salt: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{salt}:{server_id}".encode()).digest()[:8], "big") / 2**64


def behaviour(server_id: str) -> str:
    point, total = _fraction(server_id, "behaviour"), 0.0
    for name, share in SHARES:
        total += share
        if point < total:
            return name
    return SHARES[0][0]


def point_remotes(db: Database, endpoints: Endpoints, black_holed: int) -> dict[str, str]:
    """Every remote server's URL on the loopback endpoints; the first `black_holed` of them (in hash order) at the black
    hole. Returns each remote server's behaviour."""
    remote = sorted((r["id"] for r in db.query("select id from servers where remote_url is not null")), key=lambda s: _fraction(s, "hole"))
    kinds = {sid: ("black_holed" if n < black_holed else behaviour(sid)) for n, sid in enumerate(remote)}
    with db.atomic():
        db.conn.executemany("update servers set remote_url = ?, transport = 'streamable-http' where id = ?",
                            [(endpoints.url(kind, n), sid) for n, (sid, kind) in enumerate(sorted(kinds.items()))])
    return kinds


def fast_templates(endpoints: Endpoints, deadline: float) -> dict[str, dict]:
    """A real fast probe's stored columns for each behaviour: what the history's raw runs copy."""
    found = {}
    for kind in ("ok", "legacy", "slow", "failing", "auth", "black_holed"):
        result = anyio.run(lambda: raw_fast_probe("template", endpoints.url(kind, 0), limits=Limits(allow_private=True, connect_timeout=deadline),
                                                  total_timeout=Settings().fast_probe_timeout, now=datetime.now(timezone.utc)))
        evidence = cleaned_json(result)
        found[kind] = {"duration_ms": round(result.duration_ms, 2), "outcome": result.outcome.value, "detail": result.detail,
                       "era": result.era, "protocol_version": result.protocol_version, "handshake": result.handshake,
                       "connect_ms": result.connect_ms, "ping_ms": result.ping_ms, "evidence": evidence}
    return found


def write_history(db: Database, kinds: dict[str, str], templates: dict[str, dict], end: datetime, shards: int,
                  note: Callable[[str], None] = lambda _: None) -> dict[str, int]:
    """Every row of the month before `end` (see the module's docstring); returns rows added per table."""
    before = {t: db[t].count for t in ("probe_runs", "tool_lists", "analyses", "score_history", "runs")}
    note("raw fast runs of the last 48 h")
    _raw_fast_runs(db, kinds, templates, end)
    note("daily deep probes and weekly sandbox runs")
    _daily_probes(db, end)
    note("re-analyses")
    _reanalyses(db, end)
    note("30 days of score history")
    _score_history(db, end)
    note("the job graph's runs")
    _stage_runs(db, end, shards)
    return {t: db[t].count - n for t, n in before.items()}


def _raw_fast_runs(db: Database, kinds: dict[str, str], templates: dict[str, dict], end: datetime) -> None:
    columns = "server_id, kind, started_at, duration_ms, transport, outcome, detail, era, protocol_version, handshake, connect_ms, ping_ms, " \
              "evidence, engine_version"
    sql = f"insert into probe_runs ({columns}) values ({', '.join('?' * 14)})"
    steps = int(RAW_KEPT / FAST_EVERY)
    with db.atomic():
        for sid, kind in kinds.items():
            t = templates[kind]
            offset = timedelta(seconds=_fraction(sid, "phase") * FAST_EVERY.total_seconds())
            rows = []
            for step in range(steps):
                started = end - RAW_KEPT + offset + step * FAST_EVERY
                evidence = dict(t["evidence"], server_id=sid, started_at=iso(started))
                rows.append((sid, "fast", iso(started), t["duration_ms"], "streamable-http", t["outcome"], t["detail"], t["era"],
                             t["protocol_version"], t["handshake"], t["connect_ms"], t["ping_ms"], dumps(evidence), ENGINE_VERSION))
            db.conn.executemany(sql, rows)


PROBE_COLUMNS = "server_id, kind, started_at, duration_ms, transport, outcome, detail, era, protocol_version, handshake, connect_ms, " \
                "ping_ms, tool_count, evidence, engine_version, tools_hash"


def _daily_probes(db: Database, end: datetime) -> None:
    """Each server's latest deep (daily) or sandbox (weekly) probe, copied back over the month, each naming the same tool
    list (stored once, as record_probe stores an unchanged list: deviation 110)."""
    copied = PROBE_COLUMNS.replace("started_at", "strftime('%Y-%m-%dT%H:%M:%f+00:00', :end, '-' || d.n || ' days', "
                                               "'+' || (abs(random()) % 3600) || ' seconds')")
    with db.atomic():
        db.execute("create temp table latest as select max(id) as id from probe_runs where kind in ('deep', 'sandbox') group by server_id")
        db.execute("delete from probe_runs where kind in ('deep', 'sandbox') and id not in (select id from latest)")
        db.execute(f"""
            insert into probe_runs ({PROBE_COLUMNS})
            with recursive d(n) as (select 1 union all select n + 1 from d where n < {DAYS - 1})
            select {copied}
            from probe_runs p join latest l on p.id = l.id join d on p.kind = 'deep' or d.n % 7 = 0
        """, {"end": iso(end)})
        db.execute("drop table latest")


def _reanalyses(db: Database, end: datetime) -> None:
    with db.atomic():
        db.execute("""
            insert into analyses (server_id, analyzed_at, fetcher, source_ref, ok, error, license, spec_version, result, engine_version)
            select server_id, strftime('%Y-%m-%dT%H:%M:%f+00:00', :end, '-' || (1 + abs(random()) % 29) || ' days'),
                   fetcher, source_ref, ok, error, license, spec_version, result, engine_version
            from analyses where abs(random()) % 4 = 0
        """, {"end": iso(end)})


def _score_history(db: Database, end: datetime) -> None:
    servers = list(db.query("select id from servers"))
    from pipeline import store

    active = store.active_servers(db)
    run_score(db, servers=active, now=end - timedelta(days=1), progress=Progress("score", len(servers), stream=io.StringIO()))
    with db.atomic():
        db.execute(f"""
            insert or ignore into score_history (server_id, rubric, day, composite, grade, visibility, rules_version, scored_at)
            with recursive d(n) as (select 2 union all select n + 1 from d where n < {DAYS})
            select server_id, rubric, date(:end, '-' || d.n || ' days'), composite, grade, visibility, rules_version,
                   strftime('%Y-%m-%dT%H:%M:%f+00:00', :end, '-' || d.n || ' days')
            from score_history join d where day = date(:end, '-1 days')
        """, {"end": iso(end)})


def _stage_runs(db: Database, end: datetime, shards: int) -> None:
    """What the month's stage runs leave in `runs`: per day, every shard's 96 fast-probe runs, 24 analysis batches, one deep
    probe and one judge run; one score, build and publish."""
    rows = []
    for day in range(1, DAYS + 1):
        start = end - timedelta(days=day)
        plan = [("monitor", 96, shards), ("analyze", 24, shards), ("probe", 1, shards), ("judge", 1, shards), ("score", 1, 1), ("build", 1, 1)]
        for stage, per_day, jobs in plan:
            for k in range(per_day):
                moment = start + timedelta(days=1) * k / per_day
                for shard in range(1, jobs + 1):
                    rows.append((stage, iso(moment), iso(moment + timedelta(minutes=3)), "ok", dumps({"ok": 60, "timeout": 2}), 2, 180.0,
                                 ENGINE_VERSION, dumps({"shard": f"{shard}/{jobs}"})))
    with db.atomic():
        db.conn.executemany("insert into runs (stage, started_at, finished_at, status, counts, failures, seconds, engine_version, args) "
                            "values (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
