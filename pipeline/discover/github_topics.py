"""GitHub topic search: repositories tagged `mcp-server` or `model-context-protocol`.

Search returns at most 1,000 results per query, so each topic is split into creation-date
windows, each halved again while it still holds more than 1,000 repositories.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, mapping, number, parse_items, read_json_snapshot, text
from pipeline.discover.http import SourceError, SourceHTTP, next_link
from pipeline.models import Listing

NAME = "github-topics"
API_URL = "https://api.github.com"
TOPICS = ("mcp-server", "model-context-protocol")
SEARCH_CAP = 1000
FIRST_DAY = date(2024, 11, 1)  # MCP was announced on 2024-11-25; repositories tagged earlier are few


def parse_search(payload: Any, where: str = NAME) -> SourceBatch:
    batch = parse_items(payload if isinstance(payload, dict) else None, "items", where, _listing, label="item")
    if isinstance(payload, dict) and payload.get("incomplete_results"):
        batch.complete = False
        batch.problems.append(f"{where}: GitHub marked the results incomplete")
    return batch


def _listing(item: Any) -> Listing:
    item = mapping(item, "item")
    full_name = text(item["full_name"])
    if not full_name or "/" not in full_name:
        raise ValueError(f"full_name {item.get('full_name')!r} is not owner/repo")
    license_ = item.get("license") if isinstance(item.get("license"), dict) else {}
    metrics = {k: v for k, v in (("github_stars", number(item.get("stargazers_count"))), ("github_forks", number(item.get("forks_count"))))
               if v is not None}
    attributes: dict[str, Any] = {
        k: v for k, v in (
            ("github_id", item.get("id")), ("language", text(item.get("language"))), ("license", text(license_.get("spdx_id"))),
            ("archived", item.get("archived")), ("fork", item.get("fork")), ("pushed_at", text(item.get("pushed_at"))),
            ("topics", item.get("topics")),
        ) if v not in (None, [], "")
    }
    return Listing(
        source=NAME,
        key=full_name.lower(),
        name=text(item.get("name")) or full_name,
        description=text(item.get("description")),
        repository=text(item.get("html_url")) or f"https://github.com/{full_name}",
        homepage=text(item.get("homepage")),
        metrics=metrics,
        attributes=attributes,
        raw={k: v for k, v in item.items() if k != "owner"},
    )


def read_snapshot(directory: Path) -> SourceBatch:
    return read_json_snapshot(directory, parse_search)


def fetch(http: SourceHTTP, token: str | None = None, api_url: str = API_URL, today: date | None = None) -> SourceBatch:
    batch = SourceBatch()
    headers = {"Accept": "application/vnd.github+json", **({"Authorization": f"Bearer {token}"} if token else {})}
    last = today or date.today()
    for topic in TOPICS:
        windows = [(FIRST_DAY, last)]
        while windows:
            start, end = windows.pop()
            query = f"topic:{topic} created:{start.isoformat()}..{end.isoformat()}"
            try:
                found = _search(http, api_url, query, headers, batch, may_split=end > start)
            except SourceError as exc:
                batch.problems.append(f"{query}: {exc}")
                batch.complete = False
                continue
            if found > SEARCH_CAP and end > start:
                middle = start + (end - start) // 2
                windows += [(start, middle), (middle + timedelta(days=1), end)]
    return batch


def _search(http: SourceHTTP, api_url: str, query: str, headers: dict[str, str], batch: SourceBatch, may_split: bool) -> int:
    """Read one query's pages into `batch` and return its total_count; over the cap, return at once
    when the window can be split, else read the first 1,000 and say the rest is missing."""
    url: str | None = f"{api_url.rstrip('/')}/search/repositories"
    params: dict[str, Any] | None = {"q": query, "sort": "stars", "order": "desc", "per_page": 100}
    total = 0
    first = True
    pages: list[SourceBatch] = []
    while url:
        payload, response_headers = http.get_json(url, params=params, headers=headers)
        total = int(payload.get("total_count") or 0) if isinstance(payload, dict) else 0
        if first and total > SEARCH_CAP:
            if may_split:
                return total  # the caller splits the window instead
            batch.problems.append(f"{query}: {total} results in one day; only the first {SEARCH_CAP} are reachable")
            batch.complete = False
        first = False
        pages.append(parse_search(payload, where=query))
        url, params = next_link(response_headers), None
    for page in pages:
        batch.extend(page)
    return total
