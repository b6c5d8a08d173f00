"""Run the official MCP conformance suite's client scenarios against our prober (`scoreboard probe URL`).

python bench/conformance.py [--workdir DIR] [--version 0.1.16] [--scenario NAME ...]

The suite needs Node 22; both come from the npm registry into DIR (default: a cache folder) on the
first run. Each scenario starts a scenario server and runs `scoreboard probe <its URL>`; the suite's
checks are printed per scenario. Scenarios that exercise behaviour a prober must not have (calling a
tool that may mutate, answering elicitation, registering an OAuth client and asking for tokens) are
expected to fail those checks. tests/test_conformance.py runs the same scenarios and asserts which pass.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION = "0.1.16"  # the suite's latest tag; it covers the 2025 eras
SCENARIOS = ["initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults", "auth/metadata-default",
             "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/2025-03-26-oauth-metadata-backcompat"]
RESULT = re.compile(r"\[([\w-]+)\s*\]\s+\S*?(SUCCESS|FAILURE|WARNING|INFO|SKIPPED)\S*\s+(.*)")
DEFAULT_WORKDIR = Path.home() / ".cache" / "mcp-scoreboard" / "conformance"


def ensure_suite(workdir: Path, version: str = VERSION) -> tuple[Path, Path]:
    """(node 22, the suite's entry point), installed from npm into `workdir` unless already there."""
    workdir.mkdir(parents=True, exist_ok=True)
    node, suite = workdir / "node_modules" / ".bin" / "node", workdir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    installed = workdir / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    if not node.exists() or not installed.exists() or f'"version": "{version}"' not in installed.read_text():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(workdir), "node@22",
                        f"@modelcontextprotocol/conformance@{version}"], check=True, timeout=600)
    return node, suite


def run_scenario(node: Path, suite: Path, scenario: str, workdir: Path) -> list[tuple[str, str, str]]:
    """The suite's checks for one client scenario run against `scoreboard probe`: (check, status, description)."""
    prober = f"{sys.executable} -m pipeline.cli probe"
    out = workdir / "results" / scenario.replace("/", "_")
    run = subprocess.run([str(node), str(suite), "client", "--command", prober, "--scenario", scenario, "-o", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    text = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
    return [c for c in RESULT.findall(text) if c[1] in ("SUCCESS", "FAILURE", "WARNING")]  # INFO lines log the traffic


def run_all(scenarios: list[str], workdir: Path, version: str = VERSION, parallel: int = 3) -> dict[str, list[tuple[str, str, str]]]:
    node, suite = ensure_suite(workdir, version)
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return dict(zip(scenarios, pool.map(lambda s: run_scenario(node, suite, s, workdir), scenarios)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--scenario", action="append", help="scenario to run (repeatable); default: the ones a prober can meet")
    args = parser.parse_args()
    totals = [0, 0]
    for scenario, checks in run_all(args.scenario or SCENARIOS, args.workdir, args.version).items():
        passed = sum(1 for _, status, _ in checks if status == "SUCCESS")
        totals[0] += passed
        totals[1] += len(checks)
        print(f"{scenario}: {passed}/{len(checks)} checks passed")
        for name, status, description in checks:
            print(f"  {status:<8} {name}: {description[:110]}")
    print(f"all scenarios: {totals[0]}/{totals[1]} checks passed")


if __name__ == "__main__":
    main()
