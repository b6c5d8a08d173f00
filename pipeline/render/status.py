"""The status page's context, status.json and the feed's alert entries: pure functions of the fleet's status."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pipeline.fleet.status import FleetStatus, RunSummary

STATUS_PAGE = "status/index.html"
STATUS_JSON = "status.json"


def _when(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


def _took(run: RunSummary) -> str:
    if run.seconds is None:
        return "–"
    minutes, seconds = divmod(round(run.seconds), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def status_context(status: FleetStatus) -> dict[str, Any]:
    """One row per stage (its last run and last success), the success rate and the alerts, as the page prints them."""
    rows = []
    for stage in status.stages:
        last = stage.last
        rows.append({"label": stage.label, "description": stage.description, "status": last.status, "started": _when(last.started_at),
                     "took": _took(last), "failures": last.failures, "shard": last.shard, "error": last.error,
                     "counts": ", ".join(f"{k} {v}" for k, v in last.counts.items() if k not in last.skipped),
                     "skipped": ", ".join(f"{k} {v}" for k, v in last.skipped.items()),
                     "last_ok": _when(stage.last_ok.started_at) if stage.last_ok else "never", "bad": last.status in ("failed", "abandoned")})
    rate = status.fast_probe_rate
    return {"generated": _when(status.generated_at), "rows": rows, "alerts": [{**a.model_dump(), "since": _when(a.since)} for a in status.alerts],
            "rate": None if rate.rate is None else f"{rate.rate:.0%}", "rate_runs": rate.runs, "rate_succeeded": rate.succeeded,
            "rate_min_runs": rate.min_runs, "rate_from": _when(rate.window_start)}


def status_json(status: FleetStatus) -> dict[str, Any]:
    """status.json: the status as it is computed (fields documented in the README)."""
    return status.model_dump(mode="json")


def feed_alerts(status: FleetStatus, site_url: str) -> list[dict[str, str]]:
    """The alerts as Atom entries: one per alert and start, so an alert that lasts is one entry and one that comes back is a new one."""
    return [{"id": f"{site_url}{STATUS_PAGE}#{alert.key}-{alert.since.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}", "title": f"Alert: {alert.title}",
             "link": f"{site_url}{STATUS_PAGE}", "updated": f"{alert.since.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%SZ}", "summary": alert.detail}
            for alert in status.alerts]
