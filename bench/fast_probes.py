"""Fast probes of many loopback HTTP endpoints: probes per second, and the prober's overhead over bare httpx.

python bench/fast_probes.py [--endpoints 200] [--concurrency 50] [--rounds 3]
Target (issue 3): under 5 ms median overhead per probe over a bare httpx POST of the same request.

A child process serves `initialize` on N loopback ports (one asyncio loop, JSON answers). Each probe
here is the monitor's own fast probe over Streamable HTTP (`raw_fast_probe`: `server/discover`, or with
--legacy `initialize` + `notifications/initialized` + `ping`, each a bounded raw exchange) with a fresh
one-connection client per server; the baseline is a bare httpx POST of `initialize` through one
long-lived client, the cheapest request httpx makes. Throughput is measured at
the given concurrency; the overhead one probe at a time, in pairs (prober minus bare, per endpoint).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline.probe.fast import raw_fast_probe  # noqa: E402
from pipeline.probe.raw import Limits  # noqa: E402

NOW = datetime.now(timezone.utc)

SERVER = textwrap.dedent("""
    import asyncio, json, sys
    LEGACY = sys.argv[2] == "legacy"
    def answer(message):
        method, rid = message.get("method"), message.get("id")
        if method == "server/discover" and not LEGACY:
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete", "ttlMs": 0,
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1"}}}
        elif method == "server/discover":
            return 400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        elif method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "1"}}
        elif rid is None:
            return 202, None
        else:
            result = {}
        return 200, {"jsonrpc": "2.0", "id": rid, "result": result}
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                length = next((int(x.split(b":")[1]) for x in head.split(b"\\r\\n") if x.lower().startswith(b"content-length")), 0)
                body = await reader.readexactly(length)
                status, reply = answer(json.loads(body)) if body else (200, None)
                data = json.dumps(reply).encode() if reply is not None else b""
                head = b"HTTP/1.1 %d OK\\r\\nContent-Type: application/json\\r\\nMcp-Session-Id: s1\\r\\nContent-Length: %d\\r\\n\\r\\n"
                writer.write(head % (status, len(data)) + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
    async def main(count):
        servers = [await asyncio.start_server(handle, "127.0.0.1", 0) for _ in range(count)]
        print(json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
        await asyncio.Event().wait()
    asyncio.run(main(int(sys.argv[1])))
""")
PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


async def bare(client: httpx.AsyncClient, url: str) -> float:
    body = json.dumps({"jsonrpc": "2.0", "method": "initialize", "params": PARAMS, "id": 1})
    started = time.perf_counter()
    response = await client.post(url, content=body, headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    response.json()
    return time.perf_counter() - started


async def prober(url: str, limits: Limits) -> float:
    """The monitor's fast probe itself (pipeline.probe.fast.raw_fast_probe)."""
    started = time.perf_counter()
    result = await raw_fast_probe("bench", url, limits=limits, total_timeout=30, now=NOW)
    assert result.outcome.value == "ok", result.detail
    return time.perf_counter() - started


async def run(urls: list[str], concurrency: int, probe) -> tuple[dict[str, float], float]:
    limiter = anyio.CapacityLimiter(concurrency)
    times: dict[str, float] = {}

    async def one(url: str) -> None:
        async with limiter:
            times[url] = await probe(url)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for url in urls:
            group.start_soon(one, url)
    return times, time.perf_counter() - started


async def baseline(urls: list[str], concurrency: int) -> tuple[dict[str, float], float]:
    """The same request as a bare POST through one long-lived client (the cheapest httpx can do)."""
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency)) as client:
        return await run(urls, concurrency, lambda url: bare(client, url))


async def paired(urls: list[str], limits: Limits) -> list[float]:
    async with httpx.AsyncClient() as client:
        await bare(client, urls[0])  # warm: the first request pays for imports and the connection pool
        await prober(urls[0], limits)
        return [await prober(url, limits) - await bare(client, url) for url in urls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--legacy", action="store_true", help="servers without server/discover: initialize, initialized, ping (4 requests)")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.endpoints), "legacy" if args.legacy else "modern"],
                              stdout=subprocess.PIPE, text=True)
    try:
        urls = [f"http://127.0.0.1:{port}/mcp" for port in json.loads(server.stdout.readline())]
        limits = Limits(allow_private=True)
        rates, bare_rates = [], []
        speed = calibration()
        for _ in range(args.rounds):  # throughput at the given concurrency, alternating so a slow moment falls on both sides
            _, bare_wall = anyio.run(baseline, urls, args.concurrency)
            _, wall = anyio.run(run, urls, args.concurrency, lambda url: prober(url, limits))
            rates.append(len(urls) / wall)
            bare_rates.append(len(urls) / bare_wall)
        # Overhead per probe, one at a time (at concurrency 50 both sides mostly wait in the queue): each endpoint
        # bare then probed, in pairs, so drift in the machine's speed cancels out.
        overheads = anyio.run(paired, urls, limits)
        speed_after = calibration()
        print(f"{args.endpoints} endpoints, concurrency {args.concurrency}, {args.rounds} rounds: prober {statistics.median(rates):,.0f} probes/s, "
              f"bare httpx {statistics.median(bare_rates):,.0f} requests/s (median rounds)")
        print(f"overhead over a bare httpx POST, one at a time: median {statistics.median(overheads) * 1000:.2f} ms, "
              f"p90 {sorted(overheads)[int(len(overheads) * 0.9)] * 1000:.2f} ms per probe (target < 5 ms)")
        print(calibration_line(speed, speed_after))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
