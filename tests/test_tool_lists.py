"""A tool list is stored once per server and content, whatever the number of probes that capture it (deviation 110):
the history of a server's tool surface (the tool_snapshots view), what the score and the pages read of it, and migration
12, which converts a database that stored the list twice a probe, so that every card, server JSON and page stays as it was."""

from __future__ import annotations

import filecmp
import io
import sqlite3
from datetime import timedelta
from pathlib import Path

from sqlite_utils import Database

from bench.fleet_history import _daily_probes
from bench.synthetic import generate
from pipeline import store
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.score import run_score
from pipeline.score.registry import infos
from pipeline.store.migrations import migrations
from tests.support import NOW, TOOL, probe

LIST_A = [TOOL]
LIST_B = [TOOL, {**TOOL, "name": "delete_everything", "description": "Deletes every record."}]


def daily(db: Database, server_id: str, days: int, lists: dict[int, list]) -> None:
    """A deep probe a day for `days` days up to NOW; `lists`: from which day (1 = the first) which tool list it shows."""
    for day in range(1, days + 1):
        shown = lists[max(d for d in lists if d <= day)]
        store.record_probe(db, probe(tools=shown).model_copy(update={"server_id": server_id, "started_at": NOW - timedelta(days=days - day)}), None)


def history(db: Database, server_id: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in db.execute("select captured_at, content_hash from tool_snapshots where server_id = ? "
                                              "order by captured_at", [server_id])]


def test_a_list_that_changes_and_changes_back_is_three_snapshots_and_two_stored_lists(tmp_path):
    db = store.open_db(tmp_path / "x.db")
    db["servers"].insert({"id": "s", "name": "s", "transport": "stdio", "is_active": 1, "first_seen_at": store.iso(NOW),
                          "last_seen_at": store.iso(NOW)})
    daily(db, "s", 30, {1: LIST_A, 10: LIST_B, 20: LIST_A})
    a, b = store.content_hash(store.cleaned_json(probe(tools=LIST_A))["tools"]), store.content_hash(store.cleaned_json(probe(tools=LIST_B))["tools"])
    day = lambda n: store.iso(NOW - timedelta(days=30 - n))  # noqa: E731
    assert history(db, "s") == [(day(1), a), (day(10), b), (day(20), a)]
    assert db.execute("select count(*) from probe_runs").fetchone()[0] == 30
    assert db.execute("select count(*) from tool_lists").fetchone()[0] == 2  # each list once, not once a day
    assert db.execute("select count(*) from probe_runs where evidence like '%delete_everything%'").fetchone()[0] == 0
    _, latest = store.latest_probe(db, "s")
    assert latest.tools == probe(tools=LIST_A).tools and latest == probe(tools=LIST_A).model_copy(
        update={"server_id": "s", "started_at": NOW})  # the probe as it was recorded, its list included

    # What the score reads: the changes, the lists on either side of each; what the page lists: the two changes, newest first.
    found = store.scoring_evidence(db, ["s"], fast_since_day="2000-01-01", runs_since=NOW - timedelta(days=60), history_day="2000-01-01")
    assert [(store.iso(at), h, tools is not None) for at, h, tools in found.snapshots["s"]] == [(day(1), a, True), (day(10), b, True),
                                                                                                (day(20), a, True)]
    changes = store.page_evidence(db, ["s"], rubric="scoreboard", since_day="2000-01-01", since=NOW)["s"]["changes"]
    assert [(c["captured_at"], len(c["previous"]), len(c["tools"])) for c in changes] == [(day(20), 2, 1), (day(10), 1, 2)]

    # A probe stored after later ones (a shard merged into a main that moved on) takes its place in the history.
    store.record_probe(db, probe(tools=[]).model_copy(update={"server_id": "s", "started_at": NOW - timedelta(days=15, hours=1)}), None)
    empty = store.content_hash([])
    assert history(db, "s") == [(day(1), a), (day(10), b), (store.iso(NOW - timedelta(days=15, hours=1)), empty),
                                (day(15), b), (day(20), a)]


def as_before(path: Path) -> None:
    """The database as the engine before migration 12 stored the same history: each probe run's evidence holding its tool
    list (null when it listed none), a tool snapshot of every capture, and a few snapshots no run points at (as the
    synthetic fleet wrote them)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("begin")
    conn.execute("drop view tool_snapshots")
    conn.execute("""create table tool_snapshots (id integer primary key, server_id text not null references servers(id),
                    probe_run_id integer references probe_runs(id), captured_at text not null, content_hash text not null,
                    tool_count integer not null, tools text not null)""")
    conn.execute("create index idx_tool_snapshots_server_id_captured_at on tool_snapshots (server_id, captured_at)")
    conn.execute("create index idx_tool_snapshots_probe_run_id on tool_snapshots (probe_run_id)")
    conn.execute("""insert into tool_snapshots (server_id, probe_run_id, captured_at, content_hash, tool_count, tools)
                    select p.server_id, p.id, p.started_at, l.content_hash, l.tool_count, l.tools from probe_runs p
                    join tool_lists l on l.server_id = p.server_id and l.content_hash = p.tools_hash order by p.id""")
    conn.execute("update tool_snapshots set probe_run_id = null where id % 7 = 0")
    conn.execute("""update probe_runs set evidence = json_set(evidence, '$.tools', json(coalesce((select tools from tool_lists l
                    where l.server_id = probe_runs.server_id and l.content_hash = probe_runs.tools_hash), 'null')))""")
    conn.execute("drop index probe_runs_tools")
    conn.execute("alter table probe_runs drop column tools_hash")
    conn.execute("drop table tool_lists")
    conn.execute("delete from _sqlite_migrations where name = 'm012_tool_lists_once'")
    conn.execute("commit")
    conn.close()


def outputs(path: Path, out: Path) -> Path:
    """Score the database and build its site: the cards, every server's JSON and page."""
    db = store.open_db(path)
    servers = store.active_servers(db)
    run_score(db, servers=servers, now=NOW + timedelta(hours=1), progress=Progress("score", len(servers), stream=io.StringIO()))
    (out / "site").mkdir(parents=True)
    (out / "scores.tsv").write_text("".join("\t".join(map(str, row)) + "\n" for row in db.execute("select * from scores order by 1, 2")))
    run_build(db, rubrics=infos(), site_dir=out / "site", now=NOW + timedelta(hours=1), snapshots_url="https://example.org/snapshots")
    db.close()
    return out


def differing(left: Path, right: Path) -> list[str]:
    compared = filecmp.dircmp(left, right)
    found = [str(left / n) for n in compared.diff_files + compared.left_only + compared.right_only]
    found += [f for name in compared.common_dirs for f in differing(left / name, right / name)]
    return found


def test_migration_12_keeps_every_card_json_and_page_of_a_fleet_with_a_month_of_history(tmp_path):
    now_format, before = tmp_path / "recorded" / "fleet.db", tmp_path / "migrated" / "fleet.db"  # pages name the database's file
    before.parent.mkdir()
    generate(now_format, 60, now=NOW)
    db = store.open_db(now_format)
    _daily_probes(db, NOW)  # a deep probe a day for a month (a sandbox run a week), the list unchanged
    changing = [r[0] for r in db.execute("select id from servers where remote_url is not null order by id limit 3")]
    for server_id in changing:
        daily(db, server_id, 30, {1: LIST_A, 10: LIST_B, 20: LIST_A})
    db.close()
    before.write_bytes(now_format.read_bytes())
    as_before(before)
    old = sqlite3.connect(before)
    assert old.execute("select count(*) from tool_snapshots").fetchone()[0] == old.execute(
        "select count(*) from probe_runs where json_type(evidence, '$.tools') = 'array'").fetchone()[0] > 500  # a list a probe
    old.close()

    migrated = store.open_db(before)  # migration 12
    assert migrated.execute("select count(*) from _sqlite_migrations where name = 'm012_tool_lists_once'").fetchone()[0] == 1
    named = "exists (select 1 from probe_runs p where p.server_id = l.server_id and p.tools_hash = l.content_hash)"  # (the fleet's
    for table, query in {"tool_lists": f"select * from tool_lists l where {named} order by 1, 2",  # runs the month replaced named others)
                         "probe_runs": "select id, tools_hash, tool_count, json_remove(evidence, '$.tools') from probe_runs order by id",
                         "tool_snapshots": "select * from tool_snapshots order by server_id, captured_at"}.items():
        assert migrated.execute(query).fetchall() == Database(sqlite3.connect(now_format)).execute(query).fetchall(), table
    assert len(history(migrated, changing[0])) == 3
    migrated.close()

    assert differing(outputs(before, tmp_path / "migrated" / "out"), outputs(now_format, tmp_path / "recorded" / "out")) == []


def test_migration_12_applies_to_an_empty_database(tmp_path):
    db = Database(sqlite3.connect(tmp_path / "e.db"))
    migrations.apply(db, stop_before="m012_tool_lists_once")
    assert "tool_snapshots" in db.table_names()
    migrations.apply(db)
    assert "tool_snapshots" in db.view_names() and "tool_lists" in db.table_names()
