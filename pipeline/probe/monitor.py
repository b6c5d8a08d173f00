"""The fast-probe suite (connect + handshake + ping) on a schedule, feeding reliability: `scoreboard monitor`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.config import Settings
from pipeline.fleet.budget import NO_BUDGET, Deadline
from pipeline.fleet.optout import OptOutList
from pipeline.models import Server, StageReport
from pipeline.probe import run_probe
from pipeline.probe.sandbox import Sandbox
from pipeline.progress import Progress
from pipeline.sandbox.install import Installer

RAW_FAST_KEPT = timedelta(hours=48)  # issue 18: raw fast runs are kept 48 hours; the daily rollups are kept for good


def run_monitor(
    db: Database,
    *,
    servers: Sequence[Server],
    installer: Installer,
    sandbox: Sandbox | None = None,
    settings: Settings,
    now: datetime,
    run_id: int | None = None,
    progress: Progress | None = None,
    deadline: Deadline = NO_BUDGET,
    keep_raw: timedelta | None = RAW_FAST_KEPT,
    optout: OptOutList = OptOutList(),
    prune_only: Callable[[str], bool] | None = None,
) -> StageReport:
    """Fast-probe `servers`, then prune raw fast runs older than `keep_raw` (their daily rollups stay; deviation 88): of
    every server, or of those `prune_only` accepts (a shard's)."""
    report = run_probe(
        db, servers=servers, installer=installer, sandbox=sandbox, settings=settings, now=now,
        kind="fast", run_id=run_id, progress=progress, deadline=deadline, optout=optout,
    )
    if keep_raw is not None and not report.interrupted and (pruned := store.prune_fast_runs(db, now - keep_raw, prune_only)):
        report.counts["pruned_raw"] = pruned
    return report
