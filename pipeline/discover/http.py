"""HTTP for discovery sources: bounded reads, retries with backoff, rate limits and Retry-After.

One `SourceHTTP` wraps an injected httpx client (tests hand it one pointed at a local server).
A 429 or 5xx is retried after the delay the server asks for (Retry-After, X-Retry-After,
X-RateLimit-Reset) or an exponential backoff, up to `retries` times; then `SourceError` names the
URL and what went wrong. Bodies are capped in bytes (decompressed bytes, with the CLI's pinned client:
pipeline.net), so a broken source cannot exhaust memory.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import httpx

from pipeline.http_headers import retry_after
from pipeline.net import AddressRefused, PinnedTransport, Reach

USER_AGENT = "mcp-scoreboard-discovery"  # the CLI appends the site URL, so a source knows who is reading
MAX_BODY = 64 * 1024 * 1024
MAX_WAIT = 120.0


def source_client(reach: Reach) -> httpx.Client:
    """The client discovery reads with: each host resolved once and dialled only at an address `reach` allows, redirects
    included, bodies decompressed in bounded steps (pipeline.net); no proxies from the environment, which would do
    their own resolving."""
    transport = PinnedTransport(httpx, lambda: httpx.HTTPTransport(trust_env=False), reach)
    return httpx.Client(transport=transport, timeout=httpx.Timeout(60.0, connect=15.0), follow_redirects=True,  # type: ignore[arg-type]
                        max_redirects=5, trust_env=False)


class SourceError(Exception):
    """A source could not be read: what was asked, and why it failed."""


class SourceHTTP:
    def __init__(
        self,
        client: httpx.Client,
        *,
        retries: int = 4,
        backoff: float = 2.0,
        max_body: int = MAX_BODY,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.user_agent = user_agent
        self.client = client
        self.retries = retries
        self.backoff = backoff
        self.max_body = max_body
        self.sleep = sleep
        self.clock = clock
        self.requests = 0
        self.waited = 0.0

    def get_text(self, url: str, *, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> tuple[str, httpx.Headers]:
        """The body of a GET as text, with the response headers (for Link and rate-limit headers)."""
        body, response_headers = self.get_bytes(url, params=params, headers=headers)
        return body.decode("utf-8", errors="replace").removeprefix("\ufeff"), response_headers

    def get_bytes(self, url: str, *, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> tuple[bytes, httpx.Headers]:
        attempt = 0
        while True:
            attempt += 1
            self.requests += 1
            try:
                with self.client.stream("GET", url, params=params, headers={"User-Agent": self.user_agent, **(headers or {})}) as response:
                    if response.status_code == 429 or response.status_code >= 500:
                        reason = f"HTTP {response.status_code}"
                        wait = self._wait(response.headers, attempt)
                    elif response.status_code >= 400:
                        raise SourceError(f"GET {response.url}: HTTP {response.status_code}: {response.read()[:300]!r}")
                    else:
                        return self._body(response), response.headers
            except (AddressRefused, httpx.DecodingError) as exc:  # asking again would get the same answer
                raise SourceError(f"GET {url}: {exc}") from exc
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
                wait = self.backoff * 2 ** (attempt - 1)
            if attempt > self.retries:
                raise SourceError(f"GET {url}: {reason} (gave up after {attempt} attempts)")
            self.waited += wait
            self.sleep(wait)

    def get_json(self, url: str, *, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> tuple[Any, httpx.Headers]:
        text, response_headers = self.get_text(url, params=params, headers=headers)
        try:
            return json.loads(text), response_headers
        except json.JSONDecodeError as exc:
            raise SourceError(f"GET {url}: not JSON: {exc}") from exc

    def _body(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.max_body:
                raise SourceError(f"GET {response.url}: body over {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _wait(self, headers: httpx.Headers, attempt: int) -> float:
        """Seconds to wait before retrying: what the server asked for, else exponential backoff."""
        for name in ("retry-after", "x-retry-after"):
            asked = retry_after(headers.get(name), self.clock(), cap=MAX_WAIT)
            if asked is not None:
                return asked
        reset = headers.get("x-ratelimit-reset")
        if reset and headers.get("x-ratelimit-remaining") == "0":
            try:
                return min(MAX_WAIT, max(0.0, float(reset) - self.clock()))
            except ValueError:
                pass
        return self.backoff * 2 ** (attempt - 1)


def next_link(headers: httpx.Headers) -> str | None:
    """The `rel="next"` URL of an RFC 8288 Link header (GitHub's pagination)."""
    for part in headers.get("link", "").split(","):
        url, _, rest = part.partition(";")
        if 'rel="next"' in rest:
            return url.strip().strip("<>")
    return None
