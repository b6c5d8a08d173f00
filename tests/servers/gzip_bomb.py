"""A gzip bomb served over real HTTP, and every HTTP path of the prober and discovery read against it, measured.

`python gzip_bomb.py` starts a raw asyncio HTTP server in a thread, reads ordinary (compressed) answers through each
path first, notes the peak resident memory, then reads the bombs through the same paths and prints one JSON line:
the peak before and after (KB) and what each path made of the bomb. The bomb is 1 GiB of zeros gzipped to ~1 MB,
built in a fraction of a second: one megabyte compressed with a full flush repeats byte for byte.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import resource
import struct
import sys
import threading
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

MB = 1 << 20


def bomb(megabytes: int = 1024) -> bytes:
    """`megabytes` MiB of zeros as one valid gzip member (CRC and length right), about 1 KB per MiB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MB)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)  # after a full flush, the same input compresses the same
    end = compressor.flush()[:-8]  # the final block; the trailer is rewritten for the whole
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    return first + repeated * (megabytes - 1) + end + struct.pack("<II", crc, (megabytes * MB) & 0xFFFFFFFF)


BOMB = bomb()
ORDINARY = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": f"tool_{i}", "description": "x" * 200} for i in range(500)]}})
KINDS = {"json": "application/json", "sse": "text/event-stream", "page": "text/html"}


def ordinary_body(kind: str) -> bytes:
    text = f"data: {ORDINARY}\n\n" if kind == "sse" else ORDINARY
    return gzip.compress(text.encode())


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """/bomb/KIND or /ordinary/KIND, gzip-encoded; /br: an encoding nobody asked for."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
        if length:
            await reader.readexactly(length)
        _, what, kind = path.split("/")
        body, encoding = (BOMB, "gzip") if what == "bomb" else (b"\x1b\x00\x00\x00", "br") if what == "br" else (ordinary_body(kind), "gzip")
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {KINDS[kind]}\r\nContent-Encoding: {encoding}\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


def serve() -> str:
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def read_all(origin: str, what: str) -> dict[str, str]:
    """Each HTTP path of the prober and discovery, reading /WHAT/...: what each made of it."""
    import anyio
    import httpx2

    from pipeline.discover.http import SourceError, SourceHTTP, source_client
    from pipeline.net import LOOPBACK, Reach
    from pipeline.probe.endpoint import get_bytes
    from pipeline.probe.raw import Limits, exchange, probe_client
    from pipeline.probe.transports import MessageCap, capped_http_client

    limits = Limits(timeout=10, allowed=frozenset({LOOPBACK}))  # the default byte cap, 5 MB
    seen: dict[str, str] = {}
    async with probe_client(limits) as client:
        for kind in ("json", "sse"):
            found = await exchange(client, f"{origin}/{what}/{kind}", "tools/list", {}, limits=limits)
            seen[f"raw {kind}"] = found.failure.value if found.failure else f"ok {found.bytes}"
        status, _, body = await get_bytes(client, f"{origin}/{what}/page", limits, "text/html")
        seen["endpoint GET"] = f"{status} {None if body is None else len(body)}"
    cap = MessageCap(limits.max_bytes)
    async with capped_http_client(cap, 10, 10, reach=limits.reach)() as sdk:
        try:
            response = await sdk.post(f"{origin}/{what}/json", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            seen["sdk"] = f"ok {len(response.content)}"
        except httpx2.StreamError:
            seen["sdk"] = cap.kind or "stream error"

    def discover() -> str:
        with source_client(Reach(frozenset({LOOPBACK}))) as client:
            try:
                return f"ok {len(SourceHTTP(client, retries=0, max_body=limits.max_bytes).get_bytes(f'{origin}/{what}/page')[0])}"
            except SourceError as exc:
                return "too_large" if "body over" in str(exc) else str(exc)

    seen["discovery"] = await anyio.to_thread.run_sync(discover)
    return seen


def peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":
    import anyio

    origin = serve()
    ordinary = anyio.run(read_all, origin, "ordinary")
    anyio.run(read_all, origin, "ordinary")  # twice: whatever is allocated once (pools, caches) is in the baseline
    baseline = peak_kb()
    bombed = anyio.run(read_all, origin, "bomb")
    print(json.dumps({"baseline_kb": baseline, "peak_kb": peak_kb(), "ordinary": ordinary, "bomb": bombed, "bomb_bytes": len(BOMB)}))
