"""The fast-probe suite (connect + handshake + ping) on a schedule, feeding reliability: `scoreboard monitor`."""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from sqlite_utils import Database

from pipeline.config import Settings
from pipeline.fleet.optout import OptOutList
from pipeline.models import Server, StageReport
from pipeline.probe import run_probe
from pipeline.probe.sandbox import Sandbox
from pipeline.progress import Progress
from pipeline.sandbox.install import Installer


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
    optout: OptOutList = OptOutList(),
) -> StageReport:
    return run_probe(
        db, servers=servers, installer=installer, sandbox=sandbox, settings=settings, now=now,
        kind="fast", run_id=run_id, progress=progress, optout=optout,
    )
