"""Watching ourselves: each stage's last run and the alerts of seed 000's Infrastructure Monitoring, from real `runs` and
`probe_runs` rows (deviations 99 and 100)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.fleet.status import status_lines, status_of
from pipeline.models import ProbeOutcome, ProbeResult, StageReport
from tests.support import NOW, ListSource, entry, quiet


def ran(db, stage, started, *, minutes=1.0, status="ok", args=None, counts=None):
    """A `runs` row of `stage` that started at `started` and took `minutes`, ending in `status`."""
    run_id = store.start_run(db, stage, args or {}, started)
    ended = started + timedelta(minutes=minutes)
    if status == "failed":
        store.fail_run(db, run_id, "OSError: disk full", ended)
    elif status != "running":
        store.finish_run(db, run_id, StageReport(stage=stage, counts=counts or {}, seconds=minutes * 60, interrupted=status == "interrupted"), ended)
    return run_id


def keys(db, now=NOW):
    return {alert.key for alert in status_of(db, now).alerts}


def healthy(db, now=NOW, but=()):
    """Every stage (`but` these) ran and succeeded recently."""
    for stage in ("discover", "analyze", "probe", "judge", "score", "build"):
        if stage not in but:
            ran(db, stage, now - timedelta(hours=3))
    if "monitor" not in but:
        ran(db, "monitor", now - timedelta(minutes=6))


def test_a_database_with_no_runs_raises_nothing_and_lists_no_stage(db):
    status = status_of(db, NOW)
    assert status.alerts == [] and status.stages == [] and status.fast_probe_rate.rate is None


def test_a_healthy_fleet_raises_nothing_and_shows_each_stage_in_the_job_graphs_order(db):
    healthy(db)
    status = status_of(db, NOW)
    assert status.alerts == []
    assert [s.label for s in status.stages] == ["discover", "analyze", "probe", "monitor", "judge", "score", "build"]
    monitor = next(s for s in status.stages if s.stage == "monitor")
    assert monitor.last.status == "ok" and monitor.last.seconds == 60 and monitor.last_ok == monitor.last
    assert "no alerts" in status_lines(status)


@pytest.mark.parametrize("finished_ago,fires", [(timedelta(minutes=15), False), (timedelta(minutes=15, milliseconds=1), True),
                                                 (timedelta(minutes=14), False), (timedelta(hours=2), True)])
def test_fast_probes_silent_for_more_than_15_minutes(db, finished_ago, fires):
    healthy(db, but=("monitor",))
    ran(db, "monitor", NOW - finished_ago - timedelta(minutes=1))  # it finishes `finished_ago` before now
    assert ("fast_probes_silent" in keys(db)) is fires
    if fires:
        alert = next(a for a in status_of(db, NOW).alerts if a.key == "fast_probes_silent")
        assert alert.since == NOW - finished_ago + timedelta(minutes=15) and alert.title == "Fast probes have not run for 15 minutes"


def test_only_a_successful_run_counts_as_the_fast_probes_having_run(db):
    healthy(db, but=("monitor",))
    ran(db, "monitor", NOW - timedelta(minutes=40))
    ran(db, "monitor", NOW - timedelta(minutes=5), status="failed")
    assert {"fast_probes_silent", "failed:monitor"} <= keys(db)
    ran(db, "monitor", NOW - timedelta(minutes=3))
    assert keys(db) == set()


def test_fast_probes_in_the_sandbox_do_not_stand_for_remote_ones(db):
    healthy(db, but=("monitor",))
    ran(db, "monitor", NOW - timedelta(hours=1), args={"transport": "remote"})
    ran(db, "monitor", NOW - timedelta(minutes=2), args={"transport": "stdio"})
    ran(db, "monitor", NOW - timedelta(hours=2))  # the last run over every server is older still
    assert "fast_probes_silent" not in keys(db, NOW - timedelta(hours=1) + timedelta(minutes=10))
    assert "fast_probes_silent" in keys(db)
    labels = [s.label for s in status_of(db, NOW).stages]
    assert labels[labels.index("monitor"):labels.index("monitor") + 3] == ["monitor", "monitor --transport remote", "monitor --transport stdio"]


@pytest.mark.parametrize("finished_ago,fires", [(timedelta(hours=36), False), (timedelta(hours=36, seconds=1), True)])
def test_deep_probes_silent_for_more_than_36_hours(db, finished_ago, fires):
    healthy(db, but=("probe",))
    ran(db, "discover", NOW - timedelta(days=10))  # the history begins long before
    ran(db, "probe", NOW - finished_ago - timedelta(minutes=1))
    assert ("deep_probes_silent" in keys(db)) is fires


def test_with_no_history_the_silence_counts_from_the_first_run_of_any_stage(db):
    ran(db, "discover", NOW - timedelta(minutes=10))
    assert keys(db) == set()  # fast probes have not run, but the history is 10 minutes old
    status = status_of(db, NOW + timedelta(minutes=6))
    alert = next(a for a in status.alerts if a.key == "fast_probes_silent")
    assert alert.since == NOW - timedelta(minutes=10) + timedelta(minutes=15) and "no run has succeeded" in alert.detail
    assert "deep_probes_silent" not in {a.key for a in status.alerts}
    assert "deep_probes_silent" in keys(db, NOW + timedelta(hours=36))


def test_the_last_run_of_any_stage_failed_or_was_abandoned(db):
    healthy(db)
    ran(db, "judge", NOW - timedelta(hours=1), status="failed")
    ran(db, "score", NOW - timedelta(hours=1), status="running")
    ran(db, "score", NOW - timedelta(minutes=30))  # the one still marked running was killed: abandoned, but no longer the last
    ran(db, "analyze", NOW - timedelta(minutes=30), status="running")
    ran(db, "analyze", NOW - timedelta(minutes=20), status="running")  # the first is now abandoned; the last still runs
    ran(db, "probe", NOW - timedelta(minutes=20), status="interrupted")
    status = status_of(db, NOW)
    judge = next(a for a in status.alerts if a.key == "failed:judge")
    assert judge.title == "Stage judge failed" and "OSError: disk full" in judge.detail
    assert judge.since == NOW - timedelta(hours=1) + timedelta(minutes=1)
    assert {a.key for a in status.alerts} == {"failed:judge"}
    ran(db, "judge", NOW - timedelta(minutes=10))
    assert keys(db) == set()
    analyze = next(s for s in status.stages if s.stage == "analyze")
    assert analyze.last.status == "running" and analyze.last_ok is not None and analyze.last.seconds is None
    ran(db, "analyze", NOW - timedelta(minutes=5), status="failed")
    db.execute("update runs set status = 'abandoned' where id = (select max(id) from runs)")
    assert "failed:analyze" in keys(db)


def test_budget_skips_and_the_shard_are_shown(db):
    healthy(db)
    ran(db, "probe", NOW - timedelta(hours=1), args={"shard": "3/20"}, counts={"ok": 40, "skipped_budget": 12})
    probe = next(s for s in status_of(db, NOW).stages if s.stage == "probe")
    assert probe.last.skipped == {"skipped_budget": 12} and probe.last.shard == "3/20" and probe.last.counts["ok"] == 40


def test_a_success_before_the_horizon_is_still_found_and_a_transport_gone_for_a_month_is_not_listed(db):
    ran(db, "probe", NOW - timedelta(days=60))
    ran(db, "probe", NOW - timedelta(days=50), args={"transport": "stdio"})
    for day in range(20):
        ran(db, "probe", NOW - timedelta(days=day, hours=1), status="failed")
    (probe,) = status_of(db, NOW).stages
    assert probe.transport is None and probe.last.status == "failed" and probe.last_ok.started_at == NOW - timedelta(days=60)


# ---------------------------------------------------------------- the success rate of fast probes


@pytest.fixture
def fleet(db):
    servers = [entry(f"s{i:02d}", transport="streamable-http", remote_url=f"https://s{i:02d}.example.net/mcp") for i in range(30)]
    run_discover(db, sources=[ListSource("test", servers)], now=NOW - timedelta(days=3), progress=quiet(1))
    healthy(db)
    return db


def fast(db, server_id, at, outcome=ProbeOutcome.ok):
    store.record_probe(db, ProbeResult(server_id=server_id, kind="fast", started_at=at, duration_ms=5, transport="streamable-http",
                                       outcome=outcome), None)


def test_the_success_rate_counts_only_servers_that_answered_before(fleet):
    for i in range(20):  # twenty servers that never answered: a fleet of dead listings pages no one
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=10), ProbeOutcome.unreachable)
    for i in range(20, 30):  # ten that answered yesterday, six of them fine now
        fast(fleet, f"s{i:02d}", NOW - timedelta(days=1))
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=10), ProbeOutcome.ok if i < 26 else ProbeOutcome.timeout)
    rate = status_of(fleet, NOW).fast_probe_rate
    assert (rate.runs, rate.succeeded, rate.rate) == (10, 6, 0.6)
    assert "probe_success_rate" not in keys(fleet)


def test_the_success_rate_under_half_fires_with_the_minute_it_began(fleet):
    for i in range(30):
        fast(fleet, f"s{i:02d}", NOW - timedelta(days=1))
    for i in range(30):  # an hour and a half ago all answered; for the last 40 minutes most do not
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=90))
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=40), ProbeOutcome.ok if i < 5 else ProbeOutcome.unreachable)
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=10), ProbeOutcome.ok if i < 5 else ProbeOutcome.timeout)
    alert = next(a for a in status_of(fleet, NOW).alerts if a.key == "probe_success_rate")
    # The hour of 10:30-11:29 holds the 10:30 probes (all fine) and the 11:20 ones: 35 of 60; from 10:31-11:30 on, 5 of 30 or less.
    assert alert.since == NOW - timedelta(minutes=30) and alert.title == "Probe success rate under 50%"
    assert "10 of 60 fast probes (17%)" in alert.detail


def test_a_429_an_opt_out_and_too_few_runs_are_no_alert(fleet):
    for i in range(30):
        fast(fleet, f"s{i:02d}", NOW - timedelta(days=1))
    for i in range(30):
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=5), ProbeOutcome.rate_limited if i < 25 else ProbeOutcome.opted_out)
    for i in range(9):
        fast(fleet, f"s{i:02d}", NOW - timedelta(minutes=2), ProbeOutcome.unreachable)
    rate = status_of(fleet, NOW).fast_probe_rate
    assert rate.runs == 9 and rate.rate is None and "probe_success_rate" not in keys(fleet)
    fast(fleet, "s09", NOW - timedelta(minutes=1), ProbeOutcome.unreachable)
    assert "probe_success_rate" in keys(fleet)
    assert "probe_success_rate" not in keys(fleet, NOW + timedelta(minutes=59))  # the window has moved past the first failures


# ---------------------------------------------------------------- the build: status page, status.json, feed entries


def test_the_build_writes_the_status_page_its_json_and_alerts_in_the_feed_beside_the_score_changes(db, tmp_path):
    import json
    import xml.etree.ElementTree as ET

    from pipeline.discover.local import LocalCatalogSource
    from pipeline.render import run_build
    from pipeline.score import run_score
    from pipeline.score.registry import infos
    from tests.support import analysis, probe

    run_discover(db, sources=[LocalCatalogSource()], now=NOW - timedelta(days=2), progress=quiet(1))
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW - timedelta(days=1))
    store.record_probe(db, probe().model_copy(update={"server_id": "mcp-server-time"}), None)
    store.record_analysis(db, analysis().model_copy(update={"server_id": "mcp-server-time"}))
    run_score(db, servers=servers, now=NOW)
    healthy(db, but=("monitor",))
    ran(db, "monitor", NOW - timedelta(hours=1), counts={"ok": 3, "skipped_budget": 2})
    ran(db, "judge", NOW - timedelta(minutes=30), status="failed")
    site = tmp_path / "site"
    run_build(db, rubrics=infos(), site_dir=site, now=NOW, site_url="https://scores.example/")

    document = json.loads((site / "status.json").read_text())
    assert set(document) == {"generated_at", "engine_version", "stages", "fast_probe_rate", "alerts"}
    assert {a["key"] for a in document["alerts"]} == {"fast_probes_silent", "failed:judge"}
    monitor = next(s for s in document["stages"] if s["stage"] == "monitor")
    assert monitor["last"]["skipped"] == {"skipped_budget": 2} and monitor["last"]["status"] == "ok"
    assert set(monitor["last"]) == {"id", "started_at", "finished_at", "seconds", "status", "counts", "failures", "skipped", "shard", "error"}

    page = (site / "status" / "index.html").read_text()
    assert "Fast probes have not run for 15 minutes" in page and "Stage judge failed" in page and "OSError: disk full" in page
    assert "skipped_budget 2" in page and 'href="../status.json"' in page
    assert 'href="../status/index.html"' in (site / "downloads" / "index.html").read_text()

    atom = "{http://www.w3.org/2005/Atom}"
    feed = ET.fromstring((site / "feed.xml").read_text())
    titles = {e.find(f"{atom}title").text: e for e in feed.findall(f"{atom}entry")}
    silent = titles["Alert: Fast probes have not run for 15 minutes"]
    assert silent.find(f"{atom}updated").text == "2026-11-29T11:16:00Z"  # the monitor finished at 11:01
    assert silent.find(f"{atom}id").text == "https://scores.example/status/index.html#fast_probes_silent-20261129T111600Z"
    assert any(t.startswith("mcp-server-time") or "→" in t for t in titles)  # the score changes are still there
    assert feed.find(f"{atom}updated").text == "2026-11-29T11:31:00Z"  # the newest entry: the judge's failure


def test_scoreboard_status_prints_the_table_and_alerts_exits_1_while_one_fires(tmp_path, capsys):
    import json
    from datetime import datetime, timezone

    from pipeline.cli import main

    def scoreboard(*args: str) -> tuple[int, str]:
        """The CLI in this process (its entry point, as the console script calls it): exit code and standard output."""
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        return code, capsys.readouterr().out

    path = tmp_path / "scoreboard.db"
    db = store.open_db(path)
    now = datetime.now(timezone.utc)
    healthy(db, now)
    ran(db, "judge", now - timedelta(minutes=3), status="failed")
    code, table = scoreboard("status", "--db", str(path))
    assert code == 0 and table.splitlines()[0].startswith("stage") and "\njudge " in table
    code, alerts = scoreboard("status", "--alerts", "--db", str(path))
    assert code == 1 and alerts.splitlines() == [next(line for line in table.splitlines() if line.startswith("ALERT "))]
    assert alerts.startswith("ALERT Stage judge failed: the run started ") and "OSError: disk full" in alerts
    assert json.loads(scoreboard("status", "--json", "--db", str(path))[1])["alerts"][0]["key"] == "failed:judge"
    ran(db, "judge", now - timedelta(minutes=1))
    assert scoreboard("status", "--alerts", "--db", str(path)) == (0, "")
