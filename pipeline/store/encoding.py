"""How values are written to and read from the database: times, stable JSON (its strings cleaned where needed), content hashes, id chunks."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any, Iterator, Sequence, Sized, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from pipeline.clean import MAX_TEXT, clean, clean_text

CHUNK = 500  # values per `in (…)` clause, well under SQLite's limit on bound parameters

T = TypeVar("T")


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


def dumps(value: Any) -> str:
    """Stable JSON: sorted keys, so identical evidence gives identical bytes and hashes."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def cleaned_json(model: BaseModel) -> Any:
    """A model's JSON form with every string in it cleaned (pydantic's own JSON mode cannot even encode a lone surrogate)."""
    return to_jsonable_python(clean(model.model_dump()))


def content_hash(value: Any) -> str:
    """The SHA-256 of a value's stable JSON; text as received hashes too (a lone surrogate passes as its code point)."""
    return hashlib.sha256(dumps(value).encode("utf-8", "surrogatepass")).hexdigest()


# A JSON text can carry what cleaning replaces as escapes (\u0001, \b, a surrogate half, a noncharacter), and only
# a text longer than the cap can hold a string over it: such a text is parsed, cleaned and written again; any other
# is cleaned as plain text (a raw character in it can only sit inside a string).
_ESCAPED_UNSTORABLE = re.compile(r"\\(?:[bf]|u(?:00[0189][0-9a-fA-F]|007[fF]|[dD][89a-fA-F]|[fF][dD][d-eD-E]|[fF]{3}[eEfF]))")


def clean_json_text(text: str) -> str:
    """A JSON document's text with every string in it cleaned (pipeline.clean), in the same stable form as `dumps`."""
    if len(text) > MAX_TEXT or _ESCAPED_UNSTORABLE.search(text):
        return dumps(clean(json.loads(text)))
    return clean_text(text, limit=len(text))


def in_chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[tuple[Sequence[T], str]]:
    """`values` in slices of at most `size`, each with the placeholders of its `in (…)` clause ("?,?,…")."""
    for start in range(0, len(values), size):
        part = values[start : start + size]
        yield part, placeholders(part)


def placeholders(values: Sized) -> str:
    return ",".join("?" * len(values))
