"""Bounded GETs for the fetchers: every body capped as it streams in, redirects followed a couple of times and only
to hosts the caller allows, credentials sent only where the caller says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import httpx

from pipeline.analyze.fetch import FetchFailed

REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: httpx.Headers
    body: bytes
    url: str


class TooLarge(FetchFailed):
    """A body over its cap: the host sent more than any honest answer needs."""


def get(
    client: httpx.Client,
    url: str,
    *,
    cap: int,
    headers: Callable[[httpx.URL], dict[str, str]],
    allowed: Callable[[httpx.URL], bool],
    redirects: int = 2,
    sent: Callable[[httpx.URL], None] = lambda url: None,
) -> Reply:
    """GET `url`; `headers(url)` gives each hop's headers, `allowed(url)` whether a redirect may go there, `sent(url)`
    is told of every request made (to count API calls). Transport errors pass up as httpx errors."""
    target = httpx.URL(url)
    for hop in range(redirects + 1):
        sent(target)
        with client.stream("GET", target, headers=headers(target)) as response:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                following = target.join(location)
                if hop == redirects or not allowed(following):
                    raise FetchFailed(f"redirected to {str(following)[:200]}, which is not followed")
                target = following
                continue
            return Reply(response.status_code, response.headers, _capped(response, cap, target), str(target))
    raise FetchFailed("too many redirects")  # unreachable: the loop returns or raises


def _capped(response: httpx.Response, cap: int, url: httpx.URL) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise TooLarge(f"{url.host} answered {int(declared) // 1000} KB, over the {cap // 1000} KB cap")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():  # decoded as it streams: a compressed body is counted decompressed
        size += len(chunk)
        if size > cap:
            raise TooLarge(f"{url.host} answered more than {cap // 1000} KB, over the cap")
        chunks.append(chunk)
    return b"".join(chunks)
