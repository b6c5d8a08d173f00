"""Smithery: `/servers` list pages (page numbers), and saved list dumps (`{"servers": [...]}`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, listing_date, mapping, number, paginate, parse_items, read_json_snapshot, text
from pipeline.discover.http import SourceHTTP
from pipeline.models import Listing, Remote

NAME = "smithery"
BASE_URL = "https://api.smithery.ai"
MAX_PAGES = 1000


def parse_smithery(payload: Any, where: str = NAME) -> SourceBatch:
    """Listings from a list page or dump. List items carry no repository: `@owner/repo` in the
    qualified name is only a guess (`weak_repository`), joined when another source names that repo.
    The qualified name is the listing's key; other sources' listings that name it carry the same key
    (pipeline.discover.joins, deviation 29)."""
    return parse_items(payload if isinstance(payload, dict) else None, "servers", where, _listing)


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
        updated_at=listing_date(item.get("createdAt")),
        raw=item,
    )


def read_snapshot(directory: Path) -> SourceBatch:
    return read_json_snapshot(directory, parse_smithery)


def fetch(http: SourceHTTP, token: str | None, base_url: str = BASE_URL, page_size: int = 100) -> SourceBatch:
    """Every page of `/servers` (a Bearer key is required), up to `pagination.totalPages`."""
    if not token:
        return SourceBatch(problems=["no API key (set SMITHERY_API_KEY)"], complete=False)
    url = f"{base_url.rstrip('/')}/servers"

    def following(payload: dict[str, Any], page: int):
        pagination = payload.get("pagination")
        total = pagination.get("totalPages") if isinstance(pagination, dict) else None
        if not isinstance(total, int) or page >= total or not payload.get("servers"):
            return None
        return url, {"page": page + 1, "pageSize": page_size}

    return paginate(http, url, {"page": 1, "pageSize": page_size}, parse_smithery, following,
                    headers={"Authorization": f"Bearer {token}"}, max_pages=MAX_PAGES)
