"""Discover: read each source, merge its servers into the catalog with provenance."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, Sequence

from sqlite_utils import Database

from pipeline import db as store
from pipeline.models import CatalogEntry, StageReport
from pipeline.progress import Progress


@dataclass
class SourceBatch:
    """What one source yielded: valid entries, and each malformed one named with where and what."""

    entries: list[CatalogEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Source(Protocol):
    name: str

    def read(self) -> SourceBatch: ...


def run_discover(db: Database, *, sources: Sequence[Source], now: datetime, progress: Progress | None = None) -> StageReport:
    started = time.monotonic()
    report = StageReport(stage="discover")
    progress = progress or Progress("discover", len(sources))
    for source in sources:
        batch = source.read()
        for problem in batch.problems:
            progress.note(f"{source.name}: skipped {problem}")
        counts = store.upsert_catalog(db, source.name, batch.entries, now)
        for key, value in counts.items():
            report.counts[key] = report.counts.get(key, 0) + value
        report.counts["skipped"] = report.counts.get("skipped", 0) + len(batch.problems)
        report.failures += len(batch.problems)
        progress.step(source.name, f"{len(batch.entries)} servers, {len(batch.problems)} skipped", ok=not batch.problems)
    report.seconds = time.monotonic() - started
    return report
