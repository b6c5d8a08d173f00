"""Discover: read each source, deduplicate their servers into one catalog, keep every record's provenance.

Sources are read whole first (a source that fails is recorded and vouches for nothing this run);
then every listing is merged across sources (pipeline.discover.merge), the changes to the stored
catalog are planned (pipeline.discover.plan) and the store applies them in one transaction.
Download counts are an optional enrichment step afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Protocol, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.config import Settings
from pipeline.discover import sources as registered
from pipeline.discover.base import SourceBatch
from pipeline.discover.http import SourceHTTP
from pipeline.discover.merge import merge_listings
from pipeline.discover.plan import plan_catalog
from pipeline.fleet.budget import NO_BUDGET, SKIPPED, Deadline
from pipeline.fleet.optout import DELISTED_BY, OptOutList
from pipeline.models import StageReport
from pipeline.progress import Progress

__all__ = ["SourceBatch", "Source", "CallableSource", "run_discover", "snapshot_sources", "online_sources", "SnapshotDownloads"]

DOWNLOADS_EVERY = timedelta(days=7)  # seed 000: npm and PyPI downloads are refreshed weekly


class Source(Protocol):
    name: str

    def read(self) -> SourceBatch: ...


@dataclass
class CallableSource:
    """A source whose reading is one call: a snapshot reader bound to its directory, or a fetcher bound to its client."""

    name: str
    reader: Callable[[], SourceBatch]

    def read(self) -> SourceBatch:
        return self.reader()


class Downloads(Protocol):
    def weekly(self, packages: Sequence[tuple[str, str]], progress: Progress | None = None) -> tuple[dict[tuple[str, str], float], list[str]]: ...


def snapshot_sources(directory: Path, names: Sequence[str] | None = None) -> list[CallableSource]:
    """The registered sources saved under `directory/<source>/`, in seed order; `names` selects some."""
    wanted = list(names) if names else [n for n in registered.names() if (directory / n).is_dir()]
    registered.check_known(wanted)
    missing = [n for n in wanted if not (directory / n).is_dir()]
    if missing:
        raise ValueError(f"{directory} has no folder for: {', '.join(missing)}")
    return [CallableSource(name, lambda read=registered.get(name).read_snapshot, path=directory / name: read(path)) for name in wanted]


def online_sources(http: SourceHTTP, settings: Settings, names: Sequence[str] | None = None) -> list[CallableSource]:
    """The registered sources read live through `http`, with credentials from `settings`."""
    wanted = list(names) if names else registered.names()
    registered.check_known(wanted)
    return [CallableSource(name, lambda fetch=registered.get(name).fetch: fetch(http, settings)) for name in wanted]


@dataclass
class SnapshotDownloads:
    """Weekly download counts saved under `<snapshot>/npm-pypi-downloads/` (npm point or bulk bodies, PyPI Stats `recent` bodies)."""

    directory: Path

    def weekly(self, packages: Sequence[tuple[str, str]], progress: Progress | None = None) -> tuple[dict[tuple[str, str], float], list[str]]:
        from pipeline.discover.downloads import read_snapshot  # files on disk, read at once: nothing to report as it goes

        return read_snapshot(self.directory)


def run_discover(
    db: Database,
    *,
    sources: Sequence[Source],
    now: datetime,
    downloads: Downloads | None = None,
    progress: Progress | None = None,
    deadline: Deadline = NO_BUDGET,
    optout: OptOutList = OptOutList(),
) -> StageReport:
    """Read each source, merge what was read into the catalog. Once `deadline` passes no further source is read (a source
    not read deactivates nothing, as an incomplete one), nor are download counts fetched: skipped_budget counts them.
    `optout`: the repository's opt-out file; the servers its delisting entries name are taken off the scoreboard, and a
    delisting whose entry was removed is lifted (deviation 101)."""
    started = time.monotonic()
    report = StageReport(stage="discover")
    lifted = _lift_withdrawn(db, optout)  # before the plan: a source listing the server this run makes it active again
    progress = progress or Progress("discover", len(sources) + 1)
    listings, entries, ran = [], [], []
    listed: dict[str, int] = {}
    skipped = 0
    aliases = store.repo_aliases(db)
    for position, source in enumerate(sources):
        if deadline.expired():
            report.counts[SKIPPED] = len(sources) - position
            progress.note(f"budget spent: {len(sources) - position} sources not read ({', '.join(s.name for s in sources[position:])})")
            break
        read_started = time.monotonic()
        try:
            batch = source.read()
        except Exception as exc:  # noqa: BLE001 - one broken source never stops the others
            batch = SourceBatch(problems=[f"failed: {type(exc).__name__}: {exc}"], complete=False)
        for problem in batch.problems[:20]:
            progress.note(f"{source.name}: {problem}")
        if len(batch.problems) > 20:
            progress.note(f"{source.name}: … and {len(batch.problems) - 20} more problems (table discovery_problems)")
        store.record_problems(db, source.name, batch.problems, now)
        store.save_aliases(db, source.name, batch.aliases, now)
        aliases.update(batch.aliases)
        listings += batch.listings
        entries += batch.entries
        if batch.complete:
            ran.append(source.name)
        listed[f"listed:{source.name}"] = len(batch.listings) + len(batch.entries)
        skipped += len(batch.problems)
        report.failures += len(batch.problems)
        report.phases[f"read:{source.name}"] = time.monotonic() - read_started
        state = "" if batch.complete else "; incomplete, so it deactivates nothing"
        progress.step(source.name, f"{len(batch.listings) + len(batch.entries)} servers, {len(batch.problems)} skipped{state}", ok=not batch.problems)
    merge_started = time.monotonic()
    catalog = store.catalog_state(db)
    merged = merge_listings(listings, aliases, catalog.keys)
    plan = plan_catalog(catalog, [*entries, *merged], ran, now)
    report.phases["merge"] = time.monotonic() - merge_started
    write_started = time.monotonic()
    counts, refused = store.apply_catalog_plan(db, plan)
    for refusal in refused:
        report.storage_failed()
        progress.note(f"{refusal.server_id}: {refusal}")
    report.phases["write"] = time.monotonic() - write_started
    report.counts.update({**counts, "skipped": skipped, **listed})
    delisted = _delist_named(db, optout, now)
    report.counts.update({k: v for k, v in {"delisted_by_file": delisted, "delisting_lifted": lifted}.items() if v})
    progress.step("catalog", f"{len(listings)} listings merged into {len(merged)} servers; " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if downloads is not None and deadline.expired():
        report.counts[SKIPPED] = report.counts.get(SKIPPED, 0) + 1
    elif downloads is not None:
        _enrich_downloads(db, downloads, now, report, progress)
    report.seconds = time.monotonic() - started
    return report


def _lift_withdrawn(db: Database, optout: OptOutList) -> int:
    """Lift the delistings the file made whose entry is gone (or no longer asks to delist)."""
    held = store.delisted(db, by=DELISTED_BY)
    keys = store.naming_keys(db, held) if held else {}
    withdrawn = [server_id for server_id in held if not getattr(optout.match(server_id, keys.get(server_id, set())), "delist", False)]
    store.lift_delisting(db, withdrawn)
    return len(withdrawn)


def _delist_named(db: Database, optout: OptOutList, now: datetime) -> int:
    """Delist the servers the file's delisting entries name that no delisting holds yet (a server's own request stays its own)."""
    if not any(entry.delist for entry in optout.entries):
        return 0
    held = set(store.delisted(db))
    named = 0
    for server_id, keys in sorted(store.naming_keys(db).items()):
        entry = optout.match(server_id, keys)
        if entry is not None and entry.delist and server_id not in held:
            store.delist(db, server_id, now, by=DELISTED_BY, reference=entry.cited)
            named += 1
    return named


def _enrich_downloads(db: Database, downloads: Downloads, now: datetime, report: StageReport, progress: Progress) -> None:
    """Weekly npm and PyPI download counts for servers whose count is older than a week."""
    due = store.packages_due_for_downloads(db, now - DOWNLOADS_EVERY)
    if not due:
        return
    counts, problems = downloads.weekly(sorted(due), progress=progress)
    store.record_problems(db, "npm-pypi-downloads", problems, now)
    updated = store.save_download_counts(db, due, counts, now)
    report.counts["download_counts"] = updated
    report.failures += len(problems)
    progress.note(f"downloads: {updated} servers updated from {len(counts)} of {len(due)} packages; {len(problems)} problems")
