"""Every API file the build writes is valid against the JSON Schema published beside it."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from pipeline import store
from pipeline.render import run_build
from pipeline.score.registry import infos
from tests.support import CATALOG_SIZE, NOW, internal_links, validator


def cases(site):
    yield "servers.schema.json", site / "api" / "servers.json"
    yield "changes.schema.json", site / "api" / "changes.json"
    for rubric in ("review", "outside-in", "remote"):
        yield "board.schema.json", site / "api" / f"{rubric}.json"
    for path in sorted((site / "api" / "servers").glob("*.json")):
        yield "server.schema.json", path


def test_every_api_file_matches_its_schema(site):
    checked = 0
    for schema, path in cases(site):
        errors = sorted(validator(site, schema).iter_errors(json.loads(path.read_text())), key=str)
        assert not errors, f"{path.name}: {errors[0].message} at {list(errors[0].absolute_path)}"
        checked += 1
    assert checked == 5 + CATALOG_SIZE
    assert json.loads((site / "api" / "changes.json").read_text())["changes"]  # the fixture has a change to describe


def test_the_schemas_reject_a_broken_file(site):
    data = json.loads((site / "api" / "servers" / "mcp-server-time.json").read_text())
    broken = copy.deepcopy(data)
    broken["score"]["grade"] = "Z"
    broken["score"]["dimensions"][0][6][0] = broken["score"]["dimensions"][0][6][0][:4]  # a rule row without its reason (deviation 106)
    def messages_of(errors):  # a nullable object's errors sit in the context of its anyOf error
        return [m for e in errors for m in [e.message, *messages_of(e.context or [])]]

    messages = messages_of(validator(site, "server.schema.json").iter_errors(broken))
    assert any("'Z'" in m for m in messages) and any("is too short" in m for m in messages)


def test_no_broken_internal_links(site):
    pages, checked, broken = internal_links(site)
    assert broken == [] and pages >= 13 and checked > 100


def test_rebuilding_unchanged_evidence_rewrites_nothing_but_the_snapshot(site, tmp_path):
    import shutil


    database = next(site.glob("downloads/scoreboard-*.db"))
    copy = tmp_path / "scoreboard.db"
    shutil.copy(database, copy)
    db = store.open_db(copy)
    first = run_build(db, rubrics=infos(), site_dir=tmp_path / "a", now=NOW)
    second = run_build(db, rubrics=infos(), site_dir=tmp_path / "a", now=NOW)
    assert first.counts["written"] > 20
    assert second.counts["written"] == 1 and second.counts["removed"] == 0  # the dated snapshot is made anew each build
    assert second.counts["unchanged"] == first.counts["written"] - 1


def test_only_servers_whose_inputs_changed_are_rendered_again(site, tmp_path):
    import shutil


    copy = tmp_path / "scoreboard.db"
    shutil.copy(next(site.glob("downloads/scoreboard-*.db")), copy)
    db = store.open_db(copy)
    out = tmp_path / "out"
    run_build(db, rubrics=infos(), site_dir=out, now=NOW)
    db["servers"].update("mcp-server-git", {"description": "Reads and searches git repositories (changed)."})
    report = run_build(db, rubrics=infos(), site_dir=out, now=NOW)
    # the git server's page, JSON, badge and shields JSON, plus every page listing it (leaderboards, CSV, API) and the snapshot
    assert "(changed)" in (out / "servers" / "mcp-server-git.html").read_text()
    assert report.counts["written"] < 20 and report.counts["unchanged"] > 30
    (out / "servers" / "mcp-server-time.html").unlink()  # a missing output is always made again
    run_build(db, rubrics=infos(), site_dir=out, now=NOW)
    assert (out / "servers" / "mcp-server-time.html").exists()


def test_parallel_rendering_writes_the_same_site(site, tmp_path, monkeypatch):
    import shutil

    import pipeline.render as render
    from pipeline.render import rendering
    from pipeline.render.executors import ForkPool

    copy = tmp_path / "scoreboard.db"
    shutil.copy(next(site.glob("downloads/scoreboard-*.db")), copy)
    db = store.open_db(copy)
    serial = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "serial", now=NOW, workers=1)
    monkeypatch.setattr(rendering, "RENDER_TASK", 2)
    parallel = render.run_build(db, rubrics=infos(), site_dir=tmp_path / "parallel", now=NOW, executor=ForkPool(2))
    assert serial.counts == parallel.counts
    files = sorted(p.relative_to(tmp_path / "serial") for p in (tmp_path / "serial").rglob("*") if p.is_file() and p.suffix != ".db")
    assert files == sorted(p.relative_to(tmp_path / "parallel") for p in (tmp_path / "parallel").rglob("*") if p.is_file() and p.suffix != ".db")
    for path in files:
        assert (tmp_path / "serial" / path).read_bytes() == (tmp_path / "parallel" / path).read_bytes(), path


def test_a_rubric_handed_to_the_build_gets_its_board_file_and_schema(site, tmp_path):
    import shutil

    from pipeline.models import RubricInfo

    copy = tmp_path / "scoreboard.db"
    shutil.copy(next(site.glob("downloads/scoreboard-*.db")), copy)
    rubrics = [*infos(), RubricInfo("fifth", "Fifth", "The fifth board", "A rubric nothing has scored yet.", "fifth-1")]
    run_build(store.open_db(copy), rubrics=rubrics, site_dir=tmp_path / "out", now=NOW)
    assert "The fifth board" in (tmp_path / "out" / "fifth" / "index.html").read_text()
    board = json.loads((tmp_path / "out" / "api" / "fifth.json").read_text())
    assert board["rubric"] == "fifth" and board["servers"] == []
    validator(tmp_path / "out", "board.schema.json").validate(board)
    with pytest.raises(jsonschema.ValidationError):
        validator(tmp_path / "out", "board.schema.json").validate({**board, "rubric": "sixth"})
