"""Fairness at fleet scale (issue 16): over the discovered catalog and over a synthetic fleet of varied evidence, scored
with the real run_score into a real database, no rule turns not-measured into points, no badge stands without its
evidence, and no server is graded on a failure to reach it that does not stand.

The evidence each badge needs is written out here from the stored rows, apart from pipeline.score.badges, so the two
must agree; a badge missing from the table fails the test until someone says what its evidence is.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

from bench.synthetic import NOW as SYNTHETIC_NOW
from bench.synthetic import generate
from pipeline import store
from pipeline.discover import run_discover, snapshot_sources
from pipeline.models import ProbeOutcome, ProbeResult
from pipeline.outcomes import MIN_FAILED_ATTEMPTS, VERDICT_SPAN
from pipeline.progress import Progress
from pipeline.render.boards import leaderboard_rows
from pipeline.score import run_score, score_all
from pipeline.score.facts import Facts
from tests.support import SOURCE_FIXTURES

CATALOG_NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
SCORED_AT = SYNTHETIC_NOW + timedelta(days=2)  # the synthetic fleet's own probes all come before the failures added to it
REACHED = ("ok", "auth_required")


class Evidence:
    """What the database holds of each server, read with plain SQL."""

    def __init__(self, db) -> None:
        self.servers = {r["id"]: r for r in db.query("select id, transport, launch, remote_url, env_vars, sources, packages from servers")}
        self.latest = {r["server_id"]: r["outcome"] for r in db.query(
            "select server_id, outcome from probe_runs p where id = (select q.id from probe_runs q where q.server_id = p.server_id "
            "and q.kind != 'fast' order by q.started_at desc, q.id desc limit 1)")}
        self.analysed = {r["server_id"] for r in db.query("select distinct server_id from analyses where json_extract(result, '$.ok')")}
        self.fast = {r["server_id"]: r["n"] for r in db.query(
            "select server_id, sum(runs) n from probe_daily where kind = 'fast' group by server_id")}

    def launch_or_probe(self, sid: str) -> bool:
        return self.servers[sid]["launch"] is not None or self.latest.get(sid) in REACHED

    def secrets(self, sid: str) -> bool:
        row = self.servers[sid]
        return (json.loads(row["env_vars"] or "[]") != [] or "local" in json.loads(row["sources"] or "[]") or sid in self.analysed
                or self.latest.get(sid) in REACHED)


BADGE_EVIDENCE: dict[str, Callable[[Evidence, str], bool]] = {
    **{label: lambda e, sid: sid in e.analysed for label in (
        "README", "Changelog", "Examples", "Contributing Guide", "SECURITY.md", "Namespace Match", "Installable",
        "Active Development", "Stale", "Abandoned", "Regular Releases", "CI/CD", "Lock File", "Semver")},
    "Reachable": lambda e, sid: e.latest.get(sid) in REACHED,
    **{label: lambda e, sid: e.latest.get(sid) == "ok" for label in ("Schema Valid", "Tool Count", "Error Handling Quality")},
    "Auth Discovery": lambda e, sid: e.latest.get(sid) == "auth_required",
    **{label: lambda e, sid: e.fast.get(sid, 0) >= 10 for label in ("99%+ Uptime", "95%+ Uptime", "Degraded", "Fast (<200ms)", "Slow (>500ms)")},
    "Local Only": Evidence.launch_or_probe,
    "STDIO Only": Evidence.launch_or_probe,
    **{label: Evidence.secrets for label in ("No Secrets Required", "Few Secrets", "Many Secrets")},
    "Published Package": lambda e, sid: e.servers[sid]["launch"] is not None or json.loads(e.servers[sid]["packages"] or "[]") != [],
}


# Seed 000's rules that read catalog facts which may be only defaults: measured only with the evidence named here.
RULE_EVIDENCE: dict[str, Callable[[Evidence, str], bool]] = {
    "secret_env_vars": Evidence.secrets,
    "credential_sensitivity": Evidence.secrets,
    "transport_risk": lambda e, sid: e.servers[sid]["remote_url"] is not None or e.launch_or_probe(sid),
    "reachability": lambda e, sid: e.latest.get(sid) not in (None, "rate_limited", "opted_out", "refused"),
}


def unevidenced_rules(db) -> list[str]:
    evidence = Evidence(db)
    return [f"{row['server_id']}: {r['rule']} measured without its evidence" for row in db.query(
        "select server_id, rules from scores where rubric = 'scoreboard'") for r in json.loads(row["rules"])
        if r["measured"] and r["rule"] in RULE_EVIDENCE and not RULE_EVIDENCE[r["rule"]](evidence, row["server_id"])]


def unearned_badges(db) -> list[str]:
    evidence = Evidence(db)
    wrong = []
    for row in db.query("select server_id, badges from scores where rubric = 'scoreboard'"):
        for badge in json.loads(row["badges"]):
            if badge not in BADGE_EVIDENCE:
                wrong.append(f"{badge}: no evidence stated for this badge in the test")
            elif not BADGE_EVIDENCE[badge](evidence, row["server_id"]):
                wrong.append(f"{row['server_id']}: {badge}")
    return wrong


def unmeasured_points(db) -> list[str]:
    """Cards where a rule that was not measured carries points, or a dimension's score is not what its measured rules give."""
    wrong = []
    for card in db.query("select server_id, rubric, rules, dimensions from scores"):
        rules = json.loads(card["rules"])
        where = f"{card['server_id']} ({card['rubric']})"
        wrong += [f"{where}: {r['rule']} not measured but {r['points']} points" for r in rules if not r["measured"] and r["points"]]
        for dim in json.loads(card["dimensions"]):
            measured = [r for r in rules if r["dimension"] == dim["name"] and r["measured"]]
            maximum = sum(r["max_points"] for r in measured if r["max_points"] > 0)
            if dim["status"] != "scored":
                continue
            if not maximum:
                wrong.append(f"{where}: {dim['name']} scored with no measured rule")
                continue
            points = sum(r["points"] for r in measured if r["max_points"] > 0)
            bonus = sum(r["points"] for r in measured if r["max_points"] == 0)
            expected = max(0.0, min(100.0, 100 * points / maximum + bonus))
            if abs(expected - dim["score"]) > 0.15:  # rule points are stored to 0.01, the dimension to 0.1
                wrong.append(f"{where}: {dim['name']} is {dim['score']}, its measured rules give {expected:.2f}")
    return wrong


def failures_since_answered(db, server_id: str) -> list[datetime]:
    """When the server failed by its own doing (deep, fast and sandbox probes) since it last answered, oldest first."""
    runs = [(datetime.fromisoformat(r["started_at"]), r["outcome"]) for r in db.query(
        "select started_at, outcome from probe_runs where server_id = ? order by started_at", [server_id])]
    answered = max((at for at, outcome in runs if outcome in REACHED), default=None)
    return [at for at, outcome in runs if outcome not in (*REACHED, "rate_limited", "opted_out", "refused") and (answered is None or at > answered)]


def stands(failed: list[datetime]) -> bool:
    return len(failed) >= MIN_FAILED_ATTEMPTS and failed[-1] - failed[0] >= VERDICT_SPAN


def remote_reachability(db) -> dict[str, dict[str, Any]]:
    """Seed 000's reachability outcome of every remote server whose latest deep probe (the newest run, as the store reads it) failed."""
    return {card["server_id"]: next(r for r in json.loads(card["rules"]) if r["rule"] == "reachability") for card in db.query(
        "select s.server_id, s.rules from scores s join servers v on v.id = s.server_id where s.rubric = 'scoreboard' and v.launch is null "
        "and v.transport != 'stdio' and (select outcome from probe_runs p where p.server_id = s.server_id and p.kind != 'fast' "
        "order by p.started_at desc, p.id desc limit 1) not in ('ok', 'auth_required', 'rate_limited', 'opted_out', 'refused')")}


def unstood_failures(db) -> list[str]:
    """Remote servers scored 0 for reachability without failures that stand, or left unrated once they stand."""
    wrong = []
    for server_id, reach in remote_reachability(db).items():
        failed = failures_since_answered(db, server_id)
        if reach["measured"] != stands(failed) or reach["points"]:
            wrong.append(f"{server_id}: reachability {reach['points']} (measured {reach['measured']}) from {len(failed)} failed attempts")
    return wrong


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """The discovered catalog, one failed probe (unreachable, as from here) for each remote server, the whole fleet scored."""
    if not SOURCE_FIXTURES.is_dir():
        pytest.skip(f"source snapshots not present at {SOURCE_FIXTURES} (shared fixtures)")
    db = store.open_db(tmp_path_factory.mktemp("fleet") / "scoreboard.db")
    sources = snapshot_sources(SOURCE_FIXTURES)
    run_discover(db, sources=sources, now=CATALOG_NOW - timedelta(days=1), progress=Progress("discover", len(sources) + 1, stream=io.StringIO()))
    servers = store.active_servers(db)
    remote = [s for s in servers if not s.is_local]
    for server in remote:
        store.record_probe(db, ProbeResult(server_id=server.id, kind="deep", started_at=CATALOG_NOW - timedelta(hours=1), duration_ms=10_000,
                                           transport=server.transport, outcome=ProbeOutcome.unreachable, detail="connection refused"), None)
    run_score(db, servers=servers, now=CATALOG_NOW, progress=Progress("score", len(servers), stream=io.StringIO()))
    yield db, servers, remote
    db.close()


def test_the_catalog_is_the_real_one(catalog):
    _, servers, remote = catalog
    assert len(servers) > 8000 and len(remote) > 500  # every server is scored: no sample


def test_no_rule_turns_not_measured_into_points_over_the_catalog(catalog):
    db, _, _ = catalog
    assert unmeasured_points(db) == []


def test_no_badge_or_rule_without_its_evidence_over_the_catalog(catalog):
    db, _, _ = catalog
    assert unearned_badges(db) == []
    assert unevidenced_rules(db) == []
    stdio_by_default = db.execute("select count(*) from servers where transport = 'stdio' and launch is null").fetchone()[0]
    assert stdio_by_default > 6000  # the servers we know nothing about, none of them badged for it


def test_one_failed_attempt_grades_no_remote_server(catalog):
    db, servers, remote = catalog
    assert unstood_failures(db) == []
    cards = {(r["server_id"], r["rubric"]): r for r in db.query("select server_id, rubric, composite, grade, visibility, rules from scores")}
    for server in remote:
        reach = next(r for r in json.loads(cards[server.id, "scoreboard"]["rules"]) if r["rule"] == "reachability")
        assert not reach["measured"] and reach["reason"].startswith("unreachable from here (1 attempt)")
        # The attempt changes nothing: every rubric's card is what it is for the same server never probed.
        for unprobed in score_all(Facts(server=server, now=CATALOG_NOW)):
            stored = cards[server.id, unprobed.rubric]
            assert (stored["composite"], stored["grade"], stored["visibility"]) == (unprobed.composite, unprobed.grade, unprobed.visibility)
    board = {row["id"]: row for row in leaderboard_rows(servers, store.load_scores(db, "scoreboard"), store.latest_probe_summaries(db))}
    assert all(board[s.id]["probe_outcome"] == "unreachable from here (1 attempt)" and board[s.id]["grade"] is None for s in remote)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A synthetic fleet of varied evidence (ok, gated, timed-out and failed starts, analyses or none, fast rollups), plus
    remote servers failing once, three times within a day, and three times over two days."""
    path = tmp_path_factory.mktemp("synthetic") / "scoreboard.db"
    generate(path, 300, seed=16)
    db = store.open_db(path)
    remote = [row["id"] for row in db.query("select id from servers where remote_url is not null order by id")]
    failing: dict[str, tuple[float, ...]] = {}
    for index, server_id in enumerate(remote[:60]):
        failing[server_id] = ((0.5,), (20, 10, 1), (40, 20, 1))[index % 3]
        for hours in failing[server_id]:
            store.record_probe(db, ProbeResult(server_id=server_id, kind="fast" if hours == 10 else "deep", duration_ms=10_000,
                                               started_at=SCORED_AT - timedelta(hours=hours), transport="streamable-http",
                                               outcome=ProbeOutcome.timeout), None)
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=SCORED_AT, progress=Progress("score", len(servers), stream=io.StringIO()))
    yield db, failing
    db.close()


def test_no_rule_turns_not_measured_into_points_over_a_synthetic_fleet(synthetic):
    db, _ = synthetic
    assert unmeasured_points(db) == []


def test_no_badge_or_rule_without_its_evidence_over_a_synthetic_fleet(synthetic):
    db, _ = synthetic
    assert unearned_badges(db) == []
    assert unevidenced_rules(db) == []


def test_failures_grade_a_remote_server_only_once_they_stand(synthetic):
    db, failing = synthetic
    assert unstood_failures(db) == []
    reach = remote_reachability(db)
    stood = [sid for sid in failing if reach[sid]["measured"]]
    pending = [sid for sid in failing if not reach[sid]["measured"]]
    assert len(stood) > 5 and len(pending) > 20  # both sides of the rule are exercised
    assert all("unreachable from here" in reach[sid]["reason"] for sid in pending)
