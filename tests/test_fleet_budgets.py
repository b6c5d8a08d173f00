"""Stage budgets, cadence, and probing black-holed remotes within a bound (deviations 85-90)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from itertools import count

import pytest

from bench.blackholes import black_holes
from pipeline import store
from pipeline.analyze import run_analyze
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.config import Settings
from pipeline.discover import run_discover
from pipeline.fleet import cadence
from pipeline.fleet.budget import SKIPPED, Deadline
from pipeline.judge import Panel, run_judge
from pipeline.models import LaunchSpec, Package
from pipeline.probe import run_probe
from pipeline.probe.monitor import run_monitor
from pipeline.progress import Progress
from pipeline.sandbox.install import Installer
from tests.support import NOW, REPO, ListSource, StaticInstaller, entry, probe, quiet, server

CONNECT = 0.5


def stepping(start: float = 0.0):
    """A clock that moves one second each time it is read: a budget of 2.5 s allows exactly two checks."""
    ticks = count(start)
    return lambda: float(next(ticks))


def fleet(db, urls):
    run_discover(db, sources=[ListSource("test", [entry(f"bh{i:02d}", transport="streamable-http", remote_url=u) for i, u in enumerate(urls)])],
                 now=NOW, progress=quiet(1))
    return store.active_servers(db)


def settings_for(tmp_path, **more) -> Settings:
    return Settings(db_path=tmp_path / "x.db", cache_dir=tmp_path / "cache", allow_private=True, connect_timeout=CONNECT, **more)


def quiet_progress(n):
    return Progress("test", n, stream=io.StringIO())


# ---------------------------------------------------------------- the budget


def test_a_deadline_expires_on_its_clock_and_none_never_does():
    deadline = Deadline(2.5, clock=stepping())
    assert [deadline.expired() for _ in range(4)] == [False, False, True, True]
    assert not Deadline(None).expired() and Deadline(None).left() is None
    with pytest.raises(ValueError):
        Deadline(-1)


def test_a_spent_budget_starts_no_new_probe_and_the_next_run_starts_with_the_skipped(tmp_path):
    with black_holes(8) as urls:
        db = store.open_db(tmp_path / "x.db")
        servers = fleet(db, urls)
        report = run_monitor(db, servers=servers, installer=Installer(tmp_path / "cache"), settings=settings_for(tmp_path), now=NOW,
                             progress=quiet_progress(8), deadline=Deadline(3.5, clock=stepping()))  # one round, then two probes
    assert report.counts[SKIPPED] == 6 and report.counts["timeout"] == 2
    probed = {r["server_id"] for r in db.query("select server_id from probe_runs")}
    assert len(probed) == 2 and set(store.last_examined(db, "monitor")) == probed
    following = cadence.oldest_first(servers, store.last_examined(db, "monitor"), lambda s: s.id)
    assert {s.id for s in following[:6]} == {s.id for s in servers} - probed
    assert "skipped_budget 6" in report.summary_line()


class CountingInstaller(StaticInstaller):
    """Installs nothing (every server then fails to install, at once) and remembers what it was asked."""

    def __init__(self) -> None:
        super().__init__({})
        self.asked: list[int] = []

    def install(self, specs, progress=None):
        self.asked.append(len(specs))
        return super().install(specs)


def test_within_a_budget_packages_are_installed_a_round_at_a_time(tmp_path):
    db = store.open_db(tmp_path / "x.db")
    run_discover(db, sources=[ListSource("test", [entry(f"p{i:02d}", launch=LaunchSpec(registry="pypi", package=f"p{i:02d}", transport="stdio"))
                                                  for i in range(20)])], now=NOW, progress=quiet(1))
    installer = CountingInstaller()
    # Rounds of four packages (sandbox concurrency 1): the first round's check and its four probes, then the budget is spent.
    report = run_probe(db, servers=store.active_servers(db), installer=installer, settings=settings_for(tmp_path, sandbox_concurrency=1),
                       now=NOW, progress=quiet_progress(20), deadline=Deadline(5.5, clock=stepping()))
    assert installer.asked == [4] and report.counts[SKIPPED] == 16 and db["probe_runs"].count == 4


def test_a_spent_budget_starts_no_new_analysis(tmp_path):
    (tmp_path / "README.md").write_text("# x")
    db = store.open_db(tmp_path / "x.db")
    run_discover(db, sources=[ListSource("test", [entry(f"s{i}") for i in range(6)])], now=NOW, progress=quiet(1))
    report = run_analyze(db, servers=store.active_servers(db), fetcher=LocalDirectoryFetcher(tmp_path), now=NOW,
                         progress=quiet_progress(6), concurrency=1, deadline=Deadline(3.5, clock=stepping()))
    assert report.counts[SKIPPED] == 3 and report.counts["analyzed"] == 3 and db["analyses"].count == 3


def test_a_spent_budget_judges_no_further_server(tmp_path):
    db = store.open_db(tmp_path / "x.db")
    ids = [f"r{i}" for i in range(4)]
    run_discover(db, sources=[ListSource("test", [entry(i, transport="streamable-http", remote_url=f"https://{i}.example.com/mcp") for i in ids])],
                 now=NOW, progress=quiet(1))
    for server_id in ids:
        store.record_probe(db, probe().model_copy(update={"server_id": server_id, "transport": "streamable-http"}), None)
    report = run_judge(db, servers=store.active_servers(db), panel=Panel.offline(), now=NOW, progress=quiet_progress(4),
                       deadline=Deadline(2.5, clock=stepping()))
    assert report.counts[SKIPPED] == 2 and report.counts["judged"] == 2
    assert len({r["server_id"] for r in db.query("select server_id from judgements")}) == 2 == len(store.last_examined(db, "judge"))


# ---------------------------------------------------------------- cadence


def test_what_is_due_oldest_first():
    a, b, c = server(id="a", launch=None, transport="streamable-http", remote_url="https://a.example/mcp"), \
        server(id="b", launch=None, transport="streamable-http", remote_url="https://b.example/mcp"), server(id="c")
    last = {"a": NOW - timedelta(minutes=25), "b": NOW - timedelta(minutes=10), "c": NOW - timedelta(days=2)}
    assert [s.id for s in cadence.due_for_monitor([a, b, c], last, NOW)] == ["a"]  # c is a package: not health-checked
    assert [s.id for s in cadence.due_for_monitor([a, b, c], {}, NOW)] == ["a", "b"]
    assert [s.id for s in cadence.oldest_first([a, b, c], last, lambda s: s.id)] == ["c", "a", "b"]
    assert [s.id for s in cadence.due_for_judging([a, b, c], {"a": NOW - timedelta(hours=21), "b": NOW - timedelta(hours=3)}, NOW)] == ["c", "a"]
    many = [server(id=f"s{i:04d}") for i in range(1500)]
    assert len(cadence.due_for_analysis(many, {}, NOW)) == 1000
    assert cadence.due_for_analysis(many, {s.id: NOW - timedelta(minutes=30) for s in many}, NOW) == []


def test_a_package_is_sandboxed_again_when_its_listed_version_changes_else_weekly():
    pinned = server(id="p", launch=LaunchSpec(registry="npm", package="pkg", transport="stdio"),
                    packages=[Package(registry="npm", identifier="pkg", version="1.2.0")])
    remote = server(id="r", launch=None, transport="streamable-http", remote_url="https://r.example/mcp")
    yesterday = {"p": NOW - timedelta(days=1), "r": NOW - timedelta(days=1)}
    assert cadence.listed_version(pinned) == "1.2.0"
    assert [s.id for s in cadence.due_for_probe([pinned, remote], yesterday, NOW, {"p": "1.2.0"})] == ["r"]
    assert [s.id for s in cadence.due_for_probe([pinned, remote], yesterday, NOW, {"p": "1.1.0"})] == ["p", "r"]
    assert [s.id for s in cadence.due_for_probe([pinned], {"p": NOW - timedelta(days=7)}, NOW, {"p": "1.2.0"})] == ["p"]


def test_the_sweep_refreshes_the_fleet_every_eight_weeks_and_a_rescore_waits_24_hours():
    assert cadence.sweep_size(25_000) == 3125 and cadence.sweep_size(7) == 1
    servers = [server(id=i) for i in "abc"]
    assert [s.id for s in cadence.oldest(servers, {"a": NOW, "b": NOW - timedelta(days=9)}, 2)] == ["c", "b"]
    assert cadence.rescore_refusal(None, NOW) is None and cadence.rescore_refusal(NOW - timedelta(hours=24), NOW) is None
    assert "again from 2026-11-30 10:00" in cadence.rescore_refusal(NOW - timedelta(hours=2), NOW)


# ---------------------------------------------------------------- black-holed remotes


def test_black_holed_remotes_are_classified_failures_within_a_bound_of_the_connect_deadline(tmp_path):
    """Twenty remotes that never accept a connection: each ends as a timeout, every probe costs one connect deadline, and
    at the default concurrency all run at once, so each stage takes a few deadlines, not twenty probe budgets."""
    with black_holes(20) as urls:
        db = store.open_db(tmp_path / "x.db")
        servers = fleet(db, urls)
        settings = settings_for(tmp_path)
        for run in (run_monitor, run_probe):
            started = time.monotonic()
            report = run(db, servers=servers, installer=Installer(tmp_path / "cache"), settings=settings, now=NOW, progress=quiet_progress(20))
            assert time.monotonic() - started < 4 * CONNECT + 2, run.__name__
            assert report.failures == 20
    outcomes = {(r["kind"], r["outcome"]): r["n"] for r in db.query("select kind, outcome, count(*) n from probe_runs group by kind, outcome")}
    assert outcomes == {("fast", "timeout"): 20, ("deep", "timeout"): 20}


# ---------------------------------------------------------------- the CLI


def scoreboard(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_ALLOW_PRIVATE": "1", "SCOREBOARD_DB": str(tmp_path / "x.db"), "SCOREBOARD_CACHE": str(tmp_path / "cache"),
           "SCOREBOARD_CONNECT_TIMEOUT": str(CONNECT), "SCOREBOARD_NPM_REGISTRY": "http://127.0.0.1:9/", "SCOREBOARD_PYPI_URL": "http://127.0.0.1:9/"}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120, env=env)


def test_the_cli_budget_due_and_transport(tmp_path):
    with black_holes(6) as urls:
        fleet(store.open_db(tmp_path / "x.db"), urls)
        spent = scoreboard(tmp_path, "monitor", "--budget", "0")
        assert spent.returncode == 0 and "skipped_budget 6" in spent.stdout
        due = scoreboard(tmp_path, "monitor", "--due", "--transport", "remote", "--concurrency", "64")
        assert due.returncode == 0 and "timeout 6" in due.stdout, due.stdout + due.stderr
        again = scoreboard(tmp_path, "monitor", "--due")
        assert "nothing to do" in again.stdout
        local_only = scoreboard(tmp_path, "probe", "--transport", "stdio")
        assert "nothing to do" in local_only.stdout
    db = store.open_db(tmp_path / "x.db")
    rows = list(db.query("select counts, args from runs where stage = 'monitor' order by id"))
    assert json.loads(rows[0]["counts"])[SKIPPED] == 6 and json.loads(rows[0]["args"])["budget"] == 0
    assert json.loads(rows[1]["args"])["concurrency"] == 64


def test_a_priority_rescore_at_most_once_per_24_hours(tmp_path):
    with black_holes(1) as urls:
        fleet(store.open_db(tmp_path / "x.db"), urls)
        first = scoreboard(tmp_path, "rescore", "bh00", "--requested-by", "issue 7")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "score done" in first.stdout and "probe done: timeout 1" in first.stdout
        second = scoreboard(tmp_path, "rescore", "bh00")
    assert second.returncode == 1 and "one priority rescore per 24 hours" in second.stderr
    db = store.open_db(tmp_path / "x.db")
    assert [(r["status"], r["requested_by"]) for r in db.query("select * from rescore_requests order by id")] == [
        ("accepted", "issue 7"), ("refused", None)]
    assert db["scores"].count >= 1
