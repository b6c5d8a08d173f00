"""The fleet rescore: worker processes give exactly the cards the serial path gives."""

from __future__ import annotations

import io
import json

import pipeline.score as scoring
from bench.synthetic import NOW, generate
from pipeline import store
from pipeline.progress import Progress


def cards(path, workers, monkeypatch):
    monkeypatch.setattr(scoring, "PARALLEL_FROM", 1)
    monkeypatch.setattr(scoring, "TASK_SIZE", 40)
    db = store.open_db(path)
    servers = store.active_servers(db)
    report = scoring.run_score(db, servers=servers, now=NOW, progress=Progress("score", len(servers), stream=io.StringIO()), workers=workers)
    rows = [dict(r) for r in db.query("select * from scores order by server_id, rubric")]
    history = db["score_history"].count
    db.close()
    return report, rows, history


def test_parallel_rescore_matches_serial(tmp_path, monkeypatch):
    generate(tmp_path / "a.db", 150, seed=7)
    generate(tmp_path / "b.db", 150, seed=7)
    serial, serial_rows, serial_history = cards(tmp_path / "a.db", 1, monkeypatch)
    parallel, parallel_rows, parallel_history = cards(tmp_path / "b.db", 2, monkeypatch)
    assert serial.counts == parallel.counts and serial.counts["scored"] == 600
    assert serial_rows == parallel_rows and serial_history == parallel_history == 600
    graded = {r["grade"] for r in serial_rows if r["rubric"] == "scoreboard"}
    assert len(graded) >= 3  # the synthetic fleet spans grades: scores are not collapsed


def test_rescore_after_a_drop_raises_alerts(tmp_path, monkeypatch):
    generate(tmp_path / "c.db", 60, seed=3)
    cards(tmp_path / "c.db", 1, monkeypatch)
    db = store.open_db(tmp_path / "c.db")
    target = next(db.query("select server_id from scores where rubric = 'scoreboard' and composite >= 40 limit 1"))["server_id"]
    with db.atomic():  # the repository is archived between runs: the archived flag caps the composite at 40
        row = next(db.query("select id, result from analyses where server_id = ? order by id desc limit 1", [target]))
        result = json.loads(row["result"])
        result["repository"] = {"host": "github", "archived": True, "status": "not_found"}
        db["analyses"].update(row["id"], {"result": json.dumps(result)})
    db.close()
    report, rows, _ = cards(tmp_path / "c.db", 1, monkeypatch)
    card = next(r for r in rows if r["server_id"] == target and r["rubric"] == "scoreboard")
    assert card["composite"] == 0  # dead repository caps at 0
    assert report.counts["alerts"] >= 1
