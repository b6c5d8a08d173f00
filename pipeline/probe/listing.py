"""Lists as the server sent them: every page of tools/list, resources/list, resources/templates/list and
prompts/list, kept item by item, however badly some items are formed.

The SDK validates a whole list result against the negotiated version and fails the page on one bad item (one tool
with an invalid schema loses a thousand good ones). The session's transport is tapped (`Tapped`) so that the result
of each list request is also kept as it came over the wire; the SDK's verdict on a page becomes a note on the items
it named, and the prober's own checks (suite, tooltext) judge each item. Pages are followed by their cursor,
bounded, and an item a later page repeats (a cursor that loops, pages that repeat) is kept once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import mcp_types
from mcp import Client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

MAX_PAGES = 20  # pagination is bounded; a cursor seen twice ends it as a loop
LISTS = {  # method -> (the wire field of its items, the key that names an item)
    "tools/list": ("tools", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
    "prompts/list": ("prompts", "name"),
}


class Tapped:
    """A transport whose list results are kept raw: the last result of each list method, as the server sent it."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.asked: dict[Any, str] = {}  # request id -> list method
        self.results: dict[str, dict[str, Any] | None] = {}

    async def __aenter__(self):
        read, write = await self.transport.__aenter__()
        return _TappedRead(read, self), _TappedWrite(write, self)

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.transport.__aexit__(*exc)

    def sent(self, message: Any) -> None:
        inner = message.message if isinstance(message, SessionMessage) else None
        if isinstance(inner, mcp_types.JSONRPCRequest) and inner.method in LISTS:
            self.asked[inner.id] = inner.method
            self.results[inner.method] = None

    def received(self, message: Any) -> None:
        inner = message.message if isinstance(message, SessionMessage) else None
        if isinstance(inner, mcp_types.JSONRPCResponse) and inner.id in self.asked:
            self.results[self.asked.pop(inner.id)] = inner.result


class _Stream:
    """One of the session's streams, passed through to the inner one; what the subclass taps is seen on the way."""

    def __init__(self, inner: Any, tap: Tapped) -> None:
        self.inner, self.tap = inner, tap

    def __getattr__(self, name: str) -> Any:  # last_context and whatever else the SDK reads of its stream
        return getattr(self.inner, name)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Any:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.inner.__aexit__(*exc)


class _TappedRead(_Stream):
    async def receive(self) -> Any:
        message = await self.inner.receive()
        self.tap.received(message)
        return message

    def __aiter__(self) -> "_TappedRead":
        return self

    async def __anext__(self) -> Any:
        message = await self.inner.__anext__()
        self.tap.received(message)
        return message


class _TappedWrite(_Stream):
    async def send(self, message: Any) -> None:
        self.tap.sent(message)
        await self.inner.send(message)


@dataclass
class Listing:
    """Every item of a list, once each, as the server sent it, and what was wrong with the list."""

    items: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the pagination's, and the SDK's verdict on items and pages
    pages: list[dict[str, Any]] = field(default_factory=list)  # each page's result without its items

    def summary(self, noun: str) -> str:
        return "; ".join([f"{len(self.items)} {noun}", *self.problems])[:2000]


async def list_all(client: Client, method: str, fetch: Callable[[str | None], Awaitable[Any]]) -> Listing:
    """Follow nextCursor, bounded in pages, stopping on a repeated cursor; an item an earlier page listed (by name,
    or uri) is not kept again. Raises what the request raised when a page could not be had at all."""
    tap = client.server if isinstance(client.server, Tapped) else None
    wire, key = LISTS[method]
    listing = Listing()
    seen_cursors: set[str] = set()
    seen_keys: set[str] = set()
    repeated, not_objects = 0, []
    cursor: str | None = None
    for number in range(MAX_PAGES):
        page, problem = await _page(client, tap, method, cursor, fetch)
        items = page.get(wire)
        if not isinstance(items, list):
            raise RuntimeError(f"{method} result has no list of {wire}: {problem or type(items).__name__}")
        where = f"page {number + 1}: " if number else ""
        if problem:
            listing.problems.append(where + problem)
        listing.pages.append({k: v for k, v in page.items() if k != wire})
        keys_here: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                not_objects.append(f"{where}{wire}[{index}]")
                continue
            name = item.get(key)
            if isinstance(name, str) and name in seen_keys:
                repeated += 1
                continue
            if isinstance(name, str):
                keys_here.add(name)
            listing.items.append(item)
        seen_keys |= keys_here  # a name twice on one page is the server's duplicate; on a later page, a repeat
        cursor = page.get("nextCursor")
        if cursor is not None and not isinstance(cursor, str):
            listing.problems.append(f"nextCursor is not a string: {str(cursor)[:60]!r}")
            break
        if not cursor:
            break
        if cursor in seen_cursors:
            listing.problems.append(f"pagination loop: cursor {cursor[:60]!r} repeated")
            break
        seen_cursors.add(cursor)
    else:
        listing.problems.append(f"pagination stopped after {MAX_PAGES} pages")
    if not_objects:
        listing.problems.append(f"not objects, not kept: {len(not_objects)} ({', '.join(not_objects[:5])})")
    if repeated:
        listing.problems.append(f"{repeated} {wire} repeated from earlier pages, kept once")
    return listing


async def _page(client: Client, tap: Tapped | None, method: str, cursor: str | None,
                fetch: Callable[[str | None], Awaitable[Any]]) -> tuple[dict[str, Any], str | None]:
    """One page as the server sent it, and the SDK's objection to it (None when it had none)."""
    try:
        typed = await fetch(cursor)
    except ValidationError as exc:
        raw = tap.results.get(method) if tap else None
        if raw is None:
            raise
        return raw, _verdict(exc, client.protocol_version)
    raw = tap.results.get(method) if tap else None
    return (raw if raw is not None else typed.model_dump(by_alias=True, exclude_none=True, mode="json")), None


def _verdict(exc: ValidationError, version: str | None) -> str:
    """The SDK's objections to a page, by the item they are about: `tools[10].inputSchema.type: Input should be 'object'`."""
    errors = exc.errors()
    shown = []
    for error in errors[:5]:
        loc = error.get("loc") or ()
        place = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
        shown.append(f"{place}: {error.get('msg')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"does not conform to {version}: {'; '.join(shown)}{more}"[:1000]
