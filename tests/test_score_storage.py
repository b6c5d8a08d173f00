"""Score outcomes stored compactly (migration 10, deviation 104): existing cards convert without loss, the `scores` view gives every
card back byte for byte, a rule's name, dimension and maximum are stored once, and `rule_outcomes` answers per-rule questions."""

from __future__ import annotations

import io
import json
from datetime import timedelta

from sqlite_utils import Database

from bench.synthetic import NOW, generate
from pipeline import store
from pipeline.datasette_metadata import CANNED_QUERIES
from pipeline.progress import Progress
from pipeline.score import run_score
from pipeline.store.migrations import migrations

CARD_COLUMNS = "server_id, rubric, composite, grade, visibility, dimension_indicator, dimensions, rules, flags, badges, rules_version, " \
               "engine_version, scored_at, extra"


def scored_fleet(path, servers=40):
    generate(path, servers)
    db = store.open_db(path)
    run_score(db, servers=store.active_servers(db), now=NOW - timedelta(days=1), progress=Progress("score", servers, stream=io.StringIO()))
    return db


def test_existing_cards_convert_without_loss(tmp_path):
    """Cards written as repeated JSON (the schema before migration 10) read back through the view exactly as they were."""
    cards = [tuple(row) for row in scored_fleet(tmp_path / "new.db").execute(f"select {CARD_COLUMNS} from scores order by server_id, rubric")]
    assert cards and sum(len(json.loads(card[7])) for card in cards) > 1000  # many rules (a card not applicable has none)
    db = Database(tmp_path / "old.db")  # the schema as it was before migration 10
    migrations.apply(db, stop_before="m010_compact_score_outcomes")
    assert "scores" in db.table_names()
    source = store.open_db(tmp_path / "new.db")
    db["servers"].insert_all(list(source.query("select * from servers")))
    db.conn.executemany(f"insert into scores ({CARD_COLUMNS}) values ({', '.join('?' for _ in cards[0])})", cards)
    db.conn.commit()
    db = store.open_db(tmp_path / "old.db")  # migrates
    assert "scores" in db.view_names() and "scores" not in db.table_names()
    assert [tuple(row) for row in db.execute(f"select {CARD_COLUMNS} from scores order by server_id, rubric")] == cards
    stored = sum(len(r[0]) + len(r[1]) for r in db.execute("select rules, dimensions from score_cards"))
    assert stored < 0.5 * sum(len(card[6]) + len(card[7]) for card in cards)


def test_a_rule_is_described_once_and_its_outcomes_are_rows(tmp_path):
    db = scored_fleet(tmp_path / "fleet.db")
    rules = db.execute("select count(*), count(distinct rubric || rule) from score_rules").fetchone()
    assert rules[0] == rules[1] and rules[0] > 50  # one row per rule of every rubric, for the whole fleet
    card = json.loads(next(db.query("select rules from scores where server_id = 'synthetic-00001' and rubric = 'scoreboard'"))["rules"])
    rows = list(db.query("select * from rule_outcomes where server_id = 'synthetic-00001' and rubric = 'scoreboard' order by position"))
    assert [(r["rule"], r["dimension"], r["points"], r["max_points"], bool(r["measured"]), r["reason"], r["how_to_gain"]) for r in rows] == [
        (r["rule"], r["dimension"], r["points"], r["max_points"], r["measured"], r["reason"], r["how_to_gain"]) for r in card]
    failing = db.execute(CANNED_QUERIES["failing_rule"]["sql"], {"rule": "uptime"}).fetchall()
    assert failing and all(row[0] == "uptime" and row[3] < row[4] for row in failing)  # points under the maximum, compared as numbers
    every = db.execute(CANNED_QUERIES["failing_rule"]["sql"], {"rule": ""}).fetchall()  # no rule named: every rule's
    assert set(failing) < set(every) and len({row[0] for row in every}) > 5 and all(row[3] < row[4] for row in every)


def test_rescoring_reuses_the_reference_rows(tmp_path):
    db = scored_fleet(tmp_path / "fleet.db")
    before = db.execute("select count(*) from score_rules").fetchone()[0], db.execute("select count(*) from score_dimensions").fetchone()[0]
    run_score(db, servers=store.active_servers(db), now=NOW, progress=Progress("score", 40, stream=io.StringIO()))
    after = db.execute("select count(*) from score_rules").fetchone()[0], db.execute("select count(*) from score_dimensions").fetchone()[0]
    assert after == before


def test_the_build_reads_each_card_as_the_view_gives_it(tmp_path):
    db = scored_fleet(tmp_path / "fleet.db")
    ids = [s.id for s in store.active_servers(db)]
    read = store.score_cards(db, ids)
    viewed = list(db.query(f"select {CARD_COLUMNS} from scores"))
    assert len(viewed) == 4 * len(ids)
    for row in viewed:
        assert read[row["server_id"]][row["rubric"]] == row  # the same bytes in every column
