"""`scoreboard check`: one server, four rubrics, every point explained; --min-score gates CI."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest

from pipeline.check import probe_target, render_probe, render_text, run_check
from pipeline.config import Settings
from pipeline.discover.local import LocalCatalogSource
from pipeline.exit_codes import exit_codes, exit_for
from pipeline.models import HttpFacts, ProbeOutcome
from pipeline.sandbox.install import install_key
from tests.support import NOW, REPO, TEST_SERVERS, probe, python_server


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
    (source / "index.js").write_text("export const now = () => new Date().toISOString();\n")  # source to scan: not capped as no-source
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


def test_unreachable_url_is_classified_and_exits_as_unreached_even_with_a_gate():
    done = scoreboard("check", "http://127.0.0.1:9/mcp", "--timeout", "2", "--json", "--min-score", "50")
    assert done.returncode == 4 and "exit 4: the server could not be reached" in done.stderr
    assert json.loads(done.stdout)["probe"]["outcome"] == "unreachable"


RAW = f"{sys.executable} {TEST_SERVERS / 'raw_stdio.py'}"


@pytest.mark.parametrize("args,code,outcome", [
    (("check", "--stdio", f"{RAW} exit-early"), 3, "start_failed"),
    (("probe", "--stdio", f"{RAW} exit-early"), 3, "start_failed"),
    (("check", "--stdio", f"{RAW} bad-version", "--min-score", "0"), 5, "protocol_error"),
    (("probe", "--stdio", f"{RAW} crash-on-list"), 5, "crashed"),
])
def test_a_stdio_server_not_met_exits_with_its_outcome_class(args, code, outcome):
    done = scoreboard(*args, "--json", "--timeout", "3")
    seen = json.loads(done.stdout)
    assert (seen.get("probe") or seen)["outcome"] == outcome
    assert done.returncode == code and f"exit {code}: " in done.stderr


@pytest.mark.parametrize("status,command,code,outcome", [(401, "probe", 6, "auth_required"), (401, "check", 6, "auth_required"),
                                                         (429, "check", 7, "rate_limited"), (500, "probe", 5, "protocol_error")])
def test_an_http_server_not_met_exits_with_its_outcome_class(status, command, code, outcome):
    with python_server("status_http.py", str(status)) as url:
        done = scoreboard(command, url, "--json", "--timeout", "3", *(("--min-score", "0") if command == "check" else ()))
    seen = json.loads(done.stdout)
    assert (seen.get("probe") or seen)["outcome"] == outcome
    assert done.returncode == code and f"exit {code}: " in done.stderr


def test_every_outcome_but_ok_has_one_documented_exit_code():
    codes = {outcome: exit_for(probe(outcome=outcome)) for outcome in ProbeOutcome}
    assert codes.pop(ProbeOutcome.ok) is None
    assert {code for code, _ in codes.values()} == {3, 4, 5, 6, 7, 8, 9, 10}
    assert codes[ProbeOutcome.opted_out][0] == 8 and codes[ProbeOutcome.timeout][0] == 4 and codes[ProbeOutcome.install_failed][0] == 3
    assert codes[ProbeOutcome.crashed_on_start][0] == codes[ProbeOutcome.no_entry_point][0] == 3
    assert codes[ProbeOutcome.needs_external_service][0] == 9 and codes[ProbeOutcome.resource_limit][0] == codes[ProbeOutcome.blocked][0] == 10
    readme = (REPO / "README.md").read_text()
    documented = [f"| {code} | {meaning} |" for code, meaning in exit_codes(gate=True)]
    assert [line for line in documented if line not in readme] == []
    assert all(outcome.value in readme for outcome in codes)
    help_text = scoreboard("check", "--help").stdout
    assert "Exit codes:" in help_text and all(f"{code:<4} {meaning}" in help_text for code, meaning in exit_codes(gate=True))


def test_what_was_not_measured_prints_as_not_measured():
    never = probe(outcome=ProbeOutcome.timeout).model_copy(update={"transport": "streamable-http", "handshake": None, "protocol_version": None,
                                                                      "checks": []})
    shown = render_probe(never, "https://example.com/mcp")
    assert "auth required: not measured" in shown and "TLS not measured" in shown
    assert "eras: modern not measured, legacy not measured" in shown and "tools: not measured" in shown and "server: not measured" in shown
    unknown = HttpFacts.model_construct(tls_version=None, cert_valid=None, hsts=None, auth_required=None, protected_resource_metadata=None,
                                       authorization_server_metadata=None, server_card=None, html_setup_page=None)
    facts = render_probe(never.model_copy(update={"http": unknown}), "https://example.com/mcp")
    assert "auth required: not measured" in facts and "server card not measured" in facts and not re.search(r"\bno\b", facts)
    gated = render_probe(never.model_copy(update={"http": HttpFacts(auth_required=True, server_card=False)}), "http://127.0.0.1:1/mcp")
    assert "auth required: yes (protected-resource metadata not measured" in gated and "server card no" in gated
    assert "TLS none (plain HTTP)" in gated
    listed = render_text(probe().model_copy(update={"tools": None, "connect_ms": None}), [])
    assert "tools not measured, connect not measured" in listed


def test_a_silent_server_shows_what_it_never_answered_as_not_measured():
    """A real endpoint that accepts connections and never answers, within the probe's deadline."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        settings = Settings().model_copy(update={"call_timeout": 1.0, "probe_timeout": 1.5})
        seen = probe_target(url, None, settings, NOW)
        checked, cards = run_check(url, None, None, {}, settings, NOW)
    shown = render_probe(seen, url)
    assert seen.outcome == ProbeOutcome.timeout and "auth required: not measured" in shown and "auth required: no;" not in shown
    assert "eras: modern not measured, legacy not measured" in shown
    text = render_text(checked, cards)
    # seed 000: a remote server without monitoring history has no Reliability dimension (4 dimensions)
    assert "Reliability: not applicable [not applicable]" in text and "–" not in text


@pytest.mark.parametrize("args,message", [((), "either a URL or --stdio"), (("http://x", "--stdio", "y"), "either a URL or --stdio"),
                                          (("--stdio", "x", "--env", "NOEQUALS"), "KEY=VALUE")])
def test_usage_errors(args, message):
    done = scoreboard("check", *args)
    assert done.returncode == 2 and message in done.stderr
