"""The card and the page read the same evidence: "latest" is the newest by time (then by id), whatever order rows were written in."""

from __future__ import annotations

from datetime import timedelta

from pipeline import store
from pipeline.discover import run_discover
from pipeline.models import ProbeOutcome
from pipeline.score.facts import gather_many
from tests.support import NOW, ListSource, analysis, fleet_entries, probe, quiet


def test_the_newest_evidence_by_time_wins_over_the_highest_id(db):
    run_discover(db, sources=[ListSource("test", fleet_entries()[:1])], now=NOW, progress=quiet(1))
    server = store.active_servers(db)[0]
    newer = probe().model_copy(update={"server_id": server.id, "started_at": NOW})
    older = probe(outcome=ProbeOutcome.timeout).model_copy(update={"server_id": server.id, "started_at": NOW - timedelta(days=2)})
    newest_id = store.record_probe(db, newer, None)
    store.record_probe(db, older, None)  # a backfilled row: a higher id, an older run
    store.record_analysis(db, analysis().model_copy(update={"server_id": server.id, "analyzed_at": NOW}))
    store.record_analysis(db, analysis().model_copy(update={"server_id": server.id, "analyzed_at": NOW - timedelta(days=40)}))
    facts = next(gather_many(db, [server], NOW))
    page_id, _ = store.latest_probe(db, server.id)
    assert facts.probe_ref == f"probe_runs:{page_id}" == f"probe_runs:{newest_id}"
    assert facts.probe.outcome == ProbeOutcome.ok
    assert facts.analysis.analyzed_at == NOW
