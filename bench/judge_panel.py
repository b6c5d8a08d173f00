"""The judge panel's throughput against a local endpoint with a fixed latency and per-provider rate limits.

python bench/judge_panel.py [--tools 60] [--latency 0.2] [--quick]
Issue 19: tools judged per second, showing the concurrency the panel uses keeps its three providers busy without
exceeding a per-provider rate limit. bench/llm_endpoint.py answers the three official SDKs (openai, google-genai,
mistralai) in their own shapes after a fixed latency, and answers 429 with Retry-After to a model asked more often than
its provider's published limit allows (OpenAI gpt-5-nano 500 a minute at tier 1, Gemini 2.0 Flash 2,000 a minute at
tier 1, Mistral 1 a second on the default plan; pipeline/judge/limits.py). The panel is the real one: `scoreboard
judge`'s run_judge over synthetic remote servers (bench/synthetic.py's tools) in a throw-away database, with the
panel's default limits (in flight and requests a second per provider, pipeline.judge.limits.DEFAULT_LIMITS); then
the same with limits far above the providers' (SCOREBOARD_JUDGE_LIMITS), to show what the limiter saves.
Per provider it prints its answered requests a second against its limit, its busy share (that rate over the pace the
panel keeps it to: its rate limit over the limiter's spacing margin), its mean requests in flight (rate × latency)
against its slots, and the 429s it was answered. Every tool waits for all three judges, so the slowest judge's pace
bounds tools per second.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.llm_endpoint import serve  # noqa: E402
from bench.synthetic import tool  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.discover import SourceBatch, run_discover  # noqa: E402
from pipeline.judge import Panel, run_judge  # noqa: E402
from pipeline.judge.limits import SPACING_MARGIN, limits_for  # noqa: E402
from pipeline.llm import providers_from_env  # noqa: E402
from pipeline.models import CatalogEntry, ProbeOutcome, ProbeResult, SourceRecord  # noqa: E402
from pipeline.progress import Progress  # noqa: E402

NOW = datetime.now(timezone.utc)
PANEL = (("openai", "gpt-5-nano"), ("google", "gemini-2.0-flash"), ("mistral", "mistral-small-2501"))
PUBLISHED = {"gpt-5-nano": 500 / 60, "gemini-2.0-flash": 2000 / 60, "mistral-small-2501": 1.0}  # requests a second
TOO_HIGH = "openai=32/100,google=32/100,mistral=8/100"  # in flight / a second: no provider's limit holds these back
TOOLS_PER_SERVER = 4


def fleet(path: Path, tools: int) -> list:
    """Remote servers (judged whatever their visibility) listing `tools` synthetic tools in all."""
    db = store.open_db(path)
    count = -(-tools // TOOLS_PER_SERVER)
    entries = [CatalogEntry(id=f"bench-{i:04}", name=f"bench-{i:04}", transport="streamable-http", remote_url=f"https://bench-{i}.example/mcp",
                            keys=[f"bench:{i}"], records=[SourceRecord(source="bench", key=str(i))]) for i in range(count)]
    run_discover(db, sources=[_Listed(entries)], now=NOW, progress=Progress("discover", 1, stream=io.StringIO()))
    rng = random.Random(19)
    for i, entry in enumerate(entries):
        listed = [tool(rng, n) for n in range(min(TOOLS_PER_SERVER, tools - i * TOOLS_PER_SERVER))]
        store.record_probe(db, ProbeResult(server_id=entry.id, kind="deep", started_at=NOW, duration_ms=10, transport="streamable-http",
                                           outcome=ProbeOutcome.ok, tools=listed), None)
    return db


class _Listed:
    name = "bench"

    def __init__(self, entries: list[CatalogEntry]) -> None:
        self.entries = entries

    def read(self) -> SourceBatch:
        return SourceBatch(entries=self.entries)


def measure(tools: int, latency: float, limits_setting: str | None) -> list[str]:
    """One panel run over a fresh fleet of `tools` tools; the figures as lines."""
    with tempfile.TemporaryDirectory() as directory, serve(latency=latency, rate_limits=PUBLISHED) as endpoint:
        db = fleet(Path(directory) / "bench.db", tools)
        env = {"SCOREBOARD_JUDGES": ",".join(f"{family}:{model}@{endpoint.base_url(family)}" for family, model in PANEL)}
        if limits_setting:
            env["SCOREBOARD_JUDGE_LIMITS"] = limits_setting
        judges, notes = providers_from_env(env)
        assert len(judges) == 3, notes
        limits = {j.model: limits_for(j.provider, j.model, env) for j in judges}
        panel = Panel(judges=judges, limits=limits, models=[j.model for j in judges])
        servers = store.active_servers(db)
        started = time.perf_counter()
        report = run_judge(db, servers=servers, panel=panel, now=NOW, progress=Progress("judge", len(servers), stream=io.StringIO()))
        wall = time.perf_counter() - started
        judged = report.counts["judged"]
        failed = {k.removeprefix("failed_"): v for k, v in report.counts.items() if k.startswith("failed_")}
        # Every tool waits for its slowest judge, paced a margin below its rate (pipeline.judge.limits.SPACING_MARGIN).
        bound = min(limit.per_second for limit in limits.values()) / SPACING_MARGIN
        lines = [f"{tools} tools, {judged} judgements in {wall:.1f} s: {judged / 3 / wall:.2f} tools judged a second (at most "
                 f"{bound:.2f}, the slowest judge's pace) "
                 f"({'all read' if judged == 3 * tools else f'{3 * tools - judged} judgements missing'}); "
                 f"{report.counts.get('retries', 0)} retries, failed requests: {failed or 'none'}"]
        for judge in judges:
            model, limit = judge.model, limits[judge.model]
            answered = endpoint.requests[model] - endpoint.rejected[model]
            rate, pace = answered / wall, limit.per_second / SPACING_MARGIN
            lines.append(f"  {judge.provider:<8} {model:<20} {endpoint.requests[model]:>4} requests, 429s {endpoint.rejected[model]:>3}; "
                         f"answered {rate:5.2f}/s against a limit of {PUBLISHED[model]:5.2f}/s; busy "
                         f"{rate / pace:4.0%} of the {pace:.2f}/s the panel paces it at; in flight "
                         f"{answered * latency / wall:4.1f} of {limit.in_flight} (peak {endpoint.peak_in_flight[model]})")
        db.close()
        return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=60, help="synthetic tools to judge (three judgements each)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the endpoint takes to answer")
    parser.add_argument("--quick", action="store_true", help="4 tools: a check that the bench runs, in seconds")
    parser.add_argument("--limits", help="SCOREBOARD_JUDGE_LIMITS for the first run instead of the panel's defaults")
    args = parser.parse_args(argv)
    tools = 4 if args.quick else args.tools
    before = calibration()
    print(f"judge panel against a loopback endpoint answering after {args.latency * 1000:.0f} ms, each provider's published rate "
          f"limit enforced with 429 + Retry-After")
    print(f"SCOREBOARD_JUDGE_LIMITS={args.limits}:" if args.limits else "the panel's default limits (pipeline.judge.limits.DEFAULT_LIMITS):")
    for line in measure(tools, args.latency, args.limits):
        print("  " + line)
    print(f"limits far above the providers' (SCOREBOARD_JUDGE_LIMITS={TOO_HIGH}):")
    for line in measure(tools, args.latency, TOO_HIGH):
        print("  " + line)
    print(calibration_line(before, calibration()))


if __name__ == "__main__":
    main()
