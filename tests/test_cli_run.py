"""`scoreboard run` end to end on the embedded default, twice, as a new user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pipeline.discover.local import LocalCatalogSource
from pipeline.sandbox.install import packages_of
from pipeline.store import latest_probe, open_db
from tests.support import CATALOG_SIZE, REPO

SERVER_IDS = {"mcp-server-time", "mcp-server-fetch", "mcp-server-git", "server-everything", "server-everything-http", "server-everything-sse",
              "server-memory", "server-filesystem", "server-basic-vanillajs"}


def scoreboard(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, installed, settings):
    home = tmp_path_factory.mktemp("run")
    db_path, site = home / "scoreboard.db", home / "_site"
    env = {**os.environ, "SCOREBOARD_CACHE": str(settings.cache_dir)}
    first = scoreboard("--db", str(db_path), "run", "--site", str(site), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    stable = {p: p.stat().st_mtime_ns for p in [*site.glob("badge/*.svg"), site / "static" / "style.css"]}
    second = scoreboard("--db", str(db_path), "run", "--site", str(site), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    return db_path, site, first, second, stable


def test_each_stage_ends_with_a_summary_line(two_runs):
    _, _, first, _, _ = two_runs
    for stage in ("discover", "analyze", "probe", "monitor", "judge", "score", "build"):
        assert f"{stage} done:" in first.stdout
    assert f"probe done: ok {CATALOG_SIZE}; failures 0" in first.stdout
    assert "[probe]" in first.stderr and "left" in first.stderr  # progress with time left
    # The session installed the catalog first: nothing is installed again, and every message says so rather than "installing".
    packages = len(packages_of([e.launch for e in LocalCatalogSource().read().entries if e.launch]))
    assert f"install done: {packages} already installed, 0 installed, 0 failed" in first.stdout
    assert f"[probe] packages: {packages} already installed, 0 installed, 0 failed" in first.stderr  # the run's one installer: no registry asked
    assert "installing" not in first.stderr


def test_leaderboard_lists_every_server_with_a_score(two_runs):
    _, site, _, _, _ = two_runs
    html = (site / "index.html").read_text()
    listing = json.loads((site / "api" / "servers.json").read_text())["servers"]
    assert {row["id"] for row in listing} == SERVER_IDS
    for row in listing:
        assert row["composite"] is not None and row["grade"] in {"A+", "A", "B", "C", "D", "F"}
        assert f'href="servers/{row["id"]}.html"' in html
        assert row["visibility"] == "verified" and row["dimension_indicator"] == "4/4"
    assert [r["rank"] for r in listing] == list(range(1, len(SERVER_IDS) + 1))
    composites = [r["composite"] for r in listing]
    assert composites == sorted(composites, reverse=True)


def test_every_server_has_a_page_a_badge_and_json(two_runs):
    _, site, _, _, _ = two_runs
    for server_id in SERVER_IDS:
        page = (site / "servers" / f"{server_id}.html").read_text()
        data = json.loads((site / "api" / "servers" / f"{server_id}.json").read_text())
        badge = ET.fromstring((site / "badge" / f"{server_id}.svg").read_text())
        assert data["score"]["grade"] in page and "How to gain points" in page
        assert data["last_scored_at"] and data["engine_version"] and data["score_age_days"] == 0
        assert data["probe"]["outcome"] == "ok" and data["tools"]
        assert badge.get("role") == "img" and data["score"]["grade"] in badge.get("aria-label")
        assert {d[0] for d in data["score"]["dimensions"]} >= {"schema_quality", "protocol_compliance", "security_hygiene"}  # rows (deviation 106)
        others = {o["rubric"]: o for o in data["other_rubrics"]}
        assert set(others) == {"review", "outside-in", "remote"}
        assert others["outside-in"]["extra"]["rank_score"] is not None and others["outside-in"]["extra"]["runs"] == 2  # deep runs only
        assert others["review"]["grade"] and "Live review" in page
        assert others["remote"]["visibility"] == "not applicable"  # stdio packages, and HTTP packages we start on loopback


def test_two_runs_keep_one_row_per_server_and_two_runs_of_history(two_runs):
    db_path, _, _, _, _ = two_runs
    db = open_db(db_path)
    assert db["servers"].count == CATALOG_SIZE
    assert db["scores"].count == 4 * CATALOG_SIZE  # one per server and rubric
    assert {r["rubric"]: r["n"] for r in db.query("select rubric, count(*) n from scores group by rubric")} == {
        "scoreboard": CATALOG_SIZE, "review": CATALOG_SIZE, "outside-in": CATALOG_SIZE, "remote": CATALOG_SIZE}
    per_stage = {r["stage"]: r["n"] for r in db.query("select stage, count(*) n from runs where status = 'ok' group by stage")}
    assert per_stage == {s: 2 for s in ("discover", "analyze", "probe", "monitor", "judge", "score", "build")}
    # The catalog's packages run in the sandbox: their deep probes are sandbox runs.
    deep = {r["server_id"]: r["n"] for r in db.query("select server_id, count(*) n from probe_runs where kind = 'sandbox' group by server_id")}
    assert deep == {s: 2 for s in SERVER_IDS}
    fast = db.execute("select count(*) from probe_runs where kind = 'fast' and outcome = 'ok'").fetchone()[0]
    assert fast == 2 * CATALOG_SIZE
    assert db["score_history"].count == 4 * CATALOG_SIZE  # daily snapshots: both runs fall on one day
    assert db["judgements"].count == db.execute("select count(distinct server_id || tool_name) from judgements").fetchone()[0]
    _, latest = latest_probe(db, "mcp-server-time")
    assert latest.kind == "sandbox" and latest.server_info["name"] and latest.tools


def test_second_build_rewrites_only_what_changed(two_runs):
    _, site, _, second, stable = two_runs
    summary = next(line for line in second.stdout.splitlines() if line.startswith("build done:"))
    counts = dict(part.strip().rsplit(" ", 1) for part in summary.split(":", 1)[1].split(";")[0].split(","))
    assert int(counts["unchanged"]) >= 8 and counts["removed"] == "0"
    assert len(stable) == len(SERVER_IDS) + 1  # a badge per server, and the stylesheet
    for path, mtime in stable.items():
        assert path.stat().st_mtime_ns == mtime, f"{path.name} was rewritten with identical bytes"
