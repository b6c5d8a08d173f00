"""Score cards: their rows, bulk writes with the day's history and drop alerts, and the reads leaderboards need."""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from typing import Any, NamedTuple

from pydantic_core import from_json, to_json
from sqlite_utils import Database

from pipeline import ENGINE_VERSION
from pipeline.models import ScoreCard
from pipeline.store.encoding import in_chunks, iso
from pipeline.store.refusals import DATA_ERRORS, WriteRefused, one_server

SCORE_DROP_ALERT = 10.0  # seed 000: a drop of 10+ points between runs raises an alert

SCORE_COLUMNS = ("server_id", "rubric", "composite", "grade", "visibility", "dimension_indicator", "dimensions", "rules", "flags",
                 "badges", "rules_version", "engine_version", "scored_at", "extra")

# Score outcomes are stored compactly (migration 10, deviation 104): what a rule or dimension is (its name, dimension, maximum;
# its label) once per rubric in a reference table, and per card only what it concluded, as a JSON array per rule in this order.
# The `scores` view gives every card back in its full JSON shape, for every reader.
RULE_KEYS = ("rule", "dimension", "max_points")  # score_rules
RULE_OUTCOME = ("points", "measured", "reason", "how_to_gain", "evidence")  # score_cards.rules: [rule id, *these]
DIMENSION_KEYS = ("name", "label", "optional")  # score_dimensions
DIMENSION_OUTCOME = ("status", "score", "weight", "reason")  # score_cards.dimensions: [dimension id, *these]


class OutcomeRefs:
    """The ids of the rules and dimensions in the reference tables, read once per database and added to as new ones are met."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.rules = {(r[1], r[2], r[3], float(r[4])): r[0] for r in db.execute("select id, rubric, rule, dimension, max_points from score_rules")}
        self.dimensions = {(r[1], r[2], r[3], bool(r[4])): r[0]
                           for r in db.execute("select id, rubric, name, label, optional from score_dimensions")}

    def rule(self, rubric: str, rule: str, dimension: str, max_points: float) -> int:
        key = (rubric, rule, dimension, float(max_points))
        if key not in self.rules:
            self.rules[key] = self.db.execute("insert into score_rules (rubric, rule, dimension, max_points) values (?, ?, ?, ?)", key).lastrowid
        return self.rules[key]

    def dimension(self, rubric: str, name: str, label: str, optional: bool) -> int:
        key = (rubric, name, label, bool(optional))
        if key not in self.dimensions:
            self.dimensions[key] = self.db.execute("insert into score_dimensions (rubric, name, label, optional) values (?, ?, ?, ?)",
                                                   (rubric, name, label, int(optional))).lastrowid
        return self.dimensions[key]

    def compact(self, rubric: str, dimensions: list[dict[str, Any]], rules: list[dict[str, Any]]) -> tuple[bytes, bytes]:
        """A card's dimensions and rules (their full JSON shape, as dicts) as stored: arrays of ids and outcomes."""
        return (
            to_json([[self.dimension(rubric, d["name"], d["label"], d["optional"]), d["status"], d["score"], d["weight"], d["reason"]]
                     for d in dimensions]),
            to_json([[self.rule(rubric, r["rule"], r["dimension"], r["max_points"]), r["points"], int(r["measured"]), r["reason"],
                      r["how_to_gain"], r["evidence"]] for r in rules]),
        )
HISTORY_COLUMNS = ("server_id", "rubric", "day", "composite", "grade", "visibility", "rules_version", "scored_at")


JSON_BYTES_COLUMNS = {"dimensions", "rules", "flags", "badges", "extra"}  # handed over as UTF-8 bytes, stored as TEXT


def _upsert_sql(table: str, columns: tuple[str, ...], keys: tuple[str, ...]) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
    values = ", ".join("cast(? as text)" if c in JSON_BYTES_COLUMNS else "?" for c in columns)
    return f"insert into {table} ({', '.join(columns)}) values ({values}) on conflict ({', '.join(keys)}) do update set {updates}"


class CardRow(NamedTuple):
    """A score card serialised for storage; made wherever the card was scored (a worker process too)."""

    score: tuple
    history: tuple
    server_id: str
    rubric: str
    composite: float | None


def _card_json(value: Any) -> bytes:
    # Score cards are our own dataclasses with a fixed field order, so they need no key sorting to be
    # stable; pydantic-core encodes their dicts (vars) several times faster than json.dumps. The
    # bytes cross from worker processes as they are (cheaper to pickle than text) and SQLite casts
    # them to TEXT on insert.
    return to_json(value)


@functools.lru_cache(maxsize=8)
def _stamps(scored_at: datetime) -> tuple[str, str]:
    """(UTC day, ISO time) of a scoring pass: every card of a pass shares them."""
    return scored_at.astimezone(timezone.utc).date().isoformat(), iso(scored_at)


def card_row(card: ScoreCard, now: datetime) -> CardRow:
    """The card's columns; its dimensions and rules as lists of dicts, which the writer makes compact (ids come from the database)."""
    day, scored_at = _stamps(now)[0], _stamps(card.scored_at)[1]
    return CardRow(
        score=(
            card.server_id, card.rubric, card.composite, card.grade, card.visibility, card.dimension_indicator,
            [vars(d) for d in card.dimensions], [vars(r) for r in card.rules],
            _card_json([vars(f) for f in card.flags]), _card_json(card.badges),
            card.rules_version, ENGINE_VERSION, scored_at,
            _card_json({**card.extra, "uncapped": card.uncapped} if card.uncapped is not None else card.extra),
        ),
        history=(card.server_id, card.rubric, day, card.composite, card.grade, card.visibility, card.rules_version, scored_at),
        server_id=card.server_id,
        rubric=card.rubric,
        composite=card.composite,
    )


def write_card_rows(db: Database, rows: list[CardRow], now: datetime) -> tuple[dict[str, int], list[WriteRefused]]:
    """Store score cards (as rows), the day's history snapshot, and drop alerts, in one transaction, in bulk.

    Returns the counts and the servers refused: when the database refuses a row, the batch is written again
    server by server (each in a savepoint), so only a refused server's cards are left out, and its old cards stay.
    """
    counts = {"scored": len(rows), "alerts": 0}
    if not rows:
        return counts, []
    stamp = iso(now)
    previous: dict[tuple[str, str], float | None] = {}
    for chunk, marks in in_chunks(sorted({r.server_id for r in rows})):
        for row in db.execute(f"select server_id, rubric, composite from score_cards where server_id in ({marks})", chunk).fetchall():
            previous[(row[0], row[1])] = row[2]
    alerts = []
    for row in rows:
        old = previous.get((row.server_id, row.rubric))
        if old is not None and row.composite is not None and old - row.composite >= SCORE_DROP_ALERT:
            alerts.append((row.server_id, row.rubric, "score_drop", stamp, old, row.composite,
                           f"{row.rubric} score fell from {old:.1f} to {row.composite:.1f}"))
    try:
        with db.atomic():
            _write_cards(db, rows, alerts)
        counts["alerts"] = len(alerts)
        return counts, []
    except DATA_ERRORS:
        pass
    refused: list[WriteRefused] = []
    counts["scored"] = 0
    by_server: dict[str, list[CardRow]] = {}
    for row in rows:
        by_server.setdefault(row.server_id, []).append(row)
    with db.atomic():
        for server_id, cards in by_server.items():
            drops = [a for a in alerts if a[0] == server_id]
            try:
                with one_server(db, server_id):
                    _write_cards(db, cards, drops)
            except WriteRefused as refusal:
                refused.append(refusal)
                continue
            counts["scored"] += len(cards)
            counts["alerts"] += len(drops)
    return counts, refused


def _write_cards(db: Database, rows: list[CardRow], alerts: list[tuple]) -> None:
    refs = OutcomeRefs(db)
    stored = [(*r.score[:6], *refs.compact(r.rubric, r.score[6], r.score[7]), *r.score[8:]) for r in rows]
    db.conn.executemany(_upsert_sql("score_cards", SCORE_COLUMNS, ("server_id", "rubric")), stored)
    db.conn.executemany(_upsert_sql("score_history", HISTORY_COLUMNS, ("server_id", "rubric", "day")), [r.history for r in rows])
    db.conn.executemany(
        "insert into alerts (server_id, rubric, kind, created_at, old_value, new_value, message) values (?, ?, ?, ?, ?, ?, ?)", alerts
    )


def drop_cards(db: Database, server_ids: list[str]) -> int:
    """Remove the current cards of servers no longer scored (their score history stays: it is what was shown then)."""
    dropped = 0
    with db.atomic():
        for chunk, marks in in_chunks(server_ids):
            dropped += db.execute(f"delete from score_cards where server_id in ({marks})", list(chunk)).rowcount
    return dropped


SCORE_SUMMARY = "server_id, rubric, composite, grade, visibility, dimension_indicator, rules_version, scored_at, extra, flags"


def load_scores(db: Database, rubric: str) -> dict[str, dict[str, Any]]:
    """Every server's card under `rubric`, without its per-rule detail (what leaderboards need)."""
    return {r["server_id"]: r for r in db.query(f"select {SCORE_SUMMARY} from score_cards where rubric = ?", [rubric])}


def visibilities(db: Database, server_ids: list[str], rubric: str) -> dict[str, str]:
    """The visibility of each server's latest card under `rubric` (servers never scored under it are left out)."""
    found: dict[str, str] = {}
    for chunk, marks in in_chunks(server_ids):
        query = f"select server_id, visibility from score_cards where rubric = ? and server_id in ({marks})"
        found.update(db.execute(query, [rubric, *chunk]).fetchall())
    return found


def score_cards(db: Database, server_ids: list[str]) -> dict[str, dict[str, dict[str, Any] | None]]:
    """Full score rows (rules included) of some servers: {server_id: {rubric: row}}, as the `scores` view gives them.

    Expanded here rather than by the view: the build reads every card of the fleet, and SQLite's JSON functions take three
    times as long (tests/test_score_storage.py holds the two to the same bytes)."""
    rules = {r[0]: (r[1], r[2], _number(r[3])) for r in db.execute("select id, rule, dimension, max_points from score_rules")}
    dimensions = {r[0]: (r[1], r[2], bool(r[3])) for r in db.execute("select id, name, label, optional from score_dimensions")}
    cards: dict[str, dict[str, dict[str, Any] | None]] = {sid: {} for sid in server_ids}
    for chunk, marks in in_chunks(server_ids):
        for row in db.query(f"select {', '.join(SCORE_COLUMNS)} from score_cards where server_id in ({marks})", chunk):
            row["dimensions"] = to_json([
                {"name": d[0], "label": d[1], "status": e[1], "score": e[2], "weight": e[3], "reason": e[4], "optional": d[2]}
                for e in from_json(row["dimensions"]) for d in (dimensions[e[0]],)]).decode()
            row["rules"] = to_json([
                {"rule": r[0], "dimension": r[1], "points": e[1], "max_points": r[2], "measured": bool(e[2]), "reason": e[3], "how_to_gain": e[4],
                 "evidence": e[5]} for e in from_json(row["rules"]) for r in (rules[e[0]],)]).decode()
            cards[row["server_id"]][row["rubric"]] = row
    return cards


def _number(value: float) -> float | int:
    """A maximum as the card gave it: whole numbers without a decimal point (as the `scores` view writes them)."""
    return int(value) if value == int(value) else value


def score_changes(db: Database, rubric: str, since_day: str) -> list[dict[str, Any]]:
    """Day-to-day composite changes since `since_day`, newest first (each server against its previous day)."""
    return list(
        db.query(
            """
            select server_id, day, previous_day, previous, composite, grade from (
              select server_id, day, composite, grade,
                     lag(day) over w as previous_day, lag(composite) over w as previous
              from score_history where rubric = ? window w as (partition by server_id order by day)
            )
            where previous_day is not null and day >= ? and coalesce(previous, -1) != coalesce(composite, -1)
            order by day desc, server_id
            """,
            [rubric, since_day],
        )
    )
