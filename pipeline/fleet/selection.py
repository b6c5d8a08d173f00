"""Which servers a stage run works on, and in what order: of the transport asked for, oldest examined first (so a run its
budget cut short is taken up where it stopped), only the due ones when asked (pipeline.fleet.cadence)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.fleet import cadence
from pipeline.listing_only import listing_only
from pipeline.models import Server

Stage = Literal["analyze", "probe", "monitor", "judge"]


def selected(db: Database, stage: Stage, servers: Sequence[Server], now: datetime, *, due: bool = False,
             transport: Literal["remote", "stdio"] | None = None) -> list[Server]:
    if transport is not None:
        servers = [s for s in servers if s.is_local == (transport == "stdio")]
    last = store.last_examined(db, stage)
    if not due:
        return cadence.oldest_first(servers, last, lambda s: s.id)
    servers = [s for s in servers if not listing_only(s)]  # never examined, so never "done": they would head every batch
    if stage == "analyze":
        return cadence.due_for_analysis(servers, last, now)
    if stage == "monitor":
        return cadence.due_for_monitor(servers, last, now)
    if stage == "probe":
        return cadence.due_for_probe(servers, last, now, store.sandboxed_versions(db))
    return cadence.due_for_judging(servers, last, now)
