"""A server whose rows the database refuses is counted and named; nothing of it is half-written, nothing stored
before is lost, and every stage (discover, probe, monitor, analyze, judge, score) goes on with the other servers.

The refusals are real: a trigger on the table refuses one server's rows, as SQLite refuses a value it cannot hold.
"""

from __future__ import annotations

import io
from datetime import timedelta

from pipeline import store
from pipeline.analyze import run_analyze
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.discover import run_discover
from pipeline.judge import Panel, run_judge
from pipeline.probe import run_probe
from pipeline.probe.monitor import run_monitor
from pipeline.probe.sandbox import LocalProcessSandbox
from pipeline.progress import Progress
from pipeline.sandbox.install import install_key
from pipeline.score import run_score
from tests.support import NOW, ListSource, StaticInstaller, entry, faulty_entry, probe, python_installed, raw_server_spec


def refuse(db, table: str, server_id: str, column: str = "server_id") -> None:
    db.execute(f"create trigger refuse_{table} before insert on {table} when new.{column} = '{server_id}' "
               "begin select raise(abort, 'refused by the test'); end")


def lines(stage: str, total: int) -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    return Progress(stage, total, stream=out), out


def test_a_refused_server_is_counted_named_and_every_stage_goes_on(db, settings, tmp_path):
    specs = {sid: raw_server_spec("good").model_copy(update={"package": sid}) for sid in ("a", "victim", "z")}
    refuse(db, "servers", "refused", column="id")
    progress, out = lines("discover", 1)
    report = run_discover(db, sources=[ListSource("test", [*(faulty_entry(k, v) for k, v in specs.items()), entry("refused")])], now=NOW,
                          progress=progress)
    assert report.counts["storage_failed"] == 1 and report.failures == 1 and report.counts["new"] == 4
    assert "refused: not stored: the database refused its rows (IntegrityError: refused by the test)" in out.getvalue()
    assert {s.id for s in store.active_servers(db)} == set(specs)  # the others were stored, with their keys and records
    assert db.execute("select count(*) from server_keys where server_id = 'refused'").fetchone()[0] == 0
    assert db.execute("select count(*) from source_records").fetchone()[0] == 3

    servers = store.active_servers(db)
    earlier = store.record_probe(db, probe().model_copy(update={"server_id": "victim", "started_at": NOW - timedelta(days=1)}), None)
    refuse(db, "probe_runs", "victim")
    installer = StaticInstaller({install_key(s): python_installed() for s in specs.values()})
    bounded = settings.model_copy(update={"call_timeout": 2.0, "probe_timeout": 8.0, "start_timeout": 5.0})
    for run in (run_probe, run_monitor):
        progress, out = lines(run.__name__, 3)
        own = LocalProcessSandbox(bounded.start_timeout)  # the test's own servers, on the pipeline's venv
        report = run(db, servers=servers, installer=installer, sandbox=own, settings=bounded, now=NOW, progress=progress)
        assert report.counts == {"ok": 2, "storage_failed": 1} and report.failures == 1
        assert "victim: not stored: the database refused its rows" in out.getvalue()
    assert [r["id"] for r in db.query("select id from probe_runs where server_id = 'victim'")] == [earlier]  # the earlier probe stands
    assert db.execute("select count(*) from tool_snapshots where server_id = 'victim'").fetchone()[0] == 1  # no half-written probe
    assert db.execute("select count(*) from probe_daily where server_id = 'victim' and day = ?", [NOW.date().isoformat()]).fetchone()[0] == 0
    assert db.execute("select count(*) from probe_runs where server_id in ('a', 'z')").fetchone()[0] == 4

    refuse(db, "analyses", "victim")
    (tmp_path / "server.py").write_text("def now():\n    return 1\n")  # source to scan: Assessed visibility, so the judge runs
    progress, out = lines("analyze", 3)
    report = run_analyze(db, servers=servers, fetcher=LocalDirectoryFetcher(tmp_path), now=NOW, progress=progress)
    assert report.counts == {"analyzed": 2, "unchanged": 0, "deferred": 0, "failed": 0, "storage_failed": 1}
    assert "victim: not stored" in out.getvalue()

    # the judge judges only from Assessed visibility up: the victim needs its analysis (then scores) to reach the judge's refusal
    db.execute("drop trigger refuse_analyses")
    victim = [s for s in servers if s.id == "victim"]
    run_analyze(db, servers=victim, fetcher=LocalDirectoryFetcher(tmp_path), now=NOW, progress=lines("analyze", 1)[0])
    run_score(db, servers=servers, now=NOW, progress=lines("score", 3)[0])
    refuse(db, "judgements", "victim")
    progress, out = lines("judge", 3)
    report = run_judge(db, servers=servers, panel=Panel.offline(), now=NOW, progress=progress)
    assert report.counts["storage_failed"] == 1 and report.counts["judged"] == 2 and "victim: not stored" in out.getvalue()

    run_score(db, servers=servers, now=NOW, progress=lines("score", 3)[0])
    before = {r["rubric"]: r["scored_at"] for r in db.query("select rubric, scored_at from scores where server_id = 'victim'")}
    refuse(db, "score_cards", "victim")  # the table cards are written to (the `scores` view reads them)
    progress, out = lines("score", 3)
    report = run_score(db, servers=servers, now=NOW + timedelta(days=1), progress=progress)
    assert report.counts["storage_failed"] == 1 and report.counts["scored"] == 2 * len(before) and "victim: not stored" in out.getvalue()
    assert {r["rubric"]: r["scored_at"] for r in db.query("select rubric, scored_at from scores where server_id = 'victim'")} == before
    day = (NOW + timedelta(days=1)).date().isoformat()
    assert db.execute("select count(distinct server_id) from score_history where day = ?", [day]).fetchone()[0] == 2
