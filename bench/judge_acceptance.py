"""Issue 19's acceptance: the judge panel over real tool schemas that are not in the repository (the tools/list of the
reference MCP servers the local catalog installs), through a local OpenAI-compatible endpoint with three configured
models, producing per-tool judgements and the server score; then a second run that judges nothing.

Every step is the CLI a user runs: discover, probe (the servers started from the installed cache), analyze (the package
archives), score (which makes them Assessed, so the judge reads them), judge, score; then judge again. The endpoint is
bench/llm_endpoint.py served as a child process on loopback, answering in the OpenAI chat-completions shape at {root}/v1,
as a llama.cpp, vLLM or Ollama server would. Prints per-server and per-model figures and the calibration loop.

    python -m bench.judge_acceptance [--servers mcp-server-time,mcp-server-fetch,server-everything]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.calibration import calibration, calibration_line

SERVERS = ("mcp-server-time", "mcp-server-fetch", "server-everything")
MODELS = ("qwen2.5-7b-instruct", "llama-3.1-8b-instruct", "mistral-7b-instruct")  # local model names: no price is known


def cli(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", *args, "--db", str(db)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"scoreboard {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done


def last_counts(db: Path) -> dict:
    with sqlite3.connect(db) as conn:
        return json.loads(conn.execute("select counts from runs where stage = 'judge' order by id desc limit 1").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS))
    servers = parser.parse_args().servers.split(",")
    before = calibration()
    endpoint = subprocess.Popen([sys.executable, "-m", "bench.llm_endpoint", "--latency", "0.05"], stdout=subprocess.PIPE, text=True)
    try:
        root = endpoint.stdout.readline().strip()  # type: ignore[union-attr]
        env = {"SCOREBOARD_JUDGES": ",".join(f"openai:{m}@{root}/v1" for m in MODELS), "SCOREBOARD_JUDGE_LIMITS": "openai=4/20"}
        for key in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY"):
            env[key] = ""  # a local server needs no key; none of the user's reaches it
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "scoreboard.db"
            picked = [a for s in servers for a in ("--server", s)]
            cli(db, "discover")
            cli(db, "probe", *picked)
            cli(db, "analyze", *picked)
            cli(db, "score")
            started = time.monotonic()
            first = cli(db, "judge", *picked, env=env)
            first_seconds = time.monotonic() - started
            cli(db, "score")
            counts = last_counts(db)
            started = time.monotonic()
            cli(db, "judge", *picked, env=env)
            second_seconds = time.monotonic() - started
            again = last_counts(db)
            report(db, servers, counts, again, first_seconds, second_seconds, first.stdout.strip().splitlines()[-1])
    finally:
        endpoint.terminate()
        endpoint.wait(timeout=10)
    print(calibration_line(before, calibration()))


def report(db: Path, servers: list[str], counts: dict, again: dict, first_seconds: float, second_seconds: float, summary: str) -> None:
    with sqlite3.connect(db) as conn:
        print(f"panel: {', '.join(MODELS)} through one local OpenAI-compatible endpoint")
        print(f"first judge run: {summary}")
        print(f"  {counts['judged']} judgements in {first_seconds:.1f} s (CLI start included), {counts['calls']} requests, "
              f"{counts['input_tokens']:,} input and {counts['output_tokens']:,} output tokens")
        for server in servers:
            tools = conn.execute("select count(distinct tool_name) from judgements where server_id = ? and offline = 0", [server]).fetchone()[0]
            per_model = conn.execute("select model, round(avg((clarity + input_completeness + confidence) / 3), 1), sum(directive) "
                                     "from judgements where server_id = ? and offline = 0 group by model order by model", [server]).fetchall()
            rule = conn.execute("select points, reason from rule_outcomes where server_id = ? and rubric = 'scoreboard' "
                                "and rule = 'interpretability_consensus'", [server]).fetchone()
            card = conn.execute("select composite, grade, visibility from scores where server_id = ? and rubric = 'scoreboard'",
                                [server]).fetchone()
            flags = [f["name"] for f in json.loads(conn.execute("select flags from scores where server_id = ? and rubric = 'scoreboard'",
                                                                [server]).fetchone()[0])]
            print(f"{server}: {tools} tools judged; per model (tool average, directives): "
                  + "; ".join(f"{m} {v} ({d})" for m, v, d in per_model))
            print(f"  Schema Interpretability {rule[0] if rule else '–'}: {rule[1] if rule else 'no outcome'}")
            print(f"  scoreboard {card[0]} {card[1]} ({card[2]}); flags: {', '.join(flags) or 'none'}")
    print(f"second judge run: judged {again['judged']}, unchanged {again['unchanged']}, requests {again['calls']} in {second_seconds:.1f} s")


if __name__ == "__main__":
    main()
