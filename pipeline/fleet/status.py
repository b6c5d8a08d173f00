"""Watching ourselves: each stage's last run and last success, the fast probes' success rate, and the alerts of seed 000's
Infrastructure Monitoring (fast probes silent for 15 minutes, a success rate under 50%, deep probes silent for 36 hours),
with one of ours: the last run of a stage failed (deviation 99).

`fleet_status` is pure over rows the store reads; `status_of` reads them. The status page, status.json, the feed's alert
entries and `scoreboard status` all show what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, store
from pipeline.outcomes import ANSWERED, GATED, NOT_MEASURED

FAST_SILENCE = timedelta(minutes=15)  # seed 000: "fast probes haven't run in 15 minutes"
DEEP_SILENCE = timedelta(hours=36)  # seed 000: "deep probes haven't run in 36 hours"
RATE_FLOOR = 0.5  # seed 000: "probe success rate drops below 50%"
RATE_WINDOW_MINUTES = 60  # the rate is over the fast probes of the last hour (deviation 100)
RATE_MIN_RUNS = 10  # fewer runs than this in the window say too little to page anyone
RATE_LOOKBACK = timedelta(hours=24)  # how far back an ongoing rate alert's start is looked for
FAILED = ("failed", "abandoned")
RATE_ALERT = "probe_success_rate"  # abandoned: killed before it could say how it ended (the next run of the stage found it)

# The stages in the order of the job graph, and how each is named when a run was limited to one transport.
STAGE_ORDER = ("discover", "analyze", "probe", "monitor", "judge", "score", "build", "merge")
DESCRIPTIONS = {"discover": "discovery", "analyze": "static analysis", "probe": "deep probes", "monitor": "fast probes", "judge": "judges",
                "score": "scoring", "build": "site build", "merge": "shard merge"}
TRANSPORT_DESCRIPTIONS = {("probe", "stdio"): "sandbox probes", ("probe", "remote"): "deep probes of remote servers",
                          ("monitor", "stdio"): "fast probes in the sandbox", ("monitor", "remote"): "fast probes of remote servers"}


class RunSummary(BaseModel):
    """One `runs` row as the status shows it."""

    id: int
    started_at: datetime
    finished_at: datetime | None
    seconds: float | None  # the stage's own timing, else finished minus started; None while it runs
    status: str  # running, ok, interrupted, failed, abandoned
    counts: dict[str, Any]
    failures: int
    skipped: dict[str, Any]  # the counts a budget or a rule left undone (keys starting with "skipped")
    shard: str | None
    error: str | None  # why a failed run stopped


class StageStatus(BaseModel):
    stage: str
    transport: str | None  # `--transport` of its runs; None for runs over every server
    label: str  # the command: "probe", "probe --transport stdio"
    description: str
    last: RunSummary
    last_ok: RunSummary | None


class ProbeRate(BaseModel):
    """The fast probes of the last hour of servers that completed a handshake at least once (deviation 100)."""

    window_start: datetime
    window_end: datetime
    runs: int  # measured runs: a 429, an opt-out and our own refusal are left out
    succeeded: int  # answered, or reached an authentication gate
    rate: float | None  # None with fewer than `min_runs` runs
    floor: float = RATE_FLOOR
    min_runs: int = RATE_MIN_RUNS


class Alert(BaseModel):
    key: str  # stable: fast_probes_silent, probe_success_rate, deep_probes_silent, failed:<stage>[:<transport>]
    title: str  # stable while the alert lasts: the workflow's issue is found by it
    detail: str
    since: datetime  # when the condition began


class FleetStatus(BaseModel):
    generated_at: datetime
    engine_version: str
    stages: list[StageStatus]
    fast_probe_rate: ProbeRate
    alerts: list[Alert]


def status_of(db: Database, now: datetime) -> FleetStatus:
    """The fleet's status now, read from the database: the last hour's fast probes, and only while their rate is under the
    floor the lookback's too (to find when that began)."""
    runs, first_run = store.latest_runs(db), store.first_run_at(db)
    hour = _minute(now) - timedelta(minutes=RATE_WINDOW_MINUTES - 1)
    found = fleet_status(runs, first_run, store.fast_probe_minutes(db, hour, now), now)
    if any(alert.key == RATE_ALERT for alert in found.alerts):
        found = fleet_status(runs, first_run, store.fast_probe_minutes(db, hour - RATE_LOOKBACK, now), now)
    return found


def fleet_status(runs: Sequence[dict[str, Any]], first_run: datetime | None, minutes: Iterable[tuple[str, str, int]], now: datetime) -> FleetStatus:
    """`runs`: the last run and last success of each stage and transport (store.latest_runs); `first_run`: when the history
    begins; `minutes`: fast-probe outcomes per minute (store.fast_probe_minutes)."""
    stages = _stages(runs)
    rates = _rates(minutes, now)
    alerts = [*_silences(stages, first_run, now), *_rate_alert(rates, now), *_failures(stages)]
    return FleetStatus(generated_at=now, engine_version=ENGINE_VERSION, stages=stages, fast_probe_rate=rates[0][1], alerts=alerts)


def _summary(row: dict[str, Any]) -> RunSummary:
    started = store.parse_iso(row["started_at"])
    finished = store.parse_iso(row["finished_at"]) if row["finished_at"] else None
    counts = row["counts"]
    seconds = row["seconds"] if row["seconds"] is not None else (finished - started).total_seconds() if finished else None
    return RunSummary(id=row["id"], started_at=started, finished_at=finished, seconds=seconds, status=row["status"],
                      counts={k: v for k, v in counts.items() if k != "error"}, failures=row["failures"] or 0,
                      skipped={k: v for k, v in counts.items() if k.startswith("skipped")}, shard=row.get("shard"),
                      error=counts.get("error") if row["status"] == "failed" else None)


def _stages(runs: Sequence[dict[str, Any]]) -> list[StageStatus]:
    grouped: dict[tuple[str, str | None], dict[str, RunSummary]] = {}
    for row in runs:
        slot = grouped.setdefault((row["stage"], row["transport"]), {})
        summary = _summary(row)
        if row["last"]:
            slot["last"] = summary
        if row["status"] == "ok":
            slot.setdefault("last_ok", summary)  # newest first: the first ok row is the last success
    order = {stage: place for place, stage in enumerate(STAGE_ORDER)}
    stages = []
    for (stage, transport), found in sorted(grouped.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0][0], item[0][1] or "")):
        label = f"{stage} --transport {transport}" if transport else stage
        description = TRANSPORT_DESCRIPTIONS.get((stage, transport)) or DESCRIPTIONS.get(stage, stage)
        stages.append(StageStatus(stage=stage, transport=transport, label=label, description=description, last=found["last"],
                                  last_ok=found.get("last_ok")))
    return stages


def _silences(stages: list[StageStatus], first_run: datetime | None, now: datetime) -> list[Alert]:
    """Fast and deep probes of remote servers that have not succeeded for too long. With no success ever, the silence is
    counted from the first run of any stage, and a database with no runs at all raises nothing (deviation 99)."""
    alerts = []
    for key, stage, limit, what in (("fast_probes_silent", "monitor", FAST_SILENCE, "Fast probes"),
                                    ("deep_probes_silent", "probe", DEEP_SILENCE, "Deep probes")):
        successes = [s.last_ok.finished_at for s in stages if s.stage == stage and s.transport != "stdio" and s.last_ok and s.last_ok.finished_at]
        last = max(successes, default=None)
        since = last or first_run
        if since is None or now - since <= limit:
            continue
        words = _duration(limit)
        ago = f"the last successful run finished {_stamp(last)}, {_duration(now - last)} ago" if last else \
            f"no run has succeeded since the history began ({_stamp(first_run)})"
        alerts.append(Alert(key=key, title=f"{what} have not run for {words}", detail=f"{what.lower()}: {ago}", since=since + limit))
    return alerts


def _minute(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(second=0, microsecond=0)


def _rates(minutes: Iterable[tuple[str, str, int]], now: datetime) -> list[tuple[datetime, ProbeRate]]:
    """The rate over the trailing hour ending in each minute, from now's back while it stays under the floor (at most the
    lookback), newest first: the first is now's."""
    end = _minute(now)
    steps = int(RATE_LOOKBACK / timedelta(minutes=1)) + 1
    runs, succeeded = [0] * (steps + RATE_WINDOW_MINUTES), [0] * (steps + RATE_WINDOW_MINUTES)
    for minute, outcome, count in minutes:
        back = int((end - datetime.fromisoformat(minute).replace(tzinfo=timezone.utc)) / timedelta(minutes=1))
        if outcome in NOT_MEASURED or not 0 <= back < len(runs):
            continue
        runs[back] += count
        succeeded[back] += count if outcome in ANSWERED | GATED else 0
    rates = []
    for step in range(steps):
        minute = end - timedelta(minutes=step)
        counted, ok = sum(runs[step:step + RATE_WINDOW_MINUTES]), sum(succeeded[step:step + RATE_WINDOW_MINUTES])
        rate = ok / counted if counted >= RATE_MIN_RUNS else None
        rates.append((minute, ProbeRate(window_start=minute - timedelta(minutes=RATE_WINDOW_MINUTES - 1),
                                        window_end=now if step == 0 else minute + timedelta(minutes=1), runs=counted, succeeded=ok, rate=rate)))
        if rate is None or rate >= RATE_FLOOR:
            break
    return rates


def _rate_alert(rates: list[tuple[datetime, ProbeRate]], now: datetime) -> list[Alert]:
    """The rate is under the floor now: the alert began in the first minute of the unbroken run of such hours (within the lookback)."""
    failing = [(minute, rate) for minute, rate in rates if rate.rate is not None and rate.rate < RATE_FLOOR]
    if not failing or failing[0][0] != _minute(now):
        return []
    current = failing[0][1]
    assert current.rate is not None
    detail = (f"{current.succeeded} of {current.runs} fast probes ({current.rate:.0%}) of servers that answered before succeeded "
              f"from {_stamp(current.window_start)} to {_stamp(now)}")
    return [Alert(key=RATE_ALERT, title=f"Probe success rate under {RATE_FLOOR:.0%}", detail=detail, since=failing[-1][0])]


def _failures(stages: list[StageStatus]) -> list[Alert]:
    alerts = []
    for stage in stages:
        if stage.last.status in FAILED:
            key = f"failed:{stage.stage}" + (f":{stage.transport}" if stage.transport else "")
            why = stage.last.error or "killed before it could record how it ended (found by the next run)"
            alerts.append(Alert(key=key, title=f"Stage {stage.label} failed",
                                detail=f"the run started {_stamp(stage.last.started_at)} {stage.last.status}: {why}"[:500],
                                since=stage.last.finished_at or stage.last.started_at))
    return alerts


def _stamp(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} minutes"
    return f"{minutes // 60} hours" if minutes < 72 * 60 else f"{minutes // 1440} days"


def status_lines(status: FleetStatus) -> list[str]:
    """The status as the terminal shows it: one line per stage, the rate, then the alerts."""
    lines = [f"{'stage':<26} {'status':<11} {'started':<21} {'took':>8} {'fail':>5}  last success          counts"]
    for stage in status.stages:
        last = stage.last
        took = f"{last.seconds:.0f}s" if last.seconds is not None else "-"
        ok = _stamp(stage.last_ok.started_at) if stage.last_ok else "never"
        counts = ", ".join(f"{k} {v}" for k, v in last.counts.items())
        lines.append(f"{stage.label:<26} {last.status:<11} {_stamp(last.started_at):<21} {took:>8} {last.failures:>5}  {ok:<21} {counts}"[:240])
    rate = status.fast_probe_rate
    shown = f"{rate.rate:.0%}" if rate.rate is not None else f"not rated (fewer than {rate.min_runs} runs)"
    lines.append(f"fast-probe success, last hour: {shown} ({rate.succeeded} of {rate.runs}, servers that answered before)")
    lines += [f"ALERT {alert.title}: {alert.detail} (since {_stamp(alert.since)})" for alert in status.alerts] or ["no alerts"]
    return lines
