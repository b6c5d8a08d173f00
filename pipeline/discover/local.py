"""The `local` source: the embedded catalog of real servers that install from package registries."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipeline.discover import SourceBatch
from pipeline.models import CatalogEntry, LaunchSpec, SourceRecord

DEFAULT_CATALOG = Path(__file__).with_name("local_catalog.toml")
_LAUNCH_FIELDS = {"registry", "package", "version", "command", "args", "env", "transport", "url", "workdir"}
_TOP_LEVEL_ONLY = {"id", "name", "description", "repository", "subpath", "homepage", "env_vars"}


def parse_local_catalog(text: str, where: str = "local catalog") -> SourceBatch:
    """Parse the catalog TOML into entries; a malformed entry is reported by position and skipped."""
    batch = SourceBatch()
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        batch.problems.append(f"{where}: not valid TOML: {exc}")
        return batch
    items = document.get("server", [])
    if not isinstance(items, list):
        batch.problems.append(f"{where}: `server` must be an array of tables ([[server]])")
        return batch
    seen: set[str] = set()
    for index, item in enumerate(items, start=1):
        label = f"{where}: server #{index}"
        if not isinstance(item, dict):
            batch.problems.append(f"{label}: not a table")
            continue
        try:
            entry = _entry(item)
        except (ValidationError, KeyError, TypeError) as exc:
            batch.problems.append(f"{label} ({item.get('id', 'no id')}): {_short(exc)}")
            continue
        if entry.id in seen:
            batch.problems.append(f"{label}: duplicate id {entry.id!r}")
            continue
        seen.add(entry.id)
        batch.entries.append(entry)
    return batch


def _entry(item: dict[str, Any]) -> CatalogEntry:
    unknown = set(item) - _LAUNCH_FIELDS - _TOP_LEVEL_ONLY
    if unknown:
        raise TypeError(f"unknown fields: {', '.join(sorted(unknown))}")
    if not item.get("command"):  # the embedded catalog names what it starts; discovered servers may leave it to the installer
        raise TypeError("missing field `command`")
    launch = LaunchSpec(**{k: v for k, v in item.items() if k in _LAUNCH_FIELDS})
    if launch.transport != "stdio" and not launch.url:
        raise TypeError("an HTTP server needs a `url` template")
    return CatalogEntry(
        id=item["id"],
        name=item.get("name") or launch.package,
        description=item.get("description"),
        repository=item.get("repository"),
        subpath=item.get("subpath"),
        homepage=item.get("homepage"),
        transport=launch.transport,
        launch=launch,
        env_vars=item.get("env_vars", []),
        keys=[f"local:{item['id']}"],
        records=[SourceRecord(source="local", key=item["id"], payload=item)],
        provenance={field: "local" for field in ("name", "description", "repository", "homepage") if item.get(field)},
    )


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
    return str(exc)


class LocalCatalogSource:
    name = "local"

    def __init__(self, path: Path = DEFAULT_CATALOG) -> None:
        self.path = path

    def read(self) -> SourceBatch:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return SourceBatch(problems=[f"{self.path}: cannot read: {exc}"])
        return parse_local_catalog(text, where=str(self.path))
