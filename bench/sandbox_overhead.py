"""Sandbox overhead per start: a trivial stdio MCP server, bare and in each sandbox backend, timed to its first answer.

python bench/sandbox_overhead.py [--runs 20]
Each start spawns tests/servers/raw_stdio.py with the system Python, sends `initialize` and waits for the answer; the
figure is the median of --runs starts. A backend that cannot run here is skipped with its reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.sandboxed import backends  # noqa: E402
from pipeline.sandbox import Job, Mount  # noqa: E402

SERVERS = Path(__file__).resolve().parent.parent / "tests" / "servers"
PYTHON = "/usr/bin/python3"  # the system interpreter: the same file bare and inside (where only system paths are seen)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


async def first_answer(argv: tuple[str, ...], env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(*argv, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.DEVNULL)
    process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    await process.stdin.drain()
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if b'"result"' not in line:
        raise RuntimeError(f"no answer to initialize: {line[:200]!r}")
    process.stdin.close()
    process.kill()
    await process.wait()


async def bare() -> float:
    started = time.perf_counter()
    await first_answer((PYTHON, str(SERVERS / "raw_stdio.py"), "good"), {"PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


async def sandboxed(backend) -> float:
    job = Job(argv=(PYTHON, "/srv/raw_stdio.py", "good"), env={"PATH": "/usr/bin:/bin", "HOME": "/work"},
              mounts=(Mount(SERVERS, "/srv"),))
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        async with backend.start(job, Path(scratch)) as running:
            await first_answer(running.argv, running.env)
            return time.perf_counter() - started  # the sandbox's teardown is not part of the start


def measure(start, runs: int, label: str) -> list[float]:
    times = []
    for n in range(runs):
        times.append(asyncio.run(start()))
        print(f"\r  {label}: {n + 1}/{runs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return times


def line(label: str, times: list[float], base: float | None = None) -> str:
    median = statistics.median(times)
    extra = f", overhead {1000 * (median - base):+.0f} ms ({median / base:.1f}x bare)" if base else ""
    return f"{label:<11} median {1000 * median:6.0f} ms to the first answer (min {1000 * min(times):.0f}, max {1000 * max(times):.0f}){extra}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    speed = calibration()
    base = statistics.median(times := measure(bare, args.runs, "bare"))
    print(line("bare", times))
    summary = [f"bare {1000 * base:.0f} ms"]
    for name, backend, reason in backends():
        if backend is None:
            print(f"{name:<11} skipped: {reason}")
            summary.append(f"{name} skipped")
            continue
        times = measure(lambda b=backend: sandboxed(b), args.runs, name)
        print(line(name, times, base) + f"  [{backend.describe()}]")
        summary.append(f"{name} +{1000 * (statistics.median(times) - base):.0f} ms")
    print(f"  {calibration_line(speed, calibration())}")
    print(f"summary: sandbox overhead per start, median of {args.runs}: " + "; ".join(summary))


if __name__ == "__main__":
    main()
