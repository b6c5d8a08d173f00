"""The Docker MCP Catalog (docker/mcp-registry `servers/<name>/server.yaml`, `tools.json`) with
Docker Hub pull counts for the `mcp/*` images."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import yaml

from pipeline.discover.base import SourceBatch, env_var, mapping, number, snapshot_files, text
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.models import Listing, Package, Remote

NAME = "docker-mcp-catalog"
TARBALL_URL = "https://api.github.com/repos/docker/mcp-registry/tarball/main"
HUB_URL = "https://hub.docker.com/v2/namespaces/mcp/repositories"
MAX_HUB_PAGES = 50


def parse_server(document: str, tools: str | None, where: str) -> Listing:
    """One catalog entry from its server.yaml (and tools.json when there is one)."""
    server = mapping(yaml.safe_load(document), "server.yaml")
    name = text(server["name"])
    if not name:
        raise ValueError("no name")
    about = server.get("about") if isinstance(server.get("about"), dict) else {}
    source = server.get("source") if isinstance(server.get("source"), dict) else {}
    meta = server.get("meta") if isinstance(server.get("meta"), dict) else {}
    config = server.get("config") if isinstance(server.get("config"), dict) else {}
    variables = [
        v for v in [env_var(s.get("env"), secret=True, description=s.get("name")) for s in config.get("secrets") or [] if isinstance(s, dict)]
        + [env_var(e.get("name"), secret=False, description=e.get("description")) for e in config.get("env") or [] if isinstance(e, dict)]
        if v
    ]
    remotes, packages = [], []
    remote = server.get("remote") if isinstance(server.get("remote"), dict) else {}
    if text(remote.get("url")):
        remotes.append(Remote(transport="sse" if remote.get("transport_type") == "sse" else "streamable-http", url=remote["url"].strip()))
    image = text(server.get("image"))
    if image:
        packages.append(Package(registry="oci", identifier=image, transport="stdio"))
    attributes: dict[str, Any] = {"docker_type": text(server.get("type")) or "server"}
    if tools is not None:
        listed = json.loads(tools)
        if isinstance(listed, list):
            attributes["docker_tool_count"] = len(listed)
    links = {"docker_hub": f"https://hub.docker.com/r/{image}"} if image and image.startswith("mcp/") else {}
    categories = [c for c in [text(meta.get("category"))] if c]
    return Listing(
        source=NAME,
        key=name.lower(),
        name=text(about.get("title")) or name,
        description=text(about.get("description")),
        repository=text(source.get("project")),
        subfolder=text(source.get("directory")) or _dockerfile_folder(source.get("dockerfile")),
        remotes=remotes,
        packages=packages,
        env_vars=variables,
        external_links=links,
        categories=categories,
        attributes=attributes,
        raw=server,
    )


def _dockerfile_folder(dockerfile: Any) -> str | None:
    """`src/everart/Dockerfile` -> `src/everart`: where a monorepo entry without `directory` builds from."""
    path = text(dockerfile)
    return path.rsplit("/", 1)[0] if path and "/" in path else None


def parse_hub(payload: Any) -> dict[str, float]:
    """Pull counts by image (`mcp/<name>`) from a Hub page (`{count, next, results}`) or a single repository."""
    rows = payload.get("results") if isinstance(payload, dict) and "results" in payload else [payload]
    pulls: dict[str, float] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and text(row.get("name")) and (count := number(row.get("pull_count"))) is not None:
            namespace = text(row.get("namespace")) or "mcp"
            pulls[f"{namespace}/{row['name'].strip()}".lower()] = count
    return pulls


def combine(entries: list[tuple[str, str, str | None]], pulls: dict[str, float]) -> SourceBatch:
    """Listings from (where, server.yaml, tools.json) triples, with Hub pull counts attached."""
    batch = SourceBatch()
    for where, document, tools in sorted(entries):
        batch.add(where, lambda document=document, tools=tools, where=where: _with_pulls(parse_server(document, tools, where), pulls))
    return batch


def _with_pulls(listing: Listing, pulls: dict[str, float]) -> Listing:
    for package in listing.packages:
        if package.identifier.lower() in pulls:
            listing.metrics["docker_pulls"] = pulls[package.identifier.lower()]
    return listing


def read_snapshot(directory: Path) -> SourceBatch:
    """`servers/<name>/server.yaml` (+ `tools.json`), and Hub pages saved under `hub/*.json`."""
    entries: list[tuple[str, str, str | None]] = []
    problems: list[str] = []
    for path in snapshot_files(directory / "servers", "*/server.yaml"):
        where = f"servers/{path.parent.name}/server.yaml"
        try:
            tools_path = path.with_name("tools.json")
            entries.append((where, path.read_text(encoding="utf-8"), tools_path.read_text(encoding="utf-8") if tools_path.exists() else None))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{where}: unreadable: {exc}")
    complete = bool(entries) and not problems
    pulls: dict[str, float] = {}
    for path in snapshot_files(directory / "hub", "*.json"):
        try:
            pulls.update(parse_hub(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"hub/{path.name}: unreadable: {exc}")
    batch = combine(entries, pulls)
    batch.problems[:0] = problems
    batch.complete = complete  # Hub pull counts are enrichment: without them the catalog still stands
    return batch


def read_tarball(data: bytes) -> list[tuple[str, str, str | None]]:
    """(where, server.yaml, tools.json) for every server in a GitHub tarball of docker/mcp-registry."""
    files: dict[str, dict[str, str]] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if (member.isfile() and len(parts) == 4 and parts[1] == "servers" and parts[3] in ("server.yaml", "tools.json")
                    and member.size < 4_000_000):
                handle = archive.extractfile(member)
                if handle is not None:
                    files.setdefault(parts[2], {})[parts[3]] = handle.read().decode("utf-8", errors="replace")
    return [(f"servers/{name}/server.yaml", found["server.yaml"], found.get("tools.json")) for name, found in files.items() if "server.yaml" in found]


def fetch(http: SourceHTTP, token: str | None = None, tarball_url: str = TARBALL_URL, hub_url: str = HUB_URL) -> SourceBatch:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        data, _ = http.get_bytes(tarball_url, headers=headers)
        entries = read_tarball(data)
    except (SourceError, tarfile.TarError, OSError, EOFError) as exc:
        return SourceBatch(problems=[f"catalog: {exc}"], complete=False)
    pulls: dict[str, float] = {}
    problems: list[str] = []
    url: str | None = hub_url
    params: dict[str, Any] | None = {"page_size": 100}
    for _ in range(MAX_HUB_PAGES):
        if not url:
            break
        try:
            page, _ = http.get_json(url, params=params)
        except SourceError as exc:  # pull counts are enrichment: the catalog still stands without them
            problems.append(f"hub: {exc}")
            break
        pulls.update(parse_hub(page))
        url, params = (page.get("next") if isinstance(page, dict) else None), None
    batch = combine(entries, pulls)
    batch.problems[:0] = problems
    batch.complete = bool(entries)
    return batch
