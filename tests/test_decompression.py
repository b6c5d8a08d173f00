"""Compressed bodies are decompressed as a stream, in bounded steps, and the byte caps count decompressed bytes:
a gzip bomb (1 GiB of zeros in ~1 MB) over real HTTP costs every path of the prober and discovery a few MB, and is
classified too large; an encoding we did not ask for is a classified failure, not a guess."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib

import anyio
import httpx2
import pytest

from pipeline.discover.http import SourceError, SourceHTTP, source_client
from pipeline.net import LOOPBACK, STEP, Decoder, Reach
from pipeline.probe.endpoint import get_bytes
from pipeline.probe.raw import Failure, Limits, exchange, probe_client
from pipeline.probe.transports import MessageCap, capped_http_client
from tests.support import TEST_SERVERS, threaded_server

LIMITS = Limits(timeout=3, allowed=frozenset({LOOPBACK}))


def test_a_gzip_bomb_costs_a_few_megabytes_on_every_path_and_is_too_large():
    done = subprocess.run([sys.executable, str(TEST_SERVERS / "gzip_bomb.py")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["bomb_bytes"] < 2_000_000
    assert all(v.startswith(("ok ", "200 ")) and not v.endswith("None") for v in report["ordinary"].values()), report["ordinary"]
    assert report["bomb"] == {"raw json": "too_large", "raw sse": "too_large", "endpoint GET": "200 None", "sdk": "too_large",
                              "discovery": "too_large"}
    grown_mb = (report["peak_kb"] - report["baseline_kb"]) / 1024
    assert grown_mb < 20, f"the bombs cost {grown_mb:.0f} MB above an ordinary probe"


def test_the_decoder_undoes_gzip_and_both_kinds_of_deflate_in_bounded_steps():
    text = b"hello world " * 100_000  # 1.2 MB
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    for encoding, body in (("gzip", gzip.compress(text)), ("x-gzip", gzip.compress(text)), ("deflate", zlib.compress(text)),
                           ("deflate", raw_deflate.compress(text) + raw_deflate.flush()), ("gzip, gzip", gzip.compress(gzip.compress(text))),
                           ("identity", text), ("gzip", gzip.compress(text) + b"trailing bytes are ignored")):
        decoder = Decoder(encoding)
        pieces = [p for i in range(0, len(body), 1000) for p in decoder.feed(body[i:i + 1000])]
        assert b"".join(pieces) == text, encoding
        assert max(map(len, pieces)) <= STEP
    for encoding, body in (("br", b"\x1b\x00"), ("zstd", b"(\xb5/\xfd"), ("gzip, gzip, gzip", b"x"), ("gzip", b"not gzip at all")):
        with pytest.raises(ValueError):
            list(Decoder(encoding).feed(body))
    assert list(Decoder("br").feed(b"")) == []  # no body, nothing to refuse (a 204 or a HEAD)


@pytest.fixture(scope="module")
def brotli_server():
    """Answers everything with a body in an encoding the client did not ask for."""

    async def handle(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")), 0)
        if length:
            await reader.readexactly(length)
        body = b"\x1b\x2a\x00\xf8\xa5\x40"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: br\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(body), body))
        await writer.drain()

    with threaded_server(handle) as port:
        yield f"http://127.0.0.1:{port}"


def test_an_encoding_we_did_not_ask_for_is_a_classified_failure_on_every_path(brotli_server):
    async def go():
        async with probe_client(LIMITS) as client:
            found = await exchange(client, brotli_server + "/mcp", "initialize", {}, limits=LIMITS)
            page = await get_bytes(client, brotli_server + "/page", LIMITS, "text/html")
        async with capped_http_client(MessageCap(), 3, 3, reach=LIMITS.reach)() as sdk:
            with pytest.raises(httpx2.DecodingError, match="'br' is not one we asked for"):
                await sdk.post(brotli_server + "/mcp", json={})
        return found, page

    found, page = anyio.run(go)
    assert found.failure is Failure.bad_encoding and found.status == 200 and "'br'" in found.detail
    assert found.outcome.value == "protocol_error" and page == (None, "", None)
    with source_client(Reach(frozenset({LOOPBACK}))) as client:
        http = SourceHTTP(client, retries=3, sleep=lambda _: None)
        with pytest.raises(SourceError, match="not one we asked for"):
            http.get_bytes(brotli_server + "/list")
        assert http.requests == 1  # not retried: the same bytes would come back
