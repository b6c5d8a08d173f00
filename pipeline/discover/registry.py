"""The official MCP Registry: `/v0.1/servers` pages, full dumps, and the pre-freeze seed format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.discover.base import SourceBatch, env_var, listing_date, mapping, paginate, read_json_snapshot, text
from pipeline.discover.http import SourceHTTP
from pipeline.discover.launch import first_launch
from pipeline.models import Listing, Package, Remote

NAME = "official-registry"
BASE_URL = "https://registry.modelcontextprotocol.io"
OFFICIAL = "io.modelcontextprotocol.registry/official"
MAX_PAGES = 2000
# The 2025-05 seed's `registry_name: unknown` (302 packages of 301 servers) names no registry: its `name` is a GitHub
# `owner/repo` path or an unchecked guess at a package. Nothing can be installed from it or keyed by it, so it is not
# a package (deviation 76); the record keeps it, and its environment variables still count.
NO_REGISTRY = {"unknown"}


def parse_registry(payload: Any, where: str = NAME) -> SourceBatch:
    """Listings from a registry payload: a list page (`{"servers": [...], "metadata": ...}`), a flat
    array of list items or of server.json documents, or the 2025-05 seed (snake_case, `version_detail`).

    Only the latest version of each name is listed; deleted servers are not listed at all. A listing is dated by the
    registry's `updatedAt`, else `publishedAt` (the 2025-05 seed's `release_date`); the 2026 seed's bare server.json
    documents are undated.
    """
    batch = SourceBatch()
    items = payload.get("servers") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        batch.problems.append(f"{where}: expected a list of servers or a page with `servers`, got {type(payload).__name__}")
        batch.complete = False
        return batch
    latest: dict[str, tuple[tuple, int, dict[str, Any], dict[str, Any]]] = {}
    for index, item in enumerate(items):
        position = f"{where}: item {index}"
        try:
            server, meta = _split(item)
            name = server["name"]
            if not isinstance(name, str) or not name.strip():
                raise TypeError("name is empty or not a string")
        except (KeyError, TypeError) as exc:
            batch.records_read += 1
            batch.problems.append(f"{position}: {exc if isinstance(exc, TypeError) else f'missing field {exc}'}")
            continue
        rank = (bool(meta.get("isLatest")), str(meta.get("updatedAt") or meta.get("publishedAt") or ""), index)
        if name not in latest or rank > latest[name][0]:
            latest[name] = (rank, index, server, meta)
    for name, (_, index, server, meta) in sorted(latest.items()):
        if meta.get("status") == "deleted":
            continue
        batch.add(f"{where}: item {index} ({name})", lambda server=server, meta=meta: _listing(server, meta))
    return batch


def _split(item: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(server.json, registry metadata) for any of the three shapes."""
    item = mapping(item, "item")
    if "server" in item:
        server = mapping(item["server"], "server")
        meta = item.get("_meta") or {}
        official = meta.get(OFFICIAL) if isinstance(meta, dict) else None
        return server, official if isinstance(official, dict) else {}
    detail = item.get("version_detail")
    if isinstance(detail, dict):  # the 2025-05 seed
        return item, {"isLatest": detail.get("is_latest", True), "publishedAt": detail.get("release_date"), "status": "active"}
    return item, {"isLatest": True}


def _listing(server: dict[str, Any], meta: dict[str, Any]) -> Listing:
    name = server["name"].strip()
    repository = server.get("repository") if isinstance(server.get("repository"), dict) else {}
    packages, variables, unchecked = [], [], []
    for raw in server.get("packages") or []:
        raw = mapping(raw, "package")
        registry = text(raw.get("registryType")) or text(raw.get("registry_name")) or text(raw.get("registry_type"))
        identifier = text(raw.get("identifier")) or text(raw.get("name"))
        if registry and identifier and registry.lower() in NO_REGISTRY:
            unchecked.append(identifier)  # still names a Smithery server when npm-shaped (deviation 29)
        elif registry and identifier:
            transport = raw.get("transport") if isinstance(raw.get("transport"), dict) else {}
            packages.append(Package(registry=registry.lower(), identifier=identifier, version=text(raw.get("version")),
                                    transport=text(transport.get("type"))))
        for var in raw.get("environmentVariables") or raw.get("environment_variables") or []:
            if isinstance(var, dict) and (found := env_var(var.get("name"), secret=var.get("isSecret", var.get("is_secret")),
                                                           description=var.get("description"), required=var.get("isRequired", var.get("is_required")),
                                                           default=var.get("default"), format=var.get("format"))):
                variables.append(found)
    remotes = []
    for raw in server.get("remotes") or []:
        raw = mapping(raw, "remote")
        kind, url = text(raw.get("type") or raw.get("transport_type")), text(raw.get("url"))
        if not url:
            continue
        headers = [h for h in raw.get("headers") or [] if isinstance(h, dict) and text(h.get("name"))]
        remotes.append(Remote(transport="sse" if kind == "sse" else "streamable-http", url=url, auth_headers=[h["name"].strip() for h in headers]))
        for header in headers:
            if found := env_var(header["name"], secret=header.get("isSecret", True), description=header.get("description")):
                variables.append(found)
    attributes: dict[str, Any] = {"registry_status": meta.get("status") or "active"}
    if meta.get("publishedAt"):
        attributes["registry_published_at"] = str(meta["publishedAt"])
    if text(server.get("version")) or isinstance(server.get("version_detail"), dict):
        attributes["version"] = text(server.get("version")) or text(server["version_detail"].get("version"))
    if unchecked:
        attributes["unchecked_package_names"] = unchecked[:20]
    if name.startswith("io.github."):
        attributes["registry_namespace_verified"] = "github"
    launch, refused = first_launch(server.get("packages") or [])
    if refused:
        attributes["launch_refused"] = refused[:1000]
    return Listing(
        source=NAME,
        key=name,
        name=text(server.get("title")) or "",  # a reverse-DNS name is an id, not a title: other sources' names come first
        description=text(server.get("description")),
        repository=text(repository.get("url")),
        subfolder=text(repository.get("subfolder")),
        homepage=text(server.get("websiteUrl")) or text(server.get("website_url")),
        registry_name=name,
        remotes=remotes,
        packages=packages,
        env_vars=variables,
        attributes=attributes,
        launch=launch,
        updated_at=listing_date(meta.get("updatedAt"), meta.get("publishedAt")),
        raw=server,
    )


def read_snapshot(directory: Path) -> SourceBatch:
    """Every saved payload: list pages, dumps and seeds (`*.json`; JSON Schemas are skipped)."""
    return read_json_snapshot(directory, parse_registry, skip=lambda path: path.name.endswith(".schema.json"))


def fetch(http: SourceHTTP, base_url: str = BASE_URL, updated_since: str | None = None, page_size: int = 100) -> SourceBatch:
    """Every page of `/v0.1/servers` (latest versions), following `metadata.nextCursor` to the end."""
    params: dict[str, Any] = {"limit": page_size, "version": "latest", **({"updated_since": updated_since} if updated_since else {})}
    url = f"{base_url.rstrip('/')}/v0.1/servers"

    def following(payload: dict[str, Any], page: int):
        metadata = payload.get("metadata")
        cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
        return (url, {**params, "cursor": cursor}) if cursor else None

    batch = paginate(http, url, params, parse_registry, following, max_pages=MAX_PAGES)
    batch.complete = batch.complete and not updated_since  # an incremental sync lists only what changed
    return batch
