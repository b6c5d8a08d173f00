"""Shards of the fleet: `--shard I/N` selects the servers whose stable hash falls in shard I of N.

The hash is SHA-256 of the server id, never Python's hash() (salted per process): every process, run and machine puts
a server in the same shard, so the N matrix jobs of one stage run meet every active server exactly once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, TypeVar

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N, or a ValueError that says what is wrong."""
    match = SHARD.match(text or "")
    if not match:
        raise ValueError(f"a shard is I/N (for example 2/20), not {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: I/N needs 1 <= I <= N")
    return Shard(index, count)


def shard_of(server_id: str, n: int) -> int:
    """The 1-based shard of `server_id` among `n`."""
    digest = hashlib.sha256(server_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def in_shard(server_id: str, shard: Shard | None) -> bool:
    return shard is None or shard_of(server_id, shard.count) == shard.index


def select(servers: Iterable[T], shard: Shard | None) -> list[T]:
    """The servers (anything with an `id`) of the shard; all of them without one."""
    return [s for s in servers if in_shard(s.id, shard)]  # type: ignore[attr-defined]
