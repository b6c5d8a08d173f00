"""The optional LLM passes of analysis against the loopback endpoint with a fixed latency: servers per second with the
passes and without, the calls and tokens, and a second (fresh) run that asks nothing again.

python bench/analyze_llm.py [--repos 100] [--latency 0.2] [--concurrency 8] [--seed 15]
The repositories are bench/synthetic_repos.py's; extraction goes to Mistral's shape, inference to OpenAI's, each over its SDK.
A model's answers are the endpoint's minimal valid ones: the figures are the passes' cost in time and calls, not their reading.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.analyze_synthetic import RepositoryDirectories, catalog  # noqa: E402
from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.llm_endpoint import serve  # noqa: E402
from bench.synthetic import NOW  # noqa: E402
from bench.synthetic_repos import generate_repos  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.analyze import run_analyze  # noqa: E402
from pipeline.analyze.llm_passes import Allowance, LLMPasses  # noqa: E402
from pipeline.llm import providers_from_env  # noqa: E402
from pipeline.progress import Progress  # noqa: E402


def passes(root: str) -> LLMPasses:
    env = {"SCOREBOARD_LLM_EXTRACT": "mistral:mistral-small-2501", "SCOREBOARD_LLM_INFER": "openai:gpt-4.1-nano",
           "MISTRAL_API_KEY": "test-key", "MISTRAL_BASE_URL": f"{root}/mistral", "OPENAI_API_KEY": "test-key",
           "OPENAI_BASE_URL": f"{root}/openai/v1"}
    return LLMPasses(providers_from_env(env, purpose="extract")[0][0], providers_from_env(env, purpose="infer")[0][0], Allowance())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the endpoint takes per answer")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, serve(latency=args.latency) as endpoint:
        generate_repos(Path(tmp) / "repos", args.repos, args.seed)
        fetcher = RepositoryDirectories(Path(tmp) / "repos")
        speed = calibration()
        runs = []
        for label, with_llm, database in (("without the passes", False, "plain.db"), ("with the passes", True, "llm.db"),
                                          ("again, unchanged (fresh)", True, "llm.db")):
            db = store.open_db(Path(tmp) / database)
            servers = store.active_servers(db) or catalog(db, args.repos)
            llm = passes(endpoint.root) if with_llm else None
            asked = sum(endpoint.requests.values())
            started = time.perf_counter()
            report = run_analyze(db, servers=servers, fetcher=fetcher, now=NOW, concurrency=args.concurrency, llm=llm,
                                 progress=Progress("analyze", len(servers), stream=io.StringIO()))
            elapsed = time.perf_counter() - started
            calls = sum(endpoint.requests.values()) - asked
            runs.append(elapsed)
            line = f"{label}: {len(servers)} repositories in {elapsed:.2f}s = {len(servers) / elapsed:.1f}/s; {calls} requests"
            if llm is not None:
                line += f" ({calls / elapsed:.1f}/s at {args.latency:.2f}s each); {llm.allowance.summary()}"
            print(line)
            print(f"  {report.summary_line()}")
            db.close()
        print(f"the passes add {runs[1] - runs[0]:.2f}s for {args.repos} repositories at concurrency {args.concurrency} "
              f"(peak in flight per model: {dict(endpoint.peak_in_flight)}); the unchanged run asked nothing again")
        print(calibration_line(speed, calibration()))


if __name__ == "__main__":
    main()
