"""What the shard capture and the merge need to know of each table, read from the schema itself (no list to keep in step)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

# Tables of the fleet machinery itself: never captured into a shard, never merged from one.
MACHINERY = ("_sqlite_migrations", "shard_merges", "shard_manifest", "shard_rows")
# Rollups whose counters add up: a shard carries its own probes' share of a day, added to whatever main holds for it
# (deviation 84). Column -> how it adds: a number, or a histogram ({bucket: count}).
ADDITIVE = {"probe_daily": {"runs": "number", "reachable": "number", "ok": "number", "latency_hist": "histogram"}}


@dataclass
class Table:
    name: str
    columns: list[str]
    key: list[str]  # the primary key's columns ([] for a rowid table without one)
    natural: list[str]  # what identifies a row across databases: a unique index, else a primary key that is not a row id
    surrogate: bool  # keyed by an integer id local to one database: a new row gets a new id in another
    parents: dict[str, str] = field(default_factory=dict)  # column -> table whose integer id it holds


def tables(conn: sqlite3.Connection, schema: str = "main") -> dict[str, Table]:
    found: dict[str, Table] = {}
    names = [r[0] for r in conn.execute(f"select name from {schema}.sqlite_master where type = 'table' and name not like 'sqlite_%' "
                                        "and name not like '\\_shard\\_%' escape '\\' order by name")]
    for name in names:
        if name in MACHINERY:
            continue
        info = conn.execute(f"pragma {schema}.table_info({quoted(name)})").fetchall()
        columns = [r[1] for r in info]
        key = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        surrogate = key == ["id"] and next(r[2] for r in info if r[1] == "id").upper() == "INTEGER"
        unique = [r[1] for r in conn.execute(f"pragma {schema}.index_list({quoted(name)})") if r[2] and r[3] == "c"]
        natural = [r[2] for r in conn.execute(f"pragma {schema}.index_info({quoted(unique[0])})")] if unique else ([] if surrogate else key)
        found[name] = Table(name, columns, key, natural, surrogate)
    for name, table in found.items():
        table.parents = {r[3]: r[2] for r in conn.execute(f"pragma {schema}.foreign_key_list({quoted(name)})")
                         if r[2] in found and found[r[2]].surrogate and r[4] == "id"}
    return found


def parents_first(found: dict[str, Table], names: set[str]) -> list[str]:
    """`names` ordered so that a table comes after every table whose ids it holds."""
    ordered: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in ordered or name in path:
            return
        for parent in found[name].parents.values():
            if parent in names:
                visit(parent, (*path, name))
        ordered.append(name)

    for name in sorted(names):
        visit(name, ())
    return ordered


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
