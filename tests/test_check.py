"""`scoreboard check`: one server, four rubrics, every point explained; --min-score gates CI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipeline.discover.local import LocalCatalogSource
from pipeline.probe.install import install_key
from tests.support import REPO


def scoreboard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.fixture(scope="module")
def time_command(installed):
    spec = next(e.launch for e in LocalCatalogSource().read().entries if e.id == "mcp-server-time")
    return str(installed[install_key(spec)].executable)


def test_check_a_stdio_server_as_json(time_command, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "package.json").write_text(json.dumps({"name": "t", "description": "Provides the current time and converts between timezones.",
                                                      "license": "MIT", "dependencies": {"@modelcontextprotocol/sdk": "^1.30.0"}}))
    (source / "README.md").write_text("# Time\n\n## Usage\n\n```\nnpx t\n```\n" + "Explains. " * 200)
    (source / "LICENSE").write_text("MIT License\n")
    done = scoreboard("check", "--stdio", time_command, "--source", str(source), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["probe"]["outcome"] == "ok" and data["probe"]["era"] == "modern"
    cards = {c["rubric"]: c for c in data["scores"]}
    assert set(cards) == {"scoreboard", "review", "outside-in", "remote"}
    headline = cards["scoreboard"]
    assert headline["visibility"] == "verified" and headline["grade"]
    docs = next(d for d in headline["dimensions"] if d["name"] == "docs_maintenance")
    assert docs["status"] == "scored"  # --source was analysed
    assert cards["remote"]["visibility"] == "not applicable"
    assert all("reason" in r and "points" in r for r in headline["rules"])


def test_min_score_gates(time_command):
    low = scoreboard("check", "--stdio", time_command, "--min-score", "10")
    assert low.returncode == 0 and "how to gain points" in low.stdout and "scoreboard:" in low.stdout
    high = scoreboard("check", "--stdio", time_command, "--min-score", "99.9", "--rubric", "review")
    assert high.returncode == 1 and "review score" in high.stderr and "below --min-score 99.9" in high.stderr


def test_unreachable_url_is_classified_and_fails_the_gate():
    done = scoreboard("check", "http://127.0.0.1:9/mcp", "--timeout", "2", "--json", "--min-score", "50")
    assert done.returncode == 1
    assert json.loads(done.stdout)["probe"]["outcome"] == "unreachable"


@pytest.mark.parametrize("args,message", [((), "either a URL or --stdio"), (("http://x", "--stdio", "y"), "either a URL or --stdio"),
                                          (("--stdio", "x", "--env", "NOEQUALS"), "KEY=VALUE")])
def test_usage_errors(args, message):
    done = scoreboard("check", *args)
    assert done.returncode == 2 and message in done.stderr
