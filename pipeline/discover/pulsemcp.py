"""PulseMCP: the open v0beta list (`servers`, `next`, `total_count`) and the key-gated v0.1 API
(the official registry's envelope, PulseMCP data in `_meta`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.discover import registry
from pipeline.discover.base import SourceBatch, listing_date, mapping, number, paginate, parse_items, read_json_snapshot, text
from pipeline.discover.http import SourceHTTP
from pipeline.models import Listing, Package, Remote

NAME = "pulsemcp"
BASE_URL = "https://api.pulsemcp.com"
MAX_PAGES = 1000
SERVER_META = "com.pulsemcp/server"
VERSION_META = "com.pulsemcp/server-version"


def parse_pulsemcp(payload: Any, where: str = NAME) -> SourceBatch:
    """Either generation: v0.1 items are `{server, _meta}`; v0beta items are flat."""
    return parse_items(payload if isinstance(payload, dict) else None, "servers", where,
                       lambda item: _v01(item, where) if isinstance(item, dict) and "server" in item else _v0beta(item))


def _v0beta(item: Any) -> Listing:
    item = mapping(item, "server")
    name = text(item["name"])
    page = text(item.get("url"))
    if not name:
        raise ValueError("empty name")
    packages = []
    if text(item.get("package_registry")) and text(item.get("package_name")):
        packages.append(Package(registry=item["package_registry"].strip().lower(), identifier=item["package_name"].strip()))
    remotes = [
        Remote(transport="sse" if r.get("transport") == "sse" else "streamable-http", url=r["url_direct"].strip())
        for r in item.get("remotes") or [] if isinstance(r, dict) and text(r.get("url_direct"))
    ]
    metrics = {k: v for k, v in (("github_stars", number(item.get("github_stars"))),
                                 ("package_downloads", number(item.get("package_download_count"))))
               if v is not None}
    return Listing(
        source=NAME,
        key=(page or name).rstrip("/").rsplit("/", 1)[-1].lower(),
        name=name,
        description=text(item.get("short_description")) or text(item.get("EXPERIMENTAL_ai_generated_description")),
        repository=text(item.get("source_code_url")),
        homepage=text(item.get("external_url")),
        packages=packages,
        remotes=remotes,
        external_links={"pulsemcp": page} if page else {},
        metrics=metrics,
        raw=item,
    )


def _v01(item: dict[str, Any], where: str) -> Listing:
    parsed = registry.parse_registry([item], where=where)
    if parsed.problems or not parsed.listings:
        raise ValueError("; ".join(parsed.problems) or "deleted")
    listing = parsed.listings[0]
    meta = item.get("_meta") if isinstance(item.get("_meta"), dict) else {}
    pulse = meta.get(SERVER_META) if isinstance(meta.get(SERVER_META), dict) else {}
    metrics = {
        name: value for name, key in (("pulsemcp_visitors_week", "visitorsEstimateMostRecentWeek"),
                                      ("pulsemcp_visitors_4w", "visitorsEstimateLastFourWeeks"),
                                      ("pulsemcp_visitors_total", "visitorsEstimateTotal"))
        if (value := number(pulse.get(key))) is not None
    }
    attributes = {"pulsemcp_official": pulse["isOfficial"]} if isinstance(pulse.get("isOfficial"), bool) else {}
    version = meta.get(VERSION_META) if isinstance(meta.get(VERSION_META), dict) else {}
    updated = listing_date(version.get("updatedAt"), version.get("publishedAt")) or listing.updated_at
    return listing.model_copy(update={"source": NAME, "metrics": metrics, "attributes": attributes, "updated_at": updated})


def read_snapshot(directory: Path) -> SourceBatch:
    return read_json_snapshot(directory, parse_pulsemcp)


def fetch(http: SourceHTTP, api_key: str | None = None, tenant: str | None = None, base_url: str = BASE_URL) -> SourceBatch:
    """v0.1 with a key (cursor pages); without one, the open v0beta list (pages linked by `next`)."""
    if api_key:
        url = f"{base_url.rstrip('/')}/v0.1/servers"
        params = {"limit": 100, "version": "latest"}

        def following(payload: dict[str, Any], page: int):
            metadata = payload.get("metadata")
            cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
            return (url, {**params, "cursor": cursor}) if cursor else None

        return paginate(http, url, params, parse_pulsemcp, following, headers={"X-API-Key": api_key, "X-Tenant-ID": tenant or ""},
                        max_pages=MAX_PAGES)

    def next_link(payload: dict[str, Any], page: int):
        return (payload["next"], None) if isinstance(payload.get("next"), str) and payload["next"] else None  # `next` carries its own query

    return paginate(http, f"{base_url.rstrip('/')}/v0beta/servers", {"count_per_page": 5000}, parse_pulsemcp, next_link, max_pages=MAX_PAGES)
