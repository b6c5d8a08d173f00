"""Smithery: `/servers` list pages (page numbers), and saved list dumps (`{"servers": [...]}`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, mapping, number, snapshot_files, text
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.models import Listing, Remote

NAME = "smithery"
BASE_URL = "https://api.smithery.ai"
MAX_PAGES = 1000


def parse_smithery(payload: Any, where: str = NAME) -> SourceBatch:
    """Listings from a list page or dump. List items carry no repository: `@owner/repo` in the
    qualified name is only a guess (`weak_repository`), joined when another source names that repo."""
    batch = SourceBatch()
    items = payload.get("servers") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        batch.problems.append(f"{where}: expected an object with a `servers` list")
        batch.complete = False
        return batch
    for index, item in enumerate(items):
        batch.add(f"{where}: server {index}", lambda item=item: _listing(item))
    return batch


def _listing(item: Any) -> Listing:
    item = mapping(item, "server")
    qualified = text(item["qualifiedName"])
    if not qualified:
        raise ValueError("empty qualifiedName")
    bare = qualified.removeprefix("@")
    metrics = {"smithery_uses": n} if (n := number(item.get("useCount"))) is not None else {}
    attributes = {k: item[k] for k in ("verified", "remote", "isDeployed", "createdAt") if isinstance(item.get(k), (bool, str))}
    remotes = []
    deployment = text(item.get("deploymentUrl"))
    if deployment:
        remotes.append(Remote(transport="streamable-http", url=deployment))
    page = text(item.get("homepage"))
    smithery_page = page if page and "smithery.ai/" in page else f"https://smithery.ai/server/{qualified}"
    return Listing(
        source=NAME,
        key=bare.lower(),
        name=text(item.get("displayName")) or bare,
        description=text(item.get("description")),
        homepage=page if page and "smithery.ai/" not in page else None,
        remotes=remotes,
        external_links={"smithery": smithery_page},
        metrics=metrics,
        attributes={f"smithery_{k}": v for k, v in attributes.items()},
        weak_repository=f"https://github.com/{bare}" if bare.count("/") == 1 else None,
        raw=item,
    )


def read_snapshot(directory: Path) -> SourceBatch:
    batch = SourceBatch()
    for path in snapshot_files(directory, "*.json"):
        try:
            batch.extend(parse_smithery(json.loads(path.read_text(encoding="utf-8-sig")), where=path.name))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            batch.problems.append(f"{path.name}: unreadable: {exc}")
            batch.complete = False
    return batch


def fetch(http: SourceHTTP, token: str | None, base_url: str = BASE_URL, page_size: int = 100) -> SourceBatch:
    """Every page of `/servers` (a Bearer key is required), up to `pagination.totalPages`."""
    if not token:
        return SourceBatch(problems=["no API key (set SMITHERY_API_KEY)"], complete=False)
    batch = SourceBatch()
    for page in range(1, MAX_PAGES + 1):
        try:
            payload, _ = http.get_json(f"{base_url.rstrip('/')}/servers", params={"page": page, "pageSize": page_size},
                                       headers={"Authorization": f"Bearer {token}"})
        except SourceError as exc:
            batch.problems.append(f"page {page}: {exc}")
            batch.complete = False
            return batch
        batch.extend(parse_smithery(payload, where=f"page {page}"))
        pagination = payload.get("pagination") if isinstance(payload, dict) else None
        total = pagination.get("totalPages") if isinstance(pagination, dict) else None
        if not isinstance(total, int) or page >= total or not payload.get("servers"):
            return batch
    batch.problems.append(f"stopped after {MAX_PAGES} pages")
    batch.complete = False
    return batch
