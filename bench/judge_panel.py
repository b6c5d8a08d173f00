"""The judge panel's throughput: tools judged per second by three judges (OpenAI, Google and Mistral SDKs) against
bench/llm_endpoint.py with a fixed latency, the endpoint enforcing each model's rate limit with 429s. The panel runs with
its default limits (pipeline/judge/limits.py, deviation 313), or with every limit scaled by --scale on both sides (the
endpoint's limit and ours), to show that the chosen concurrency keeps the three judges busy (each at its rate or its
in-flight limit) without one 429 from a rate limit.

    python -m bench.judge_panel [--tools 60] [--latency 0.2] [--scale 1]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.calibration import calibration, calibration_line
from bench.llm_endpoint import serve
from pipeline import store
from pipeline.discover import SourceBatch, run_discover
from pipeline.judge import Panel, run_judge
from pipeline.judge.limits import DEFAULT_LIMITS, Limits
from pipeline.llm import providers_from_env
from pipeline.models import CatalogEntry, ProbeOutcome, ProbeResult, SourceRecord
from pipeline.progress import Progress

JUDGES = (("openai", "gpt-5-nano"), ("google", "gemini-2.0-flash"), ("mistral", "mistral-small-2501"))
TOOLS_PER_SERVER = 5
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


class Listed:
    """A discovery source listing the bench's servers."""

    name = "bench"

    def __init__(self, entries: list[CatalogEntry]) -> None:
        self.entries = entries

    def read(self) -> SourceBatch:
        return SourceBatch(entries=self.entries)


def fleet(path: Path, tools: int):
    """Hosted endpoints (judged whatever their visibility), TOOLS_PER_SERVER tools each, as their latest probes listed them."""
    db = store.open_db(path)
    count = -(-tools // TOOLS_PER_SERVER)
    entries = [CatalogEntry(id=f"s{i:03d}", name=f"s{i:03d}", transport="streamable-http", remote_url=f"https://s{i:03d}.example/mcp",
                            keys=[f"bench:s{i:03d}"], records=[SourceRecord(source="bench", key=f"s{i:03d}", payload={})]) for i in range(count)]
    run_discover(db, sources=[Listed(entries)], now=NOW, progress=Progress("discover", 1, stream=io.StringIO()))
    made = 0
    for entry in entries:
        listed = []
        for k in range(TOOLS_PER_SERVER):
            if made < tools:
                listed.append({"name": f"tool_{k}", "description": f"Get record {k} of {entry.id} by its id." * (1 + k % 3),
                               "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}})
                made += 1
        store.record_probe(db, ProbeResult(server_id=entry.id, kind="deep", started_at=NOW, duration_ms=10, transport="streamable-http",
                                           outcome=ProbeOutcome.ok, tools=listed, handshake="initialize"), None)
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the endpoint takes per answer")
    parser.add_argument("--scale", type=float, default=1.0, help="every rate limit, ours and the endpoint's, times this")
    args = parser.parse_args()
    before = calibration()
    limits = {model: Limits(DEFAULT_LIMITS[family].in_flight, DEFAULT_LIMITS[family].per_second * args.scale) for family, model in JUDGES}
    with serve(latency=args.latency, rate_limits={m: lim.per_second for m, lim in limits.items()}) as endpoint, \
            tempfile.TemporaryDirectory() as folder:
        db = fleet(Path(folder) / "bench.db", args.tools)
        env = {"SCOREBOARD_JUDGES": ",".join(f"{f}:{m}@{endpoint.base_url(f)}" for f, m in JUDGES)}
        judges, notes = providers_from_env(env)
        assert not notes, notes
        servers = store.active_servers(db)
        started = time.monotonic()
        report = run_judge(db, servers=servers, panel=Panel(judges=judges, limits=limits, models=[m for _, m in JUDGES]), now=NOW,
                           progress=Progress("judge", len(servers), stream=io.StringIO()))
        seconds = time.monotonic() - started
        print(f"{args.tools} tools x 3 judges, endpoint latency {args.latency:g} s, rate limits x{args.scale:g}: "
              f"{report.counts['judged']} judgements in {seconds:.1f} s = {args.tools / seconds:.2f} tools/s "
              f"({report.counts['judged'] / seconds:.1f} judgements/s); failures {report.failures}")
        for family, model in JUDGES:
            lim = limits[model]
            bound = min(lim.per_second, lim.in_flight / max(args.latency, 1e-9))
            print(f"  {family}:{model}: {endpoint.requests[model]} requests, {endpoint.requests[model] / seconds:.2f}/s "
                  f"(limit {lim.per_second:g}/s, {lim.in_flight} in flight: at most {bound:.2f}/s), peak in flight "
                  f"{endpoint.peak_in_flight[model]}, 429s from the rate limit {endpoint.rejected[model]}")
        slowest = min(min(limits[m].per_second, limits[m].in_flight / max(args.latency, 1e-9)) for _, m in JUDGES)
        print(f"  the slowest judge bounds the run: {args.tools / slowest:.1f} s at best for {args.tools} tools")
    print(calibration_line(before, calibration()))


if __name__ == "__main__":
    main()
