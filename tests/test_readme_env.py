"""The README's table of environment variables against the code: every SCOREBOARD_* name the package mentions is in
the table, every SCOREBOARD_* name in the table is read by the package or the workflows, and every other variable the
package reads by name (os.environ, a Mapping's .get, the LLM layer's keys, the installers' pass-through) is there too."""

from __future__ import annotations

import re

import yaml

from pipeline.llm.config import BASE_URLS, KEYS, PURPOSES, TIMEOUT_ENV
from pipeline.sandbox.installenv import PASSED
from tests.support import REPO

PACKAGE = REPO / "pipeline"
# Modules that look for environment reads in strangers' code: the names in their patterns and comments are not ours.
SCANNERS = {"analyze/env_vars.py", "analyze/inference.py", "analyze/behaviour_patterns.py", "analyze/taint.py"}
OURS = {path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).as_posix() not in SCANNERS}
SCOREBOARD = re.compile(r"\bSCOREBOARD_[A-Z0-9_]+\b")
READ_BY_NAME = re.compile(r"\b(?:environ|env)(?:\.get\(\s*|\[\s*)[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")


def table() -> dict[str, str]:
    """Each variable the README's table names (a row may name several), with its row."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Environment variables\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name: row for row in rows for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", row.split(" | ")[0])}


def test_every_scoreboard_variable_in_the_package_is_in_the_table_and_every_one_in_the_table_is_read():
    documented = table()
    in_package = {name for text in OURS.values() for name in SCOREBOARD.findall(text)}
    in_workflows = {name for path in (REPO / ".github").rglob("*") if path.is_file() for name in SCOREBOARD.findall(path.read_text())}
    assert len(in_package) >= 25, sorted(in_package)  # the scan sees the settings, the LLM layer and the CLI
    assert sorted(in_package - set(documented)) == []
    assert sorted(n for n in documented if n.startswith("SCOREBOARD_") and n not in in_package | in_workflows) == []


def test_every_other_variable_the_package_reads_by_name_is_in_the_table():
    read = {name for text in OURS.values() for name in READ_BY_NAME.findall(text)}
    read |= {name for names in KEYS.values() for name in names} | set(BASE_URLS.values()) | {TIMEOUT_ENV}
    read |= {setting for setting, _ in PURPOSES.values()} | set(PASSED)
    action = yaml.safe_load((REPO / "action.yml").read_text())
    read |= {name for step in action["runs"]["steps"] for name in step.get("env", {}) if name.startswith("INPUT_")}
    assert {"GITHUB_TOKEN", "OPENAI_API_KEY", "XDG_CACHE_HOME", "GITHUB_STEP_SUMMARY"} <= read  # the scan sees every kind of read
    documented = table()
    assert sorted(read - set(documented)) == []


def test_the_defaults_in_the_table_are_the_settings_defaults():
    from pipeline.config import Settings

    documented, defaults = table(), Settings()
    figures = {"SCOREBOARD_CONCURRENCY": defaults.concurrency, "SCOREBOARD_SANDBOX_CONCURRENCY": defaults.sandbox_concurrency,
               "SCOREBOARD_CONNECT_TIMEOUT": defaults.connect_timeout, "SCOREBOARD_CALL_TIMEOUT": defaults.call_timeout,
               "SCOREBOARD_PROBE_TIMEOUT": defaults.probe_timeout, "SCOREBOARD_MAX_RESPONSE_BYTES": defaults.max_response_bytes,
               "SCOREBOARD_ANALYZE_CONCURRENCY": defaults.analyze_concurrency, "SCOREBOARD_SITE_URL": defaults.site_url,
               "SCOREBOARD_DATASETTE_URL": defaults.datasette_url, "SCOREBOARD_GITHUB_API": defaults.github_api}
    for name, value in figures.items():
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert documented[name].rstrip().endswith(f"| {shown} |") or f"`{shown}` |" in documented[name], (name, shown, documented[name])
    for setting, default in PURPOSES.values():
        assert f"`{default}` |" in documented[setting]
