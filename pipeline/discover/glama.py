"""Glama: `/v1/servers` with Relay-style cursor pagination (`first`, `after`, `pageInfo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, env_var, mapping, paginate, parse_items, read_json_snapshot, text
from pipeline.discover.http import SourceHTTP
from pipeline.models import Listing

NAME = "glama"
BASE_URL = "https://glama.ai/api/mcp"
MAX_PAGES = 1000


def parse_glama(payload: Any, where: str = NAME) -> SourceBatch:
    return parse_items(payload, "servers", where, _listing)


def _listing(item: Any) -> Listing:
    item = mapping(item, "server")
    identifier = text(item["id"])
    if not identifier:
        raise ValueError("empty id")
    repository = item.get("repository") if isinstance(item.get("repository"), dict) else {}
    license_ = item.get("spdxLicense") if isinstance(item.get("spdxLicense"), dict) else {}
    schema = item.get("environmentVariablesJsonSchema") if isinstance(item.get("environmentVariablesJsonSchema"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    variables = [v for name, spec in properties.items()
                 if (v := env_var(name, description=spec.get("description") if isinstance(spec, dict) else None))]
    attributes: dict[str, Any] = {}
    flags = [a for a in item.get("attributes") or [] if isinstance(a, str)]
    if flags:
        attributes["glama_attributes"] = flags
    if "author:official" in flags:
        attributes["glama_official"] = True
    if text(license_.get("name")):
        attributes["license"] = license_["name"].strip()
    namespace, slug = text(item.get("namespace")), text(item.get("slug"))
    tools = item.get("tools")
    if isinstance(tools, list) and tools:
        attributes["glama_tool_count"] = len(tools)
    return Listing(
        source=NAME,
        key=f"{namespace}/{slug}".lower() if namespace and slug else identifier.lower(),
        name=text(item.get("name")) or identifier,
        description=text(item.get("description")),
        repository=text(repository.get("url")),
        env_vars=variables,
        external_links={"glama": url} if (url := text(item.get("url"))) else {},
        attributes=attributes,
        raw=item,
    )


def read_snapshot(directory: Path) -> SourceBatch:
    return read_json_snapshot(directory, parse_glama)


def fetch(http: SourceHTTP, token: str | None = None, base_url: str = BASE_URL, page_size: int = 100) -> SourceBatch:
    """Every page, passing `pageInfo.endCursor` as `after` while `hasNextPage`."""
    url = f"{base_url.rstrip('/')}/v1/servers"

    def following(payload: dict[str, Any], page: int):
        info = payload.get("pageInfo")
        if not isinstance(info, dict) or not info.get("hasNextPage") or not info.get("endCursor"):
            return None
        return url, {"first": page_size, "after": info["endCursor"]}

    return paginate(http, url, {"first": page_size}, parse_glama, following, headers={"Authorization": f"Bearer {token}"} if token else {},
                    max_pages=MAX_PAGES)
