"""The fleet bench's quick path on 100 servers, so it cannot rot: loopback endpoints, a black hole, 30 simulated days, a
sharded day, the sizes and the projection."""

from __future__ import annotations

from pathlib import Path

from bench import fleet_day, fleet_history
from pipeline import store


def test_a_sharded_day_over_a_simulated_fleet(tmp_path: Path) -> None:
    args = fleet_day.arguments(["--servers", "100", "--shards", "2", "--deadline", "1", "--black-holed", "3"])
    lines: list[str] = []
    figures = fleet_day.run_day(args, tmp_path, say=lines.append)

    assert 0.95 < figures.black_hole_wait < 2  # a connect to the black hole waited out its deadline
    steps = int(fleet_history.RAW_KEPT / fleet_history.FAST_EVERY)
    assert figures.history_rows["probe_runs"] >= figures.remote * steps
    db = store.open_db(tmp_path / "fleet.db")
    days = db.execute("select count(distinct substr(started_at, 1, 10)) from probe_runs where kind = 'deep'").fetchone()[0]
    assert days >= fleet_history.DAYS
    assert db.execute("select count(distinct day) from score_history").fetchone()[0] == fleet_history.DAYS + 1  # the month, and today

    for stage in ("monitor", "probe"):
        shards = figures.shards[stage]
        assert [r["shard"] for r in shards] == ["1/2", "2/2"]
        assert sum(r["servers"] for r in shards) == figures.remote  # every remote server in exactly one shard
        counts = {k: sum(r["counts"].get(k, 0) for r in shards) for k in ("ok", "timeout", "auth_required", "http_error")}
        assert counts["timeout"] >= 3 and counts["ok"] > 0 and counts["auth_required"] + counts["http_error"] > 0, counts
    holes = db.execute("select id from servers where remote_url like ?", [f"%:{figures.black_hole_port}/%"]).fetchall()
    assert len(holes) == 3
    for (server_id,) in holes:  # each black-holed server's fast and deep probe of the day waited out the connect deadline
        today = db.execute("select outcome, detail from probe_runs where server_id = ? and run_id is not null", [server_id]).fetchall()
        assert len(today) == 2 and {o for o, _ in today} == {"timeout"}, today
        assert all("ConnectTimeout" in d or "no connection within 1 s" in d for _, d in today), today
    assert sum(r["servers"] for r in figures.shards["judge"]) == 100
    analysed = figures.shards["analyze"]
    assert sum(r["servers"] for r in analysed) == figures.changed == 4  # 4% of the sources changed
    assert sum(r["counts"].get("analyzed", 0) for r in analysed) == 4
    fresh = db.execute("select count(*) from probe_runs where kind = 'deep' and run_id is not null").fetchone()[0]
    assert fresh == figures.remote  # the shards' deep probes, merged into the main database
    assert all(" merged" in line for line in figures.merged.values()), figures.merged
    assert (tmp_path / "site" / "index.html").is_file()
    assert 0 < figures.sizes["db_gzip"] < figures.sizes["db"]

    fleet_day.report(figures, args, (0.1, 0.1), say=lines.append)
    text = "\n".join(lines)
    for expected in ("black-holed", "per shard median", "gzip'd", "projection", "monitor", "runner-hours", "calibration loop"):
        assert expected in text
    projected = fleet_day.projection(figures, args)
    assert set(projected) == {"analyze", "monitor", "probe", "judge", "score+build"}
    assert all(p["wall_s"] > fleet_day.JOB_SETUP_S for p in projected.values())
