"""Sandbox failures through the real scoring engine and the store: not measured, never the server's failure."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.models import LaunchSpec, ProbeOutcome, ProbeResult
from pipeline.render import run_build
from pipeline.score import outside_in, review, run_score, scoreboard
from pipeline.score.facts import Facts, RunRow
from pipeline.score.registry import infos
from tests.support import HOSTILE, NOW, ListSource, analysis, dims, entry, page_problems, probe, quiet, server

SANDBOX_FAILURES = ["no_entry_point", "crashed_on_start", "needs_external_service", "resource_limit", "blocked",
                    "install_failed", "start_failed", "timeout", "unreachable"]


def sandboxed(outcome: str, detail: str = "Error: connect ECONNREFUSED 127.0.0.1:5432") -> ProbeResult:
    return probe(outcome=ProbeOutcome(outcome), checks=[]).model_copy(update={
        "kind": "sandbox", "detail": detail, "sandbox": "bubblewrap 0.8.0", "handshake": None, "protocol_version": None,
        "stderr_tail": "Error: connect ECONNREFUSED 127.0.0.1:5432\n", "mocked_env": ["DATABASE_URL"]})


@pytest.mark.parametrize("outcome", SANDBOX_FAILURES)
def test_a_sandbox_failure_is_not_measured_by_any_rubric(outcome):
    failed = Facts(server=server(), now=NOW, probe=sandboxed(outcome), analysis=analysis())
    unprobed = Facts(server=server(), now=NOW, probe=None, analysis=analysis())
    card = scoreboard.SCOREBOARD.score(failed)
    reach = next(r for r in card.rules if r.rule == "reachability")
    assert not reach.measured and outcome in reach.reason and "bubblewrap 0.8.0" in reach.reason and reach.how_to_gain
    assert dims(card)["protocol_compliance"].status == "pending"
    assert card.composite == scoreboard.SCOREBOARD.score(unprobed).composite  # as if it had never been run: no zero
    negotiation = next(r for r in review.REVIEW.score(failed).rules if r.rule == "negotiation")
    assert not negotiation.measured
    with_runs = Facts(server=server(), now=NOW, probe=sandboxed(outcome),
                      runs=[RunRow("sandbox", NOW - timedelta(hours=h), outcome, None, None) for h in (1, 2, 3)])
    oi = outside_in.OUTSIDE_IN.score(with_runs)
    assert oi.composite is None and oi.visibility == "unrated" and oi.extra["runs"] == 0


def test_what_happens_after_the_start_is_the_servers():
    for outcome in ("protocol_error", "crashed"):
        card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=sandboxed(outcome), analysis=analysis()))
        reach = next(r for r in card.rules if r.rule == "reachability")
        assert reach.measured and reach.points == 0
    # the older start failures still count for a probe that was not a sandbox run (a remote endpoint's timeout)
    deep = Facts(server=server(), now=NOW, probe=probe(outcome=ProbeOutcome.timeout, checks=[]), analysis=analysis())
    assert next(r for r in scoreboard.SCOREBOARD.score(deep).rules if r.rule == "reachability").measured


def test_outside_in_counts_only_the_runs_that_say_something():
    runs = [RunRow("sandbox", NOW - timedelta(hours=3), "needs_external_service", None, None),
            RunRow("sandbox", NOW - timedelta(hours=2), "ok", 12.0, 1),
            RunRow("sandbox", NOW - timedelta(hours=1), "crashed_on_start", None, None)]
    card = outside_in.OUTSIDE_IN.score(Facts(server=server(), now=NOW, probe=sandboxed("crashed_on_start"), runs=runs))
    assert card.extra["runs"] == 1 and card.extra["verdict"] == "Operational"  # the failed starts are not "Down"
    reach = next(r for r in card.rules if r.rule == "reach")
    assert "100.0% of 1 runs" in reach.reason


def test_stored_sandbox_failures_score_and_render_as_not_measured(db, tmp_path):
    spec = LaunchSpec(registry="npm", package="pg-mcp", transport="stdio")
    run_discover(db, sources=[ListSource("test", [entry("pg", launch=spec)])], now=NOW - timedelta(days=1), progress=quiet(1))
    for hours in (3, 2, 1):
        failure = sandboxed("needs_external_service").model_copy(update={
            "server_id": "pg", "started_at": NOW - timedelta(hours=hours), "stderr_tail": f"Error: connect ECONNREFUSED 127.0.0.1:5432\n{HOSTILE}"})
        store.record_probe(db, failure, None)
    assert db.execute("select count(*) from probe_daily where server_id = 'pg'").fetchone()[0] == 0  # no run of the server
    run_score(db, servers=store.active_servers(db), now=NOW)
    cards = {row["rubric"]: row for row in db.query("select rubric, composite, rules, visibility from scores where server_id = 'pg'")}
    reach = next(r for r in json.loads(cards["scoreboard"]["rules"]) if r["rule"] == "reachability")
    assert reach["measured"] is False and "needs_external_service" in reach["reason"]
    assert cards["outside-in"]["visibility"] == "unrated"
    run_build(db, rubrics=infos(), site_dir=tmp_path / "site", now=NOW)
    html = (tmp_path / "site" / "servers" / "pg.html").read_text()
    assert "started by us in bubblewrap 0.8.0" in html and "mock values for DATABASE_URL" in html
    assert "Not measured: our sandbox could not run this server (needs external service)" in html
    assert "ECONNREFUSED 127.0.0.1:5432" in html and "<script>" not in html and "&lt;script&gt;" in html
    assert page_problems(html) == []
