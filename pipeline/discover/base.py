"""What every discovery source shares: the batch it yields, snapshot files, small field readers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml
from pydantic import ValidationError

from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.models import CatalogEntry, EnvVar, Listing

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION", re.I)


@dataclass
class SourceBatch:
    """What one source yielded.

    `listings` are deduplicated against every other source; `entries` are already identified (the
    embedded local catalog). A malformed record is a `problem` naming where and what, and is
    skipped. `complete` is False when the source could not be read whole: its silence then must
    not deactivate anything. `aliases` maps old repository keys to new ones (renames).
    """

    listings: list[Listing] = field(default_factory=list)
    entries: list[CatalogEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    complete: bool = True
    records_read: int = 0

    def add(self, where: str, build) -> None:
        """Build one listing; a malformed record becomes a problem, never an exception."""
        self.records_read += 1
        try:
            listing = build()
        except (ValidationError, KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as exc:
            self.problems.append(f"{where}: {short_error(exc)}")
            return
        if listing is not None:
            self.listings.append(listing)

    def extend(self, other: SourceBatch) -> None:
        self.listings += other.listings
        self.entries += other.entries
        self.problems += other.problems
        self.aliases.update(other.aliases)
        self.complete = self.complete and other.complete
        self.records_read += other.records_read


def short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    if isinstance(exc, yaml.YAMLError):
        return "not valid YAML: " + " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {exc}"


def snapshot_files(directory: Path, *patterns: str) -> Iterator[Path]:
    """The saved payloads of one source, sorted. `DOCUMENTED_*` files (API docs and examples, not
    data) are never ingested."""
    seen: set[Path] = set()
    for pattern in patterns:
        for path in sorted(directory.glob(pattern)):
            if path.is_file() and not path.name.startswith("DOCUMENTED_") and path not in seen:
                seen.add(path)
                yield path


def parse_items(payload: Any, field: str, where: str, build: Callable[[Any], Any], label: str = "server") -> SourceBatch:
    """A batch from the list under `field` of a page (or a bare list), one listing per item."""
    batch = SourceBatch()
    items = payload.get(field) if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        batch.problems.append(f"{where}: expected an object with a `{field}` list")
        batch.complete = False
        return batch
    for index, item in enumerate(items):
        batch.add(f"{where}: {label} {index}", lambda item=item: build(item))
    return batch


def read_json_snapshot(directory: Path, parse: Callable[[Any, str], SourceBatch], skip: Callable[[Path], bool] = lambda path: False) -> SourceBatch:
    """Every saved JSON payload of a source (`*.json`), parsed; an unreadable file is a problem and
    makes the batch incomplete, so its absent servers are not deactivated."""
    batch = SourceBatch()
    for path in snapshot_files(directory, "*.json"):
        if skip(path):
            continue
        try:
            payload = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            batch.problems.append(f"{path.name}: unreadable: {exc}")
            batch.complete = False
            continue
        batch.extend(parse(payload, path.name))
    return batch


Step = tuple[str, dict[str, Any] | None] | None  # the next request (URL, query), or None at the end


def paginate(
    http: SourceHTTP,
    url: str,
    params: dict[str, Any] | None,
    parse: Callable[[Any, str], SourceBatch],
    following: Callable[[Any, int], Step],
    *,
    headers: dict[str, str] | None = None,
    max_pages: int = 1000,
) -> SourceBatch:
    """Read pages until `following(payload, page)` says there is no next one.

    A failed page, a next request that repeats an earlier one, or more than `max_pages` pages
    ends the read with a problem and an incomplete batch, so nothing is deactivated on its account.
    """
    batch = SourceBatch()
    seen: set[str] = set()
    for page in range(1, max_pages + 1):
        try:
            payload, _ = http.get_json(url, params=params, headers=headers)
        except SourceError as exc:
            batch.problems.append(f"page {page}: {exc}")
            batch.complete = False
            return batch
        batch.extend(parse(payload, f"page {page}"))
        step = following(payload, page) if isinstance(payload, dict) else None
        if step is None:
            return batch
        url, params = step
        request = json.dumps([url, params], sort_keys=True)
        if request in seen:
            batch.problems.append(f"page {page}: the next page repeats an earlier one; stopped")
            batch.complete = False
            return batch
        seen.add(request)
    batch.problems.append(f"stopped after {max_pages} pages")
    batch.complete = False
    return batch


def text(value: Any) -> str | None:
    """A string field, or None when absent or of the wrong type."""
    return value.strip() or None if isinstance(value, str) else None


def mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} is {type(value).__name__}, expected an object")
    return value


def env_var(name: Any, *, secret: Any = None, description: Any = None, required: Any = None, default: Any = None,
            format: Any = None) -> EnvVar | None:
    if not isinstance(name, str) or not name.strip():
        return None
    flag = bool(secret) if isinstance(secret, bool) else bool(SECRET_NAME.search(name))
    return EnvVar(name=name.strip()[:200], secret=flag, description=text(description), required=required if isinstance(required, bool) else None,
                  default=default if isinstance(default, str) and len(default) <= 1000 else None, format=text(format))


def listing_date(*values: Any) -> datetime | None:
    """The first of `values` that is an ISO 8601 date or time (`2025-09-08T23:47:09.452138Z`, `2026-07-01`), in UTC
    when it names no zone; None when none is (a listing then is undated)."""
    for value in values:
        if isinstance(value, str) and 10 <= len(value.strip()) <= 40:
            try:
                found = datetime.fromisoformat(value.strip())
            except ValueError:
                continue
            return found if found.tzinfo else found.replace(tzinfo=timezone.utc)
    return None


def number(value: Any) -> float | None:
    """A count from a source that may write it as an int, a float (`22583.0`), a string or nothing."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None
