"""A probe stage in shards over real loopback servers, merged into a main database that moved on meanwhile: probe runs,
the tool lists they name and stage runs keep their links, a day's rollup adds up (deviation 84), a delisting is carried."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest

from pipeline import latency, store
from pipeline.fleet.shards import shard_of
from tests.support import probe, python_server
from tests.test_merge import in_process, rows, shard_run
from tests.test_probe_endpoint import Site, js, response

LOOPS = ["loop-a", "loop-b", "loop-c"]


def server_row(server_id: str, url: str, now: str) -> dict:
    return {"id": server_id, "name": server_id, "transport": "streamable-http", "remote_url": url, "is_active": 1,
            "first_seen_at": now, "last_seen_at": now, "sources": '["test"]'}


def today_probe(server_id: str, connect_ms: float):
    return probe().model_copy(update={"server_id": server_id, "started_at": datetime.now(timezone.utc), "connect_ms": connect_ms,
                                      "transport": "streamable-http"})


@pytest.fixture
def loopback(monkeypatch):
    monkeypatch.setenv("SCOREBOARD_ALLOW_PRIVATE", "1")  # catalog remotes on loopback may be dialled (tests only)
    routes = {("GET", "/.well-known/mcp-scoreboard"): lambda o: response("200 OK", js({"optout": True, "delist": True}))}
    with python_server("dual_http.py", "json") as url, Site(routes) as gone:
        yield url, gone.origin + "/mcp"


def test_probe_shards_merge_into_a_main_that_moved_on(loopback, tmp_path):
    url, gone_url = loopback
    assert {shard_of(s, 2) for s in LOOPS} == {1, 2}  # both shards have work
    stamp = store.iso(datetime.now(timezone.utc))
    main = tmp_path / "main.db"
    db = store.open_db(main)
    db["servers"].insert_all([server_row(s, url, stamp) for s in LOOPS] + [server_row("gone", gone_url, stamp)])
    store.record_probe(db, today_probe("loop-a", 100.0), None)  # earlier today, before the snapshot the shards start from
    db.close()
    reference = tmp_path / "reference.db"
    shutil.copy(main, reference)
    assert in_process("probe", "--db", str(reference), "--timeout", "5").returncode == 0

    shards = shard_run("probe", main, tmp_path, 2, "--timeout", "5")
    db = store.open_db(main)
    store.record_probe(db, today_probe("loop-a", 300.0), None)  # main moves on before the merge (a monitor run merged first)
    store.record_probe(db, today_probe("loop-b", 300.0), None)  # a day main had no row of when the shards started
    db.close()
    done = in_process("merge", "--db", str(main), *map(str, shards))
    assert done.returncode == 0, done.stderr

    outcomes = "select server_id, kind, outcome, tool_count from probe_runs where run_id is not null"
    assert rows(main, outcomes) == rows(reference, outcomes) and len(rows(main, outcomes)) == 4
    assert rows(main, "select server_id, outcome from probe_runs where server_id = 'gone'") == [("gone", "opted_out")]
    # every snapshot belongs to a probe of its own server, taken when it was captured; every probe to a probe run of its shard
    # each tool list the shards captured came with them; the history holds every change in time order, wherever the run
    # that made it was stored first: loop-a's list of this morning, the shard's, this morning's again (main's later probe)
    captured = "select p.server_id, l.tools from probe_runs p join tool_lists l on l.server_id = p.server_id and l.content_hash = p.tools_hash "
    assert rows(main, captured + "where p.run_id is not null order by 1") == rows(reference, captured + "where p.run_id is not null order by 1")
    history = "select server_id, count(*) from tool_snapshots group by server_id order by 1"
    assert rows(main, history) == [("loop-a", 3), ("loop-b", 2), ("loop-c", 1)]
    lists = rows(main, "select count(*) from tool_lists")
    assert in_process("merge", "--db", str(main), *map(str, shards)).returncode == 0  # given again: merged once
    assert rows(main, "select count(*) from tool_lists") == lists and rows(main, history) == [("loop-a", 3), ("loop-b", 2), ("loop-c", 1)]
    runs = rows(main, "select p.server_id, r.stage, json_extract(r.args, '$.shard') from probe_runs p join runs r on r.id = p.run_id")
    assert sorted(runs) == sorted((s, "probe", f"{shard_of(s, 2)}/2") for s in [*LOOPS, "gone"])

    day = datetime.now(timezone.utc).date().isoformat()
    rollup = rows(main, f"select runs, ok, latency_hist from probe_daily where server_id = 'loop-a' and day = '{day}' and kind = 'deep'")
    assert [(r, ok, latency.count(json.loads(h))) for r, ok, h in rollup] == [(3, 3, 3)]  # main's two and the shard's one
    assert rows(main, f"select runs, ok from probe_daily where server_id = 'loop-b' and day = '{day}' and kind = 'deep'") == [(2, 2)]
    assert rows(reference, f"select runs from probe_daily where server_id = 'loop-a' and day = '{day}' and kind = 'deep'") == [(2,)]
    for database in (main, reference):
        gone = rows(database, "select is_active, json_extract(attributes, '$.delisted_at') is not null from servers where id = 'gone'")
        assert gone == [(0, 1)]
