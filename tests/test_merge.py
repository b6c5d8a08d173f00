"""Shard databases and their merge, through the real CLI on real SQLite files: a stage split in shards and merged leaves
the same evidence as one unsharded run; a merge is idempotent and all-or-nothing."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import shutil
import sqlite3
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.synthetic import generate
from pipeline import store
from pipeline.cli import main
from pipeline.fleet.merge import MergeRefused, merge_shards
from pipeline.score import run_score
from tests.support import quiet
from tests.test_cli import scoreboard

# What a judgement says, without its id and time (those differ between any two runs).
JUDGEMENTS = "select server_id, tool_name, tool_hash, provider, model, offline, clarity, input_completeness, confidence, rationale from judgements"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """60 synthetic servers, scored (the judge passes over local servers below Assessed), in a database of their own."""
    path = tmp_path_factory.mktemp("fleet") / "fleet.db"
    generate(path, 60, seed=3)
    db = store.open_db(path)
    run_score(db, servers=store.active_servers(db), now=datetime.now(timezone.utc), progress=quiet(60))
    db.close()
    return path


def copy(fleet: Path, folder: Path, name: str) -> Path:
    target = folder / name
    shutil.copy(fleet, target)
    return target


def rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute(sql).fetchall(), key=repr)
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def in_process(*args: str) -> subprocess.CompletedProcess:
    """The CLI's own entry point in this process (a subprocess costs seconds of imports on a loaded machine)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def shard_run(stage: str, main: Path, folder: Path, n: int, *extra: str, only: tuple[int, ...] = (), cli=in_process) -> list[Path]:
    paths = []
    for i in only or range(1, n + 1):
        path = folder / f"{stage}-{i}-of-{n}.db"
        done = cli(stage, "--db", str(main), "--shard", f"{i}/{n}", "--shard-db", str(path), *extra)
        assert done.returncode == 0, done.stderr
        assert f"shard {i}/{n} of {stage} written to {path}" in done.stdout
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def judged(fleet, tmp_path_factory):
    """The judge run once unsharded, and in three shards over an untouched main."""
    folder = tmp_path_factory.mktemp("judged")
    reference = copy(fleet, folder, "reference.db")
    assert scoreboard("judge", "--db", str(reference)).returncode == 0
    main = copy(fleet, folder, "main.db")
    before = digest(main)
    shards = shard_run("judge", main, folder, 3, cli=scoreboard)
    return folder, reference, main, before, shards


def test_a_shard_stage_leaves_the_main_database_as_it_was(judged):
    _, _, main, before, _ = judged
    wal = Path(str(main) + "-wal")  # a reader of a WAL database may leave an empty log beside it; nothing is written to it
    assert digest(main) == before and (not wal.exists() or wal.stat().st_size == 0)


def test_a_shard_database_holds_only_what_its_stage_produced(judged, fleet):
    _, _, _, _, shards = judged
    for index, path in enumerate(shards, start=1):
        assert path.stat().st_size < fleet.stat().st_size / 4
        manifest = rows(path, "select stage, shard, shard_index, shard_count, engine_version from shard_manifest")
        assert manifest == [("judge", f"{index}/3", index, 3, "0.1.0")]
        assert rows(path, "select count(*) from servers") == [(0,)] and rows(path, "select count(*) from probe_runs") == [(0,)]
        assert rows(path, "select stage, status, json_extract(args, '$.shard') from runs") == [("judge", "ok", f"{index}/3")]
        judged_servers = {r[0] for r in rows(path, "select distinct server_id from judgements")}
        from pipeline.fleet.shards import shard_of
        assert judged_servers and {shard_of(s, 3) for s in judged_servers} == {index}
    ids = [rows(p, "select shard_id from shard_manifest")[0][0] for p in shards]
    assert len(set(ids)) == 3


def test_three_shards_merged_give_the_evidence_of_one_run(judged):
    folder, reference, main, _, shards = judged
    merged = copy(main, folder, "merged.db")
    done = scoreboard("merge", "--db", str(merged), *map(str, shards))
    assert done.returncode == 0, done.stderr
    total, servers = len(rows(reference, JUDGEMENTS)), len(rows(reference, "select id from servers"))
    # every judged server's `examined` mark (the cadence's) comes with its judgements
    assert f"merge done: shards 3 merged, 0 already merged; rows examined {servers}, judgements {total}, runs 3;" in done.stdout
    assert rows(merged, "select server_id, stage from examined order by 1") == rows(reference, "select server_id, stage from examined order by 1")
    assert "[merge] 3/3" in done.stderr
    assert total > 100 and rows(merged, JUDGEMENTS) == rows(reference, JUDGEMENTS)
    assert rows(merged, "select stage, json_extract(args, '$.shard') from runs where stage = 'judge'") == [
        ("judge", "1/3"), ("judge", "2/3"), ("judge", "3/3")]
    assert rows(merged, "select stage, status from runs where stage = 'merge'") == [("merge", "ok")]
    assert len(rows(merged, "select * from shard_merges")) == 3

    before = dump(merged)
    again = scoreboard("merge", "--db", str(merged), *map(str, reversed(shards)))
    assert again.returncode == 0 and "shards 0 merged, 3 already merged" in again.stdout and "already merged at" in again.stderr
    assert dump(merged) == before  # merging twice is merging once, to the byte of every row


def test_merged_in_any_order_or_split_over_invocations_the_result_is_the_same(judged):
    folder, reference, main, _, shards = judged
    one_by_one = copy(main, folder, "one-by-one.db")
    for path in reversed(shards):
        assert in_process("merge", "--db", str(one_by_one), str(path), str(path)).returncode == 0
    assert rows(one_by_one, JUDGEMENTS) == rows(reference, JUDGEMENTS)


def test_a_rerun_stage_over_a_merged_database_upserts_on_natural_keys(judged, fleet):
    """A shard made from an older state (main judged since) replaces judgements of the same tool text, never doubles them."""
    folder, reference, main, _, shards = judged
    judged_main = copy(reference, folder, "judged-main.db")
    assert in_process("merge", "--db", str(judged_main), str(shards[0])).returncode == 0
    assert rows(judged_main, JUDGEMENTS) == rows(reference, JUDGEMENTS)
    assert rows(judged_main, "select count(*) from judgements") == rows(reference, "select count(*) from judgements")


def spoiled(source: Path, folder: Path, name: str, sql: str) -> Path:
    target = folder / name
    shutil.copy(source, target)
    conn = sqlite3.connect(target)
    with conn:
        conn.execute(sql)
    conn.close()
    return target


def test_bad_shards_are_refused_by_name_and_nothing_is_merged(judged, tmp_path):
    folder, _, main, _, shards = judged
    target = copy(main, tmp_path, "target.db")
    corrupt = tmp_path / "corrupt.db"
    data = bytearray(shards[1].read_bytes())
    data[200:8192] = b"\xff" * (8192 - 200)  # the header survives, the schema does not
    corrupt.write_bytes(bytes(data))
    text = tmp_path / "notes.db"
    text.write_text("not a database")
    older = spoiled(shards[1], tmp_path, "older.db", "update shard_manifest set migrations = json_remove(migrations, '$[#-1]')")
    engine = spoiled(shards[1], tmp_path, "engine.db", "update shard_manifest set engine_version = '0.0.9'")
    plain = copy(main, tmp_path, "plain.db")  # a scoreboard database, not a shard
    before = dump(target)
    bad = {corrupt: "corrupt.db: ", text: "notes.db: not a shard database", older: "older.db: made at schema level",
           engine: "engine.db: made by engine 0.0.9, this is engine 0.1.0", plain: "plain.db: a SQLite database, but not a shard database",
           tmp_path / "missing.db": "missing.db: no such shard"}
    done = scoreboard("merge", "--db", str(target), str(shards[0]), *map(str, bad), str(shards[2]))
    assert done.returncode == 2 and all(says in done.stderr for says in bad.values()), done.stderr
    assert "nothing was merged; the database is unchanged" in done.stderr and "Traceback" not in done.stderr
    assert dump(target) == before
    db = store.open_db(target)
    for path, says in bad.items():  # each alone, beside good shards
        with pytest.raises(MergeRefused, match=re.escape(says)):
            merge_shards(db, [shards[0], path, shards[2]], now=datetime.now(timezone.utc), progress=quiet(2))
    db.close()
    assert dump(target) == before


def test_two_shards_claiming_the_same_part_of_one_run_are_refused(judged, tmp_path):
    folder, _, main, _, shards = judged
    second = shard_run("judge", main, tmp_path, 3, only=(2,))[0]  # a retried matrix job: shard 2/3 again, another shard id
    target = copy(main, tmp_path, "target.db")
    before = dump(target)
    done = in_process("merge", "--db", str(target), *map(str, shards), str(second))
    assert done.returncode == 2 and f"{second}: claims shard 2/3 of the same judge run as {shards[1]}" in done.stderr
    assert dump(target) == before
    assert in_process("merge", "--db", str(target), *map(str, shards)).returncode == 0
    done = in_process("merge", "--db", str(target), str(second))  # and after the first was merged
    assert done.returncode == 2 and "shard 2/3 of this judge run was already merged from another shard database" in done.stderr


def test_a_complete_merge_refuses_a_run_with_a_shard_missing(judged, tmp_path):
    _, _, main, _, shards = judged
    target = copy(main, tmp_path, "target.db")
    before = dump(target)
    done = in_process("merge", "--complete", "--db", str(target), str(shards[0]), str(shards[2]))
    assert done.returncode == 2 and "the judge run in 3 shards (base " in done.stderr and "is incomplete: shard 2/3 missing" in done.stderr
    assert dump(target) == before
    assert in_process("merge", "--db", str(target), str(shards[1])).returncode == 0  # as shards arrive, without --complete
    assert in_process("merge", "--complete", "--db", str(target), *map(str, shards)).returncode == 0  # merged before counts


def test_shards_of_one_run_split_two_ways_are_refused(judged, tmp_path):
    folder, _, main, _, shards = judged
    half = shard_run("judge", main, tmp_path, 2, only=(2,))[0]
    target = copy(main, tmp_path, "target.db")
    done = in_process("merge", "--db", str(target), str(shards[0]), str(half))
    assert done.returncode == 2 and "shards of one judge run split it 2 and 3 ways" in done.stderr


def test_a_changed_row_of_main_is_carried_column_by_column(fleet, tmp_path):
    """A run killed mid-way is marked abandoned by the next run of its stage: a shard carries that change of a main row."""
    main = copy(fleet, tmp_path, "main.db")
    conn = sqlite3.connect(main)
    with conn:
        conn.execute("insert into runs (stage, started_at, status, engine_version, args) values ('judge', '2026-01-01', 'running', '0.1.0', '{}')")
    conn.close()
    shards = shard_run("judge", main, tmp_path, 2)
    assert rows(shards[0], "select op, json_extract(old, '$.status') from shard_rows where tbl = 'runs' and op = 'update'") == [
        ("update", "running")]
    assert in_process("merge", "--db", str(main), *map(str, shards)).returncode == 0
    assert rows(main, "select status from runs where started_at = '2026-01-01'") == [("abandoned",)]


def test_analyze_from_local_directories_in_shards_is_the_unsharded_analysis(fleet, tmp_path):
    servers = [f"synthetic-{i:05d}" for i in range(8)]
    sources = []
    for i, server_id in enumerate(servers):
        folder = tmp_path / "src" / server_id
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(f"# Server {i}\n\nAn MCP server that reads {i} files.\n")
        (folder / "server.py").write_text("from mcp.server.fastmcp import FastMCP\n\nmcp = FastMCP('x')\n\n\n@mcp.tool()\n"
                                          f"def read_{i}(path: str) -> str:\n    \"\"\"Read a file.\"\"\"\n    return open(path).read()\n")
        sources += ["--server", server_id, "--source", f"{server_id}={folder}"]
    reference = copy(fleet, tmp_path, "reference.db")
    assert in_process("analyze", "--db", str(reference), *sources).returncode == 0
    main = copy(fleet, tmp_path, "main.db")
    shards = shard_run("analyze", main, tmp_path, 3, *sources)
    assert in_process("merge", "--db", str(main), *map(str, shards)).returncode == 0
    query = ("select server_id, fetcher, source_ref, ok, error, license, spec_version, json_remove(result, '$.analyzed_at') from analyses "
             f"where server_id in ({', '.join(repr(s) for s in servers)}) and analyzed_at > '2026-11-30'")
    analysed = rows(main, query)
    assert len(analysed) == 8 and analysed == rows(reference, query)
    assert json.loads(analysed[0][-1])["server_id"] == servers[0]


def test_a_shard_of_another_database_is_refused_whole(judged, tmp_path):
    """A shard that reads well but whose rows this database cannot hold (its servers are not here): nothing of it stays."""
    _, _, _, _, shards = judged
    other = tmp_path / "other.db"
    store.open_db(other).close()
    before = dump(other)
    done = in_process("merge", "--db", str(other), *map(str, shards))
    assert done.returncode == 2 and f"{shards[0]}: FOREIGN KEY constraint failed" in done.stderr
    assert dump(other) == before


def test_a_stage_that_fails_leaves_no_shard(fleet, tmp_path):
    from pipeline.fleet.capture import captured
    from pipeline.fleet.shards import Shard

    with pytest.raises(RuntimeError, match="disk full"):
        with captured(fleet, tmp_path / "judge.db", "judge", Shard(1, 2)) as work:
            db = store.open_db(work.path)
            store.start_run(db, "judge", {}, datetime.now(timezone.utc))
            db.close()
            raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_main_database_gives_no_shard_and_is_named(fleet, tmp_path):
    main = copy(fleet, tmp_path, "main.db")
    data = bytearray(main.read_bytes())
    data[4096 * 3:4096 * 40] = b"\xff" * (4096 * 37)
    main.write_bytes(bytes(data))
    done = in_process("judge", "--db", str(main), "--shard", "1/2", "--shard-db", str(tmp_path / "shard.db"))
    assert done.returncode == 2 and f"{main}" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert ".work" not in done.stderr, done.stderr
    assert not [p.name for p in tmp_path.iterdir() if "shard" in p.name]


def test_rows_a_stage_deletes_are_deleted_in_main_after_the_rows_holding_their_ids(fleet, tmp_path):
    """A stage that deletes a stage run and its probes in a shard: the merge deletes the probes, then the run; a new probe
    comes with the tool list it names."""
    from pipeline.fleet.capture import captured
    from pipeline.fleet.shards import Shard
    from tests.support import probe

    main = copy(fleet, tmp_path, "main.db")
    db = store.open_db(main)
    run = store.start_run(db, "probe", {}, datetime.now(timezone.utc))
    old = store.record_probe(db, probe().model_copy(update={"server_id": "synthetic-00001"}), run)
    db.close()
    with captured(main, tmp_path / "prune.db", "monitor", Shard(1, 1)) as work:
        db = store.open_db(work.path)
        with db.atomic():
            db.execute("delete from probe_runs where id = ?", [old])
            db.execute("delete from runs where id = ?", [run])
        fresh = store.record_probe(db, probe().model_copy(update={"server_id": "synthetic-00002"}), None)
        db.close()
    assert rows(tmp_path / "prune.db", "select tbl, op from shard_rows") == [
        ("probe_daily", "insert"), ("probe_runs", "delete"), ("probe_runs", "insert"), ("runs", "delete"),
        ("tool_lists", "insert")]  # the new probe took the deleted one's row id (SQLite reuses the highest): both are carried
    assert in_process("merge", "--db", str(main), str(tmp_path / "prune.db")).returncode == 0
    assert rows(main, f"select count(*) from probe_runs where id = {old} or run_id = {run}") == [(0,)]
    assert rows(main, f"select count(*) from runs where id = {run} and stage = 'probe'") == [(0,)]  # (the merge's own may take its id)
    linked = rows(main, "select p.server_id, s.tool_count from tool_snapshots s join probe_runs p on p.id = s.probe_run_id "
                        "where s.server_id = 'synthetic-00002' and p.run_id is null")
    assert linked == [("synthetic-00002", 1)] and fresh


def shard_contents(path: Path) -> list[str]:
    """A shard database's every row but its manifest's id and time (each shard gets its own) and the runs' times."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("update shard_manifest set shard_id = '', created_at = ''")
        conn.execute("update runs set started_at = '', finished_at = '', counts = json_remove(counts, '$.seconds')")
        return list(conn.iterdump())
    finally:
        conn.rollback()
        conn.close()


def test_a_shard_captured_in_place_is_the_shard_of_a_private_copy(fleet, tmp_path):
    """--shard-in-place (deviation 108): the stage writes --db itself, a disposable copy; the shard written is the same."""
    (tmp_path / "copied").mkdir()
    (tmp_path / "in-place").mkdir()
    main = copy(fleet, tmp_path, "main.db")
    before = digest(main)
    copied = shard_run("judge", main, tmp_path / "copied", 2)
    assert digest(main) == before
    disposable = copy(fleet, tmp_path, "disposable.db")
    in_place = shard_run("judge", disposable, tmp_path / "in-place", 2, "--shard-in-place", only=(1,))
    done = in_process("judge", "--db", str(copy(fleet, tmp_path, "disposable-2.db")), "--shard", "2/2", "--shard-db",
                      str(tmp_path / "in-place" / "judge-2-of-2.db"), "--shard-in-place")
    assert done.returncode == 0 and "captured in place (no copy)" in done.stdout, done.stderr
    in_place.append(tmp_path / "in-place" / "judge-2-of-2.db")
    for one, other in zip(copied, in_place):
        assert rows(one, "select base from shard_manifest") == rows(other, "select base from shard_manifest")
        assert rows(one, "select tbl, rid, op from shard_rows") == rows(other, "select tbl, rid, op from shard_rows")
        assert rows(one, JUDGEMENTS) == rows(other, JUDGEMENTS)
    # --db was written by the stage, and keeps none of the capture's triggers or tables.
    leftovers = rows(disposable, "select name from sqlite_master where name like '\\_shard\\_%' escape '\\'")
    assert digest(disposable) != before and leftovers == []
    merged = {}
    for name, shards in (("copied", copied), ("in-place", in_place)):
        merged[name] = copy(fleet, tmp_path, f"merged-{name}.db")
        assert in_process("merge", "--db", str(merged[name]), *map(str, shards)).returncode == 0
    assert len(rows(merged["copied"], JUDGEMENTS)) > 50 and rows(merged["copied"], JUDGEMENTS) == rows(merged["in-place"], JUDGEMENTS)
    assert rows(merged["copied"], "select server_id, stage from examined") == rows(merged["in-place"], "select server_id, stage from examined")


def test_rows_deleted_and_reused_in_place_give_the_same_shard(fleet, tmp_path):
    """The capture's hardest case (a row deleted and its row id reused) writes the same shard in place as on a copy."""
    from pipeline.fleet.capture import captured
    from pipeline.fleet.shards import Shard
    from tests.support import probe

    main = copy(fleet, tmp_path, "main.db")
    db = store.open_db(main)
    old = store.record_probe(db, probe().model_copy(update={"server_id": "synthetic-00001"}), None)
    db.close()
    disposable = copy(main, tmp_path, "disposable.db")
    written = {}
    for name, source, in_place in (("copied", main, False), ("in-place", disposable, True)):
        with captured(source, tmp_path / f"{name}.db", "monitor", Shard(1, 1), in_place=in_place) as work:
            assert (work.path == source) == in_place
            db = store.open_db(work.path)
            with db.atomic():
                db.execute("delete from probe_runs where id = ?", [old])
                db.execute("update servers set description = 'changed' where id = 'synthetic-00003'")
            store.record_probe(db, probe().model_copy(update={"server_id": "synthetic-00002"}), None)
            db.close()
        written[name] = tmp_path / f"{name}.db"
    assert len(rows(written["copied"], "select * from shard_rows")) >= 5
    assert shard_contents(written["copied"]) == shard_contents(written["in-place"])
    assert not list(tmp_path.glob("*.work*"))


def test_a_shard_in_place_needs_a_shard_database(fleet, tmp_path):
    main = copy(fleet, tmp_path, "main.db")
    before = digest(main)
    done = in_process("judge", "--db", str(main), "--shard", "1/2", "--shard-in-place")
    assert done.returncode == 2 and "--shard-in-place needs --shard-db PATH" in done.stderr
    assert digest(main) == before


@pytest.mark.parametrize("in_place", [False, True])
def test_a_stage_may_change_a_row_twice_by_upsert_and_replace_it(fleet, tmp_path, in_place):
    """SQLite resolves a conflict inside a trigger by the firing statement's policy: the capture's triggers meet none, so an
    upsert changing a row twice in one stage (the fast-failure rollup of a prune in a monitor shard) does not abort it."""
    from pipeline.fleet.capture import captured
    from pipeline.fleet.shards import Shard

    main = copy(fleet, tmp_path, "main.db")
    db = store.open_db(main)
    db.execute("insert into fast_failures (server_id, day, failed, first_at, last_at) values "
               "('synthetic-00001', '2026-11-01', 2, '2026-11-01T00:00:00Z', '2026-11-01T01:00:00Z')")
    db.conn.commit()
    db.close()
    source = main if in_place else copy(main, tmp_path, "source.db")
    upsert = ("insert into fast_failures (server_id, day, failed, first_at, last_at) values (?, '2026-11-01', 1, '2026-11-01T00:00:00Z', "
              "'2026-11-01T02:00:00Z') on conflict (server_id, day) do update set failed = failed + excluded.failed, "
              "last_at = max(last_at, excluded.last_at)")
    with captured(source, tmp_path / "shard.db", "monitor", Shard(1, 1), in_place=in_place) as work:
        db = store.open_db(work.path)
        with db.atomic():
            for server in ("synthetic-00001", "synthetic-00001", "synthetic-00002", "synthetic-00002"):
                db.execute(upsert, [server])  # an existing row changed twice, a new one inserted then changed
        db.close()
    assert rows(tmp_path / "shard.db", "select server_id, failed from fast_failures order by server_id") == [
        ("synthetic-00001", 4), ("synthetic-00002", 2)]
    olds = [json.loads(old) for (old,) in rows(tmp_path / "shard.db", "select old from shard_rows where tbl = 'fast_failures' and old is not null")]
    assert [o["failed"] for o in olds] == [2]  # the row as main had it, kept at its first change
    target = copy(fleet if in_place else main, tmp_path, "target.db")
    if in_place:
        db = store.open_db(target)
        db.execute("insert into fast_failures (server_id, day, failed, first_at, last_at) values "
                   "('synthetic-00001', '2026-11-01', 2, '2026-11-01T00:00:00Z', '2026-11-01T01:00:00Z')")
        db.conn.commit()
        db.close()
    assert in_process("merge", "--db", str(target), str(tmp_path / "shard.db")).returncode == 0
    assert rows(target, "select server_id, failed from fast_failures order by server_id") == [("synthetic-00001", 4), ("synthetic-00002", 2)]
