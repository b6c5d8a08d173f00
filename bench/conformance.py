"""Run the official MCP conformance suite's client scenarios against our prober (`scoreboard probe URL`).

python bench/conformance.py [--workdir DIR] [--version 0.1.16] [--scenario NAME ...]

The suite needs Node 22; both come from the npm registry into DIR (default: a cache folder) on the
first run. Each scenario starts a scenario server and runs `scoreboard probe <its URL>`; the suite's
checks are printed per scenario. Scenarios that exercise behaviour a prober must not have (calling a
tool that may mutate, answering elicitation, completing an OAuth flow) are expected to fail those checks.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = ["initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults", "auth/metadata-default"]
RESULT = re.compile(r"\[([\w-]+)\s*\]\s+\S*?(SUCCESS|FAILURE|WARNING|INFO|SKIPPED)\S*\s+(.*)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path.home() / ".cache" / "mcp-scoreboard" / "conformance")
    parser.add_argument("--version", default="0.1.16")
    parser.add_argument("--scenario", action="append", help="scenario to run (repeatable); default: the generic client ones")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    node, suite = args.workdir / "node_modules" / ".bin" / "node", args.workdir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not node.exists() or not suite.exists():
        subprocess.run(["npm", "install", "--silent", "--prefix", str(args.workdir), "node@22", f"@modelcontextprotocol/conformance@{args.version}"], check=True)
    prober = f"{sys.executable} -m pipeline.cli probe"
    totals = [0, 0]
    for scenario in args.scenario or SCENARIOS:
        run = subprocess.run([str(node), str(suite), "client", "--command", prober, "--scenario", scenario, "-o", str(args.workdir / "results")],
                             capture_output=True, text=True, timeout=300, cwd=REPO)
        text = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
        checks = [c for c in RESULT.findall(text) if c[1] in ("SUCCESS", "FAILURE", "WARNING")]  # INFO lines log the traffic
        passed = sum(1 for _, status, _ in checks if status == "SUCCESS")
        totals[0] += passed
        totals[1] += len(checks)
        print(f"{scenario}: {passed}/{len(checks)} checks passed")
        for name, status, description in checks:
            print(f"  {status:<8} {name}: {description[:110]}")
    print(f"all scenarios: {totals[0]}/{totals[1]} checks passed")


if __name__ == "__main__":
    main()
