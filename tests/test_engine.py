"""The rubric engine: every rule of every rubric keeps its bounds over a synthetic fleet, a rule that
was not measured weighs exactly as if it were absent, and a fifth rubric is one module plus one
registry line."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from bench.synthetic import NOW, generate
from pipeline import store
from pipeline.models import RubricInfo
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.score import methodology, registry, run_score
from pipeline.score.engine import Dimension, Rubric, RuleSet, applied, evaluate, ratio, share, shown, unmeasured, weighted_composite
from pipeline.score.facts import Facts, gather_many

FLEET = 240


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> list[Facts]:
    path = tmp_path_factory.mktemp("fleet") / "fleet.db"
    generate(path, FLEET, seed=5)
    db = store.open_db(path)
    facts = list(gather_many(db, store.active_servers(db), NOW))
    db.close()
    return facts


def test_every_rule_stays_within_its_maximum(fleet):
    seen = set()
    for facts in fleet:
        for rubric in registry.rubrics():
            applicable = {d.name for d in evaluate(rubric, facts)[1] if d.status != "not_applicable"}
            for rule in rubric.rules:
                if rule.dimension not in applicable:
                    continue
                outcome = rule.fn(facts)
                points, maximum = applied(rule, outcome, facts)
                seen.add((rubric.name, rule.name, outcome.measured))
                if not outcome.measured:
                    assert points == 0 and maximum == rule.max_points, (rubric.name, rule.name)
                elif rule.max_points:
                    assert 0 < maximum and 0 <= points <= maximum + 1e-9, (rubric.name, rule.name, points, maximum)
                    assert 0 <= points / maximum <= 1 + 1e-12
                else:  # a bonus or a penalty: between nothing and its full amount
                    assert min(0, rule.bonus) <= points <= max(0, rule.bonus), (rubric.name, rule.name, points)
    ran = {(rubric, name) for rubric, name, _ in seen}
    assert len(ran) >= 0.9 * sum(len(r.rules) for r in registry.rubrics())  # the fleet reaches nearly every rule


def _without_unmeasured(rubric: Rubric, facts: Facts) -> Rubric:
    return dataclasses.replace(rubric, rules=tuple(r for r in rubric.rules if r.fn(facts).measured))


def test_an_unmeasured_rule_weighs_as_if_it_were_absent(fleet):
    lowered = 0
    for facts in fleet:
        for rubric in registry.rubrics():
            card = rubric.score(facts)
            bare = _without_unmeasured(rubric, facts).score(facts)
            assert [(d.name, d.status == "scored", d.score, d.weight) for d in card.dimensions] == \
                   [(d.name, d.status == "scored", d.score, d.weight) for d in bare.dimensions], (rubric.name, facts.server.id)
            assert (card.composite, card.grade) == (bare.composite, bare.grade)
            for d in card.dimensions:
                if d.status == "pending":  # nothing measured: never a 0 standing in for the missing evidence
                    assert d.score is None and d.weight == 0
            lowered += any(not r.measured for r in card.rules)
    assert lowered  # the fleet does have unmeasured rules


# ---------------------------------------------------------------- a fifth rubric: one module and one registry line

RULES = RuleSet()
rule = RULES.rule


@rule("tools", 10)
def lists_tools(facts: Facts):
    """The server listed at least one tool."""
    if facts.tools is None:
        return unmeasured("no tool list yet")
    return share(1 if facts.tools else 0, f"{len(facts.tools)} tools")


@rule("tools", 6)
def described_tools(facts: Facts):
    """Share of listed tools with a description."""
    if not facts.tools:
        return unmeasured("no tools")
    described = sum(1 for t in facts.tools if t.get("description"))
    return ratio(described, len(facts.tools), f"{described}/{len(facts.tools)} described")


@rule("identity", 4)
def has_description(facts: Facts):
    """The catalog has a description of the server."""
    return share(1 if facts.description else 0, "described" if facts.description else "no description")


DIMENSIONS = (Dimension("tools", "Tools", 3), Dimension("identity", "Identity", 1))
FIFTH = Rubric(
    info=RubricInfo("fifth", "Fifth", "The fifth board", "A rubric of the test's own.", "fifth/0.1"),
    dimensions=DIMENSIONS,
    rules=tuple(RULES.rules),
    composite=lambda facts, dimensions: weighted_composite(dimensions, {d.name: d.weight for d in DIMENSIONS}),
    visibility=lambda facts, dimensions, composite: "scored" if composite is not None else "unscored",
    grades=((50, "pass"), (0, "fail")),
)


@pytest.fixture
def fifth(monkeypatch) -> Rubric:
    monkeypatch.setattr(registry, "RUBRICS", [*registry.RUBRICS, FIFTH])  # the one registry line; undone after the test
    return FIFTH


def test_a_fifth_rubric_is_registered_scored_and_documented(fifth, tmp_path):
    assert registry.names()[-1] == "fifth" and registry.infos()[-1] == fifth.info and registry.get("fifth") is fifth
    generate(tmp_path / "fleet.db", 30, seed=3)
    db = store.open_db(tmp_path / "fleet.db")
    servers = store.active_servers(db)
    report = run_score(db, servers=servers, now=NOW, progress=Progress("score", len(servers), stream=io.StringIO()), workers=1)
    assert report.counts["scored"] == 5 * len(servers)
    rows = list(db.query("select composite, grade, visibility, rules_version from scores where rubric = 'fifth'"))
    assert len(rows) == len(servers) and {r["rules_version"] for r in rows} == {"fifth/0.1"}
    assert all(r["grade"] in ("pass", "fail") for r in rows if r["composite"] is not None)
    assert any(r["composite"] is not None for r in rows)
    tables = methodology.generated()
    assert "fifth-rules" in tables and "`described_tools` | 6 | Share of listed tools with a description." in tables["fifth-rules"]()
    # The site shows it with no change to the build: its board, its API file, and a section on each server's page.
    site = tmp_path / "site"
    run_build(db, rubrics=registry.infos(), site_dir=site, now=NOW, workers=1)
    board = json.loads((site / "api" / "fifth.json").read_text())
    assert board["rubric"] == "fifth" and len(board["servers"]) == sum(1 for r in rows if r["composite"] is not None)
    assert "The fifth board" in (site / "fifth" / "index.html").read_text()
    scored = board["servers"][0]["id"]
    assert "<h2>Fifth: " in (site / "servers" / f"{scored}.html").read_text()


def test_the_fifth_rubric_leaves_no_trace():
    assert "fifth" not in registry.names()


@pytest.mark.parametrize("value,expected", [(65.85, 65.9), (65.84999999999999, 65.9), (84.96, 85.0), (85.04, 85.0), (12.25, 12.3), (0.05, 0.1),
                                            (-0.0, 0.0), (100.0, 100.0), (None, None)])
def test_a_score_is_shown_to_a_tenth_with_halves_rounded_up(value, expected):
    # round(65.85, 1) is 65.8 (the float is 65.8499…); an independent recomputation rounds a half up, and so do we.
    assert shown(value) == expected and (expected is None or str(shown(value)) == f"{expected:.1f}")
