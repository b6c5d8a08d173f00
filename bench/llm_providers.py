"""What the provider layer costs per request: each official SDK against bench/llm_endpoint.py on loopback, with no latency
(our overhead plus the SDK's plus a loopback round trip), then at a fixed latency from several threads against a
per-model rate limit: requests, 429s, retries, requests that gave up after three attempts, and the answer rate (a
sliding one-second window lets a run of T seconds answer up to limit x (T + 1)).

    python bench/llm_providers.py [--calls 200] [--threads 8] [--latency 0.05] [--rate 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.llm_endpoint import serve  # noqa: E402
from pipeline.judge.prompt import Verdict  # the judge panel's: the shape every provider must answer in
from pipeline.llm import LLMError, RetryPolicy, Usage  # noqa: E402
from pipeline.llm.config import build  # noqa: E402

FAMILIES = [("openai", "gpt-5-nano"), ("google", "gemini-2.0-flash"), ("mistral", "mistral-small-2501")]
TOOL = {"name": "search_issues", "description": "Search the repository's issues by text; returns at most 50, newest first.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "Words to find"},
                                                         "state": {"type": "string", "enum": ["open", "closed"]}},
                        "required": ["query"]}}



def ask(provider) -> Usage:
    return provider.complete(system="Judge the tool.", user=f"<<<TOOL\n{json.dumps(TOOL)}\nTOOL>>>", schema=Verdict,
                             schema_name="verdict").usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second each model is allowed")
    args = parser.parse_args()
    before = calibration()
    with serve() as endpoint:
        for family, model in FAMILIES:
            provider = build(family, model, key="test-key", base_url=endpoint.base_url(family))
            ask(provider)  # the first call pays for the SDK's lazy set-up
            started = time.perf_counter()
            for _ in range(args.calls):
                ask(provider)
            per_call = (time.perf_counter() - started) / args.calls * 1000
            print(f"{family:8} {model:20} {per_call:6.2f} ms per structured completion, sequential, no latency")
    limits = {model: args.rate for _, model in FAMILIES}
    with serve(latency=args.latency, rate_limits=limits) as endpoint:
        for family, model in FAMILIES:
            provider = build(family, model, key="test-key", base_url=endpoint.base_url(family), policy=RetryPolicy())
            failed = 0
            usage = Usage()
            started = time.perf_counter()
            with ThreadPoolExecutor(args.threads) as pool:
                for future in [pool.submit(ask, provider) for _ in range(args.calls)]:
                    try:
                        usage = usage + future.result()
                    except LLMError:
                        failed += 1
            seconds = time.perf_counter() - started
            answered = args.calls - failed
            print(f"{family:8} {model:20} {args.threads} threads, {args.latency * 1000:.0f} ms latency, limit {args.rate:g}/s: "
                  f"{answered / seconds:5.1f} answers/s, {endpoint.requests[model]} requests, {endpoint.rejected[model]} answered 429, "
                  f"{usage.retries} retries, {failed} gave up, peak {endpoint.peak_in_flight[model]} in flight, "
                  f"{usage.input_tokens + usage.output_tokens} tokens, ${usage.cost_usd:.4f}")
    print(calibration_line(before, calibration()))


if __name__ == "__main__":
    main()
