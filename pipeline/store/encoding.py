"""How values are written to and read from the database: times, stable JSON, content hashes, trimmed evidence, id chunks."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any, Iterator, Sequence, Sized, TypeVar

MAX_STORED_STRING = 16_384  # longer strings in evidence are trimmed, with their length noted
CHUNK = 500  # values per `in (…)` clause, well under SQLite's limit on bound parameters

T = TypeVar("T")


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


def dumps(value: Any) -> str:
    """Stable JSON: sorted keys, so identical evidence gives identical bytes and hashes."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def content_hash(value: Any) -> str:
    return hashlib.sha256(dumps(value).encode()).hexdigest()


def trim(value: Any, limit: int = MAX_STORED_STRING) -> Any:
    """Cap every string in a JSON value, noting how long it was, so hostile payloads stay small."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"…[trimmed, {len(value)} chars]"
    if isinstance(value, list):
        return [trim(item, limit) for item in value]
    if isinstance(value, dict):
        return {str(key)[:limit]: trim(item, limit) for key, item in value.items()}
    return value


def in_chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[tuple[Sequence[T], str]]:
    """`values` in slices of at most `size`, each with the placeholders of its `in (…)` clause ("?,?,…")."""
    for start in range(0, len(values), size):
        part = values[start : start + size]
        yield part, placeholders(part)


def placeholders(values: Sized) -> str:
    return ",".join("?" * len(values))
