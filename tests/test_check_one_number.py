"""Issue 16, "One number per server": `scoreboard check` shows the number the site shows for the same evidence, says
what it could not measure, and names every cap standing on a score in "how to gain points" (methodology deviation 66).

The site's side is the pipeline's own stages on a real store: the server discovered, its probe recorded as the probe
stage records it, its source analysed by the analyze stage, judged offline, scored by the score stage, the card read
back as the site reads it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import nullcontext

import pytest

from pipeline import store
from pipeline.analyze import run_analyze
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.check import run_check
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.judge import Panel, run_judge
from pipeline.listing_only import listing_only
from pipeline.progress import Progress
from pipeline.sandbox.install import install_key
from pipeline.score import run_score, score_all
from pipeline.score.facts import gather_many
from tests.support import NOW, REPO, TEST_SERVERS, ListSource, entry, python_server


def quiet(stage: str) -> Progress:
    return Progress(stage, 1, stream=io.StringIO())


@pytest.fixture(scope="module")
def time_command(installed):
    spec = next(e.launch for e in LocalCatalogSource().read().entries if e.id == "mcp-server-time")
    return [str(installed[install_key(spec)].executable)]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    (root / "pyproject.toml").write_text('[project]\nname = "time-server"\ndescription = "Tells the current time and converts it between time '
                                         'zones."\nlicense = "MIT"\ndependencies = ["mcp>=2.3"]\n')
    (root / "README.md").write_text("# Time\n\n## Usage\n\n```\nuvx time-server\n```\n" + "Explains the tools. " * 120)
    (root / "server.py").write_text("from mcp.server.mcpserver import MCPServer\nserver = MCPServer('time')\n")
    return root


def site_cards(tmp_path, checked, url, command, source):
    """What `scoreboard run` stores and the site shows for this server and this evidence."""
    db = store.open_db(tmp_path / "site.db")
    fields = {"name": url or " ".join(command), "transport": checked.transport, "remote_url": url}
    run_discover(db, sources=[ListSource("test", [entry("check", **fields)])], now=NOW, progress=quiet("discover"))
    servers = store.active_servers(db)
    if source is not None:
        run_analyze(db, servers=servers, fetcher=LocalDirectoryFetcher(source), now=NOW, progress=quiet("analyze"))
        described = store.latest_analyses(db, ["check"])["check"][1].description
        if described:  # a source that describes the server: the catalog knows its description and that its source exists
            db["servers"].update("check", {"description": described, "repository": "local"})
            servers = store.active_servers(db)
    store.record_probe(db, checked, None)
    run_judge(db, servers=servers, panel=Panel.offline(), now=NOW, progress=quiet("judge"))
    run_score(db, servers=servers, now=NOW, progress=quiet("score"))
    rows = store.score_cards(db, ["check"])["check"]
    if listing_only(servers[0]):
        # A command and nothing else: in the catalog a listing-only row, which the score stage passes over (deviation 80),
        # as the probe stage would have. The site's scoring of this evidence is still the number to agree with.
        assert rows == {}
        rows = {c.rubric: {"composite": c.composite, "grade": c.grade, "visibility": c.visibility}
                for c in score_all(next(gather_many(db, servers, NOW)))}
    db.close()
    return rows


@pytest.mark.parametrize("case, server, with_source", [
    ("item one number: mcp-server-time without --source", "time", False),
    ("item one number: mcp-server-time with --source", "time", True),
    ("item one number: a tool that crashes, a correct error, a failing example", "invoke-cases", False),
    ("item one number: a loopback URL, capped as a staging endpoint", "loopback", False),
])
def test_item_check_shows_the_sites_number_for_the_same_evidence(tmp_path, settings, time_command, source, case, server, with_source):
    command = {"time": time_command, "invoke-cases": [sys.executable, str(TEST_SERVERS / "invoke_cases.py")]}.get(server)
    serving = python_server("dual_http.py", "json") if server == "loopback" else nullcontext(None)
    with serving as url:
        checked, cards = run_check(url, command, source if with_source else None, {}, settings, NOW)
    assert checked.outcome.value == "ok", (case, checked.detail)
    site = site_cards(tmp_path, checked, url, command, source if with_source else None)
    for card in cards:
        row = site[card.rubric]
        assert (card.composite, card.grade, card.visibility) == (row["composite"], row["grade"], row["visibility"]), (case, card.rubric)
    if server == "loopback":
        assert cards[0].composite == 55.0 and any(f.label == "Staging Endpoint" and f.cap == 55 for f in cards[0].flags)


def scoreboard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_item_check_says_what_it_could_not_measure_without_source(time_command, source):
    bare = scoreboard("check", "--stdio", time_command[0], "--min-score", "10")
    assert bare.returncode == 0, bare.stderr
    head = bare.stdout.split("\nscoreboard:")[0]
    assert "not measured by this check" in head and "no --source was given" in head
    # (Schema Interpretability does not apply below Assessed visibility, deviation 58: without its source this server is Limited)
    for rule in ("description_quality", "documentation", "dependency_health", "license_clarity"):
        assert f"    - {rule}: " in head, rule
    assert "apps_readable" not in head  # reported, never counted: no gap in the score
    assert "note: the scoreboard score leaves out" in bare.stderr and "documentation" in bare.stderr
    as_json = json.loads(scoreboard("check", "--stdio", time_command[0], "--json").stdout)
    assert as_json["source_analysed"] is False
    assert {"rubric": "scoreboard", "rule": "documentation", "reason": "no source analysis yet"} in as_json["not_measured"]
    analysed = json.loads(scoreboard("check", "--stdio", time_command[0], "--source", str(source), "--json").stdout)
    assert analysed["source_analysed"] is True
    assert not any(g["rule"] in ("documentation", "license_clarity") for g in analysed["not_measured"])


def test_item_every_standing_cap_is_named_in_how_to_gain_points():
    with python_server("dual_http.py", "json") as url:
        done = scoreboard("check", url, "--timeout", "5")
    assert done.returncode == 0, done.stderr
    headline = done.stdout.split("\nscoreboard:")[1].split("\nreview:")[0]
    gains = headline.split("how to gain points:")[1]
    assert f"- flag Staging Endpoint caps this score at 55 while it stands: remote URL {url}" in gains
    assert gains.index("flag Staging Endpoint") < gains.index("distribution_clarity")  # the cap first: nothing else lifts the score past it
