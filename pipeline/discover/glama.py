"""Glama: `/v1/servers` with Relay-style cursor pagination (`first`, `after`, `pageInfo`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, env_var, mapping, snapshot_files, text
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.models import Listing

NAME = "glama"
BASE_URL = "https://glama.ai/api/mcp"
MAX_PAGES = 1000


def parse_glama(payload: Any, where: str = NAME) -> SourceBatch:
    batch = SourceBatch()
    items = payload.get("servers") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        batch.problems.append(f"{where}: expected an object with a `servers` list")
        batch.complete = False
        return batch
    for index, item in enumerate(items):
        batch.add(f"{where}: server {index}", lambda item=item: _listing(item))
    return batch


def _listing(item: Any) -> Listing:
    item = mapping(item, "server")
    identifier = text(item["id"])
    if not identifier:
        raise ValueError("empty id")
    repository = item.get("repository") if isinstance(item.get("repository"), dict) else {}
    license_ = item.get("spdxLicense") if isinstance(item.get("spdxLicense"), dict) else {}
    schema = item.get("environmentVariablesJsonSchema") if isinstance(item.get("environmentVariablesJsonSchema"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    variables = [v for name, spec in properties.items() if (v := env_var(name, description=spec.get("description") if isinstance(spec, dict) else None))]
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
    batch = SourceBatch()
    for path in snapshot_files(directory, "*.json"):
        try:
            batch.extend(parse_glama(json.loads(path.read_text(encoding="utf-8-sig")), where=path.name))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            batch.problems.append(f"{path.name}: unreadable: {exc}")
            batch.complete = False
    return batch


def fetch(http: SourceHTTP, token: str | None = None, base_url: str = BASE_URL, page_size: int = 100) -> SourceBatch:
    """Every page, passing `pageInfo.endCursor` as `after` while `hasNextPage`."""
    batch = SourceBatch()
    after: str | None = None
    seen: set[str] = set()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for page in range(1, MAX_PAGES + 1):
        params: dict[str, Any] = {"first": page_size}
        if after:
            params["after"] = after
        try:
            payload, _ = http.get_json(f"{base_url.rstrip('/')}/v1/servers", params=params, headers=headers)
        except SourceError as exc:
            batch.problems.append(f"page {page}: {exc}")
            batch.complete = False
            return batch
        batch.extend(parse_glama(payload, where=f"page {page}"))
        info = payload.get("pageInfo") if isinstance(payload, dict) else None
        if not isinstance(info, dict) or not info.get("hasNextPage"):
            return batch
        after = info.get("endCursor")
        if not after or after in seen:
            batch.problems.append(f"page {page}: hasNextPage without a new endCursor; stopped")
            batch.complete = False
            return batch
        seen.add(after)
    batch.problems.append(f"stopped after {MAX_PAGES} pages")
    batch.complete = False
    return batch
