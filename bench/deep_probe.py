"""A full deep probe of server-everything over Streamable HTTP (or any embedded-catalog server): wall time per probe.

python bench/deep_probe.py [--runs 5] [--server server-everything-http | server-everything-sse | mcp-server-time | ...]
Target (issue 3): under 3 s wall for one full deep probe (server already installed; its start is timed
separately). A deep probe here is everything the probe stage does: both eras on the raw layer, the
endpoint facts, the SDK session with every list, the checks, the calls to safe tools and the fuzz cases.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.discover.local import LocalCatalogSource  # noqa: E402
from pipeline.probe import package_sandbox, probe_limits  # noqa: E402
from pipeline.probe.deep import deep_probe  # noqa: E402
from pipeline.sandbox.install import Installer, install_key  # noqa: E402


async def measure(spec, installed, settings: Settings, runs: int) -> tuple[float, list[float], object]:
    sandbox = package_sandbox(settings)  # as `scoreboard probe` runs them
    started = time.perf_counter()
    async with sandbox.start(spec, installed) as running:
        start_seconds = time.perf_counter() - started
        times, result = [], None
        for _ in range(runs):
            began = time.perf_counter()
            result = await deep_probe("bench", running, limits=probe_limits(settings, allow_private=True), total_timeout=settings.probe_timeout,
                                      now=datetime.now(timezone.utc))
            times.append(time.perf_counter() - began)
    return start_seconds, times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--server", default="server-everything-http")
    args = parser.parse_args()
    settings = Settings.from_env()
    entry = next(e for e in LocalCatalogSource().read().entries if e.id == args.server)
    installed = Installer.from_settings(settings).install([entry.launch])[install_key(entry.launch)]
    speed = calibration()
    start_seconds, times, result = anyio.run(measure, entry.launch, installed, settings, args.runs)
    speed_after = calibration()
    print(f"{args.server}: started in {start_seconds:.2f} s; deep probe median {statistics.median(times):.2f} s "
          f"(all: {', '.join(f'{t:.2f}' for t in times)}); target < 3 s")
    print(f"  outcome {result.outcome.value}, {result.era} {result.protocol_version}, eras {result.eras.model_dump() if result.eras else None}")
    print(f"  {len(result.tools or [])} tools, {len(result.resources or [])} resources, {len(result.prompts or [])} prompts; "
          f"{len(result.invocations or [])} safe tools called, {len(result.fuzz or [])} fuzz cases, {len(result.checks)} checks")
    print(f"  {calibration_line(speed, speed_after)}")


if __name__ == "__main__":
    main()
