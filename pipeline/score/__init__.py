"""Score: turn stored evidence into score cards, with no network. Rescoring is always safe."""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from datetime import datetime
from typing import Iterable, Iterator, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.collector import without_cyclic_gc
from pipeline.lifetime import die_with_parent
from pipeline.listing_only import listing_only
from pipeline.models import ScoreCard, Server, StageReport
from pipeline.progress import Progress
from pipeline.score import registry
from pipeline.score.facts import Facts, gather_many

WRITE_BATCH = 2000  # cards (of whole servers) per write transaction
PARALLEL_FROM = 2000  # below this many servers, worker processes cost more than they save
TASK_SIZE = 250  # servers per worker task


def score_all(facts: Facts) -> list[ScoreCard]:
    """Every registered rubric's card for one server, the headline first: pure, deterministic."""
    return [rubric.score(facts) for rubric in registry.RUBRICS]


def _summary(card: ScoreCard) -> str:
    if card.composite is None:
        return f"unscored ({card.dimension_indicator})"
    return f"{card.composite:.1f} {card.grade} ({card.dimension_indicator}, {card.visibility})"


def _score_rows(facts_iter: Iterator[Facts], now: datetime) -> list[tuple[str, str, bool, list[store.CardRow]]]:
    out = []
    for facts in facts_iter:
        cards = score_all(facts)
        out.append((facts.server.id, _summary(cards[0]), cards[0].grade is not None, [store.card_row(c, now) for c in cards]))
    return out


_worker: dict = {}


def _worker_init(path: str, parent: int) -> None:
    # Each worker reads its own connection; the parent alone writes. It dies with the parent, however that ends.
    import sqlite3

    die_with_parent(parent)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    _worker["db"] = Database(conn)
    _worker["duplicates"] = None


def _worker_task(server_ids: list[str], now: datetime) -> list[tuple[str, str, bool, list[store.CardRow]]]:
    db = _worker["db"]
    if _worker["duplicates"] is None:
        _worker["duplicates"] = store.duplicate_descriptions(db)
    with without_cyclic_gc():
        servers = store.active_servers(db, server_ids)
        return _score_rows(gather_many(db, servers, now, duplicates=_worker["duplicates"]), now)


def _parallel(path: str, servers: Sequence[Server], now: datetime, workers: int) -> Iterator[tuple[str, str, bool, list[store.CardRow]]]:
    ids = [s.id for s in servers]
    tasks = [ids[i : i + TASK_SIZE] for i in range(0, len(ids), TASK_SIZE)]
    with ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, initargs=(path, os.getpid())) as pool:
        # Bounded in flight, so results never pile up in memory faster than they are written.
        pending = set()
        queue = iter(tasks)
        for task in queue:
            pending.add(pool.submit(_worker_task, task, now))
            if len(pending) >= workers * 4:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield from future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(_worker_task, nxt, now))


def run_score(
    db: Database, *, servers: Sequence[Server], now: datetime, progress: Progress | None = None, workers: int | None = None
) -> StageReport:
    started = time.monotonic()
    report = StageReport(stage="score")
    # A listing-only server has nothing to score (deviation 80): no cards, not even "unscored" ones; cards from before,
    # when a listing still named something to examine, go too, so no page or board shows them as current.
    listed = [s.id for s in servers if listing_only(s)]
    if listed:
        servers = [s for s in servers if not listing_only(s)]
        store.drop_cards(db, listed)
    progress = progress or Progress("score", len(servers))
    report.counts = {"scored": 0, "alerts": 0, "graded": 0, "listing_only": len(listed)}
    workers = workers if workers is not None else (os.cpu_count() or 1)
    pending: list[store.CardRow] = []

    def flush() -> None:
        counts, refused = store.write_card_rows(db, pending, now)
        report.counts["scored"] += counts["scored"]
        report.counts["alerts"] += counts["alerts"]
        for refusal in refused:
            report.storage_failed()
            progress.note(f"{refusal.server_id}: {refusal}")
        pending.clear()

    if workers > 1 and len(servers) >= PARALLEL_FROM:
        results: Iterable = _parallel(store.database_path(db), servers, now, workers)
    else:
        results = (row for chunk in _chunked(gather_many(db, servers, now), TASK_SIZE) for row in _score_rows(iter(chunk), now))
    # Each batch of whole servers is its own transaction: the write-ahead log is checkpointed a
    # batch at a time while the workers score the next servers, instead of all at once at the
    # end. An interrupted rescore leaves every server with either all its new cards or all its
    # old ones, and says how many it wrote.
    try:
        with without_cyclic_gc():
            for server_id, shown, graded, rows in results:
                pending.extend(rows)
                report.counts["graded"] += int(graded)
                progress.step(server_id, shown)
                if len(pending) >= WRITE_BATCH:
                    flush()
            flush()
    except KeyboardInterrupt:
        report.interrupted = True
    report.seconds = time.monotonic() - started
    return report


def _chunked(items: Iterator[Facts], size: int) -> Iterator[list[Facts]]:
    chunk: list[Facts] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
