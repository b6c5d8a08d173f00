"""Issue 16, which probe outcomes measure a server (item 2), "one failed attempt is not a verdict" and "no badge without
evidence", as one table: each row stores a server and its probes in a real database, scores it with the real run_score,
and states what every rubric must make of it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.models import HttpFacts, ProbeOutcome, ProbeResult
from pipeline.render.boards import leaderboard_rows
from pipeline.score import run_score
from tests.support import NOW, ListSource, entry, quiet

REMOTE = {"transport": "streamable-http", "remote_url": "https://mcp.example.com/mcp"}
UNKNOWN = {"repository": "https://github.com/o/unknown"}  # stdio only by default: no launch, no endpoint, no variables


@dataclass
class Row:
    server: dict
    probes: list[tuple[str, ProbeOutcome, float]] = field(default_factory=list)  # (kind, outcome, hours before NOW)
    reachability: tuple[float, bool] | None = None  # (points, measured) of seed 000's rule
    reason: str | None = None  # in the reachability rule's reason
    protocol_compliance: float | str | None = None  # its score, or its status
    unmeasured_rules: tuple[str, ...] = ()  # scoreboard rules that must not be measured
    graded: bool | None = None  # the headline card has a grade
    remote_unscored: bool = False  # seed 004's card has no composite (never "0.0, 7/7")
    remote_unmeasured: tuple[str, ...] = ()  # seed 004's rules that must not be measured
    outside_in: str | None = None  # seed 003's visibility
    board: str | None = None  # the headline board's probe column
    badges_absent: tuple[str, ...] = ()
    badges_present: tuple[str, ...] = ()


ROWS = {
    "item 2: 401 with a gate is reachable, the protocol behind it not measured": Row(
        REMOTE, [("deep", ProbeOutcome.auth_required, 1)], reachability=(20, True), protocol_compliance=100.0,
        unmeasured_rules=("schema_validity", "error_handling", "fuzz_resilience", "invocation_smoke_test"), badges_present=("Reachable",)),
    "item 2: 429 is not measured": Row(
        REMOTE, [("deep", ProbeOutcome.rate_limited, 1)], reachability=(0, False), reason="HTTP 429", protocol_compliance="pending",
        outside_in="unrated",
        remote_unscored=True, remote_unmeasured=("transport_verified", "stability")),
    "item 2: an opt-out is not measured": Row(
        REMOTE, [("deep", ProbeOutcome.opted_out, 1)], reachability=(0, False), reason="asks not to be probed", outside_in="unrated",
        protocol_compliance="pending", remote_unscored=True, remote_unmeasured=("transport_verified",)),
    "item 2: our own policy's refusal is not measured": Row(
        REMOTE, [("deep", ProbeOutcome.refused, 1)], reachability=(0, False), reason="our probe policy", outside_in="unrated",
        protocol_compliance="pending", remote_unscored=True, remote_unmeasured=("transport_verified",)),
    "one failed attempt is unrated, unreachable from here": Row(
        REMOTE, [("deep", ProbeOutcome.unreachable, 1)], reachability=(0, False), reason="unreachable from here (1 attempt)",
        graded=False, remote_unscored=True, remote_unmeasured=("transport_verified", "tls", "stability"), outside_in="unrated",
        board="unreachable from here (1 attempt)"),
    "failures within 24 hours are still no verdict": Row(
        REMOTE, [("deep", ProbeOutcome.unreachable, 20), ("fast", ProbeOutcome.timeout, 10), ("deep", ProbeOutcome.unreachable, 1)],
        reachability=(0, False), reason="unreachable from here (3 attempts over 19 h)", graded=False, remote_unscored=True,
        outside_in="unrated", board="unreachable from here (3 attempts over 19 h)"),
    "failures over 24 hours stand: rated, TLS never claimed": Row(
        REMOTE, [("deep", ProbeOutcome.unreachable, 30), ("fast", ProbeOutcome.timeout, 12), ("deep", ProbeOutcome.unreachable, 1)],
        reachability=(0, True), reason="3 attempts over 29 h", protocol_compliance=0.0, graded=True, remote_unmeasured=("tls",),
        outside_in="low sample"),
    "badges on an unknown server: none it has no evidence for": Row(
        UNKNOWN, unmeasured_rules=("secret_env_vars", "credential_sensitivity", "transport_risk"),
        badges_absent=("Local Only", "STDIO Only", "No Secrets Required", "Few Secrets", "Many Secrets")),
}


def _probe(kind: str, outcome: ProbeOutcome, hours: float, transport: str) -> ProbeResult:
    gated = outcome == ProbeOutcome.auth_required
    http = HttpFacts(auth_required=True, protected_resource_metadata=False) if gated else HttpFacts(hsts=None)
    return ProbeResult(server_id="x", kind=kind, started_at=NOW - timedelta(hours=hours), duration_ms=5, transport=transport, outcome=outcome,
                       detail=f"HTTP {'401' if gated else '429' if outcome == ProbeOutcome.rate_limited else 'none'}", http=http)


@pytest.mark.parametrize("name", list(ROWS))
def test_measured_table(name, db):
    row = ROWS[name]
    run_discover(db, sources=[ListSource("test", [entry("x", **row.server)])], now=NOW - timedelta(days=2), progress=quiet(1))
    for kind, outcome, hours in row.probes:
        store.record_probe(db, _probe(kind, outcome, hours, row.server.get("transport", "stdio")), None)
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW)
    cards = {r["rubric"]: r for r in db.query("select * from scores where server_id = 'x'")}
    headline = cards["scoreboard"]
    rules = {r["rule"]: r for r in json.loads(headline["rules"])}
    dimensions = {d["name"]: d for d in json.loads(headline["dimensions"])}
    if row.reachability is not None:
        reach = rules["reachability"]
        assert (reach["points"], reach["measured"]) == row.reachability, reach
    if row.reason is not None:
        assert row.reason in rules["reachability"]["reason"], rules["reachability"]
    if isinstance(row.protocol_compliance, float):
        assert dimensions["protocol_compliance"]["score"] == row.protocol_compliance
    elif row.protocol_compliance is not None:
        assert dimensions["protocol_compliance"]["status"] == row.protocol_compliance
    for rule in row.unmeasured_rules:
        assert rules[rule]["measured"] is False and rules[rule]["points"] == 0, rules[rule]
    if row.graded is not None:
        assert (headline["grade"] is not None) == row.graded, (headline["composite"], headline["grade"])
    remote = cards["remote"]
    remote_rules = {r["rule"]: r for r in json.loads(remote["rules"])}
    if row.remote_unscored:
        assert remote["composite"] is None, (remote["composite"], remote["dimension_indicator"])
    if row.server is REMOTE and not any(outcome in (ProbeOutcome.ok, ProbeOutcome.auth_required) for _, outcome, _ in row.probes):
        assert not (remote["composite"] == 0 and remote["dimension_indicator"] == "7/7")  # a score of an endpoint never reached
    for rule in row.remote_unmeasured:
        assert remote_rules[rule]["measured"] is False, remote_rules[rule]
    if row.outside_in is not None:
        assert cards["outside-in"]["visibility"] == row.outside_in
    if row.board is not None:
        board = leaderboard_rows(servers, store.load_scores(db, "scoreboard"), store.latest_probe_summaries(db))
        assert board[0]["probe_outcome"] == row.board and board[0]["grade"] is None
    badges = json.loads(headline["badges"])
    assert not set(row.badges_absent) & set(badges), badges
    assert set(row.badges_present) <= set(badges), badges
