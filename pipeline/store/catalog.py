"""The catalog: server rows, their identity keys, renames, discovery problems, download counts and delisting.

How discovered entries change the catalog is decided by the discover stage (a plan); this module
loads what the plan needs and applies it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from pydantic_core import from_json
from sqlite_utils import Database

from pipeline.classify import classify
from pipeline.clean import clean, clean_text
from pipeline.identity import pypi_name, remote_key, repository_key
from pipeline.models import Server, SourceRecord
from pipeline.store.encoding import clean_json_text, content_hash, dumps, in_chunks, iso, parse_iso
from pipeline.store.refusals import DATA_ERRORS, WriteRefused, one_server

_JSON_COLUMNS = {"packages": "[]", "remotes": "[]", "metrics": "{}", "attributes": "{}", "source_categories": "{}", "provenance": "{}"}
# Every column of `servers` that holds a JSON document: its strings are cleaned inside the document.
_JSON_TEXT = {*_JSON_COLUMNS, "launch", "env_vars", "external_links", "sources", "platforms"}


@dataclass
class CatalogState:
    """The stored catalog, as a plan reads it: every server row (by id, in table order), key owners and verified publishers."""

    servers: dict[str, dict[str, Any]]
    keys: dict[str, str]
    publishers: dict[str, str]


@dataclass
class CatalogPlan:
    """Every write one discovery run makes to the catalog, decided up front; applied in one transaction."""

    stamp: str  # when the run happened: first_seen_at of new keys, fetched_at of new records
    inserts: list[dict[str, Any]] = field(default_factory=list)  # new server rows, in order
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)  # server id -> the columns that change
    keys: dict[str, str] = field(default_factory=dict)  # key -> its (new) owner, new keys in the order first seen
    records: list[tuple[str, SourceRecord]] = field(default_factory=list)  # (server id, what a source said about it)
    counts: dict[str, int] = field(default_factory=dict)


def catalog_state(db: Database) -> CatalogState:
    return CatalogState(
        servers={row["id"]: row for row in db.query("select * from servers")},
        keys=catalog_keys(db),
        publishers={row["match"]: row["publisher"] for row in db.query("select match, publisher from verified_publishers")},
    )


def apply_catalog_plan(db: Database, plan: CatalogPlan) -> tuple[dict[str, int], list[WriteRefused]]:
    """Write a catalog plan, every string in it cleaned, in one transaction; returns its counts and the servers refused.

    Normally all of it or none of it. When the database refuses a row, the plan is written again server by
    server (each in a savepoint: its row, keys and records together), so a refused server is left out and
    named, and every other server is stored.
    """
    try:
        with db.atomic():
            _write(db, plan)
        return dict(plan.counts), []
    except DATA_ERRORS:
        pass
    refused: list[WriteRefused] = []
    with db.atomic():
        for server_id, share in _by_server(plan).items():
            try:
                with one_server(db, server_id):
                    _write(db, share)
            except WriteRefused as refusal:
                refused.append(refusal)
    return dict(plan.counts), refused


def _write(db: Database, plan: CatalogPlan) -> None:
    db["servers"].insert_all([_clean_row(row) for row in plan.inserts])
    for server_id, columns in plan.updates.items():
        db["servers"].update(server_id, _clean_row(columns))
    db.conn.executemany("insert into server_keys (key, server_id, first_seen_at) values (?, ?, ?) "
                        "on conflict(key) do update set server_id = excluded.server_id",
                        [(clean_text(key), owner, plan.stamp) for key, owner in plan.keys.items()])
    records = [(clean_text(record.source), clean_text(record.key), server_id, plan.stamp, content_hash(record.payload), dumps(clean(record.payload)))
               for server_id, record in plan.records]  # the hash is of what the source said, as received: a record's identity since before cleaning
    # The same content from the same source is kept once, at first sight, with the server it now belongs to (a split or a fold moves it).
    db.conn.executemany("insert into source_records (source, source_key, server_id, fetched_at, content_hash, payload) values (?, ?, ?, ?, ?, ?) "
                        "on conflict(source, source_key, content_hash) do update set server_id = excluded.server_id", records)


def _by_server(plan: CatalogPlan) -> dict[str, CatalogPlan]:
    """The plan split into one plan per server: its new row or changed columns, the keys it now owns, its records."""
    shares: dict[str, CatalogPlan] = {}

    def share(server_id: str) -> CatalogPlan:
        return shares.setdefault(server_id, CatalogPlan(stamp=plan.stamp))

    for row in plan.inserts:
        share(row["id"]).inserts.append(row)
    for server_id, columns in plan.updates.items():
        share(server_id).updates[server_id] = columns
    for key, owner in plan.keys.items():
        share(owner).keys[key] = owner
    for server_id, record in plan.records:
        share(server_id).records.append((server_id, record))
    return shares


def _clean_row(row: dict[str, Any]) -> dict[str, Any]:
    """A servers row with its text cleaned: plain columns as text, JSON columns inside their documents."""
    return {column: (clean_json_text(value) if column in _JSON_TEXT else clean_text(value)) if isinstance(value, str) else value
            for column, value in row.items()}


def _server_from_row(row: dict[str, Any]) -> Server:
    return Server(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        repository=row["repository"],
        subpath=row["subpath"],
        homepage=row["homepage"],
        transport=row["transport"],
        remote_url=row["remote_url"],
        launch=from_json(row["launch"]) if row["launch"] else None,
        env_vars=from_json(row["env_vars"] or "[]"),
        external_links=from_json(row["external_links"] or "{}"),
        sources=from_json(row["sources"] or "[]"),
        category=row.get("category") or "Other",
        platforms=from_json(row.get("platforms") or "[]"),
        repo_key=row.get("repo_key"),
        registry_name=row.get("registry_name"),
        verified_publisher=row.get("verified_publisher"),
        **{column: from_json(row.get(column) or empty) for column, empty in _JSON_COLUMNS.items()},
        is_active=bool(row["is_active"]),
        first_seen_at=parse_iso(row["first_seen_at"]),
        last_seen_at=parse_iso(row["last_seen_at"]),
    )


def classification_of(row: dict[str, Any]) -> dict[str, str]:
    """The category and platforms columns for a stored server row.

    The registry namespace comes from the official registry name, else the first package's name
    (an npm scope), else the local catalog's package. The headings are every curated list's categories for it.
    """
    package = json.loads(row["launch"]).get("package") if row.get("launch") else None
    if row.get("registry_name"):
        package = row["registry_name"]
    elif row.get("packages") and row["packages"] != "[]":
        package = json.loads(row["packages"])[0].get("identifier") or package
    listed = json.loads(row.get("source_categories") or "{}")
    headings = tuple(sorted(heading for source in sorted(listed) for heading in listed[source]))
    found = classify(row["name"], row.get("description"), row.get("repository"), row.get("subpath"), package, headings)
    return {"category": found.category, "platforms": dumps(list(found.platforms))}


def catalog_keys(db: Database) -> dict[str, str]:
    """Every identity key the catalog has seen, and the server it belongs to."""
    return {row["key"]: row["server_id"] for row in db.query("select key, server_id from server_keys")}


def repo_aliases(db: Database) -> dict[str, str]:
    return {row["old_key"]: row["new_key"] for row in db.query("select old_key, new_key from repo_aliases")}


def save_aliases(db: Database, source: str, aliases: dict[str, str], now: datetime) -> None:
    with db.atomic():
        for old, new in sorted(aliases.items()):
            db.execute("insert into repo_aliases (old_key, new_key, source, first_seen_at) values (?, ?, ?, ?) "
                       "on conflict(old_key) do update set new_key = excluded.new_key, source = excluded.source",
                       [clean_text(old), clean_text(new), source, iso(now)])


def record_problems(db: Database, source: str, problems: Iterable[str], now: datetime) -> None:
    """A source's problems (they quote what the source sent, so they are cleaned like it)."""
    with db.atomic():
        db["discovery_problems"].insert_all([{"source": source, "problem": clean_text(p, 2000), "seen_at": iso(now)} for p in problems])


def packages_due_for_downloads(db: Database, before: datetime) -> dict[tuple[str, str], list[str]]:
    """npm and PyPI packages of active servers whose download count is missing or older than `before`."""
    due: dict[tuple[str, str], list[str]] = {}
    for row in db.query("select id, packages, attributes from servers where is_active = 1 and packages != '[]'"):
        checked = json.loads(row["attributes"] or "{}").get("downloads_checked_at")
        if checked and parse_iso(checked) >= before:
            continue
        for package in json.loads(row["packages"]):
            if package.get("registry") in ("npm", "pypi") and package.get("identifier"):
                due.setdefault((package["registry"], package["identifier"]), []).append(row["id"])
    return due


def save_download_counts(db: Database, due: dict[tuple[str, str], list[str]], counts: dict[tuple[str, str], float], now: datetime) -> int:
    """Store weekly downloads per server (summed over its packages of each registry); returns servers updated."""
    per_server: dict[str, dict[str, float]] = {}
    for (registry, name), server_ids in due.items():
        count = counts.get((registry, pypi_name(name) if registry == "pypi" else name))
        if count is None:
            continue
        for server_id in server_ids:
            metrics = per_server.setdefault(server_id, {})
            metrics[f"{registry}_weekly_downloads"] = metrics.get(f"{registry}_weekly_downloads", 0.0) + count
    with db.atomic():
        for server_id, found in per_server.items():
            row = db["servers"].get(server_id)
            db["servers"].update(server_id, {
                "metrics": dumps({**json.loads(row["metrics"] or "{}"), **found}),
                "attributes": dumps({**json.loads(row["attributes"] or "{}"), "downloads_checked_at": iso(now)}),
            })
    return len(per_server)


def delist(db: Database, server_id: str, now: datetime, by: str | None = None, reference: str | None = None) -> None:
    """Take a server off the scoreboard at its owner's request: `/.well-known/mcp-scoreboard` with "delist": true, or
    (`by`) an entry of the opt-out file, whose `reference` names the request.

    Its rows stay (never deleted); discovery will not make it active again while the request stands.
    """
    with db.atomic():
        row = db["servers"].get(server_id)
        marks = {"delisted_at": iso(now), **({"delisted_by": by, "delist_reference": clean_text(reference or "", 300)} if by else {})}
        attributes = {**json.loads(row["attributes"] or "{}"), **marks}
        db["servers"].update(server_id, {"is_active": 0, "deactivated_at": iso(now), "attributes": dumps(attributes)})


_DELISTING = ("delisted_at", "delisted_by", "delist_reference")


def delisted(db: Database, by: str | None = None) -> list[str]:
    """The servers a delisting holds off the scoreboard: every one, or those marked `by` (delist's argument)."""
    if by is None:
        return [row["id"] for row in db.query("select id from servers where json_extract(attributes, '$.delisted_at') is not null order by id")]
    return [row["id"] for row in db.query("select id from servers where json_extract(attributes, '$.delisted_by') = ? order by id", [by])]


def lift_delisting(db: Database, server_ids: Iterable[str]) -> None:
    """Forget the delisting of these servers (its request was withdrawn): the next discovery that lists one makes it active again."""
    with db.atomic():
        for server_id in server_ids:
            row = db["servers"].get(server_id)
            attributes = {k: v for k, v in json.loads(row["attributes"] or "{}").items() if k not in _DELISTING}
            db["servers"].update(server_id, {"attributes": dumps(attributes)})


def naming_keys(db: Database, server_ids: Iterable[str] | None = None) -> dict[str, set[str]]:
    """Every key that names each server (every server when `server_ids` is None): its identity keys, its repository's key
    (one for all the servers of a repository), its remote endpoint's and its registry name's."""
    some = "" if server_ids is None else " where {} in (select value from json_each(?))"
    params = [] if server_ids is None else [dumps(sorted(set(server_ids)))]
    found: dict[str, set[str]] = {}
    for row in db.query("select id, repository, subpath, repo_key, remote_url, registry_name from servers" + some.format("id"), params):
        registry = f"registry:{row['registry_name'].lower()}" if row["registry_name"] else None
        found[row["id"]] = {k for k in (row["repo_key"], repository_key(row["repository"]), repository_key(row["repository"], row["subpath"]),
                                        remote_key(row["remote_url"]), registry) if k}
    for row in db.query("select key, server_id from server_keys" + some.format("server_id"), params):
        found.setdefault(row["server_id"], set()).add(row["key"])
    return found


def active_servers(db: Database, ids: Iterable[str] | None = None) -> list[Server]:
    if ids is None:
        return [_server_from_row(row) for row in db.query("select * from servers where is_active = 1 order by id")]
    servers: list[Server] = []
    for chunk, marks in in_chunks(sorted(set(ids))):
        servers += [_server_from_row(r) for r in db.query(f"select * from servers where is_active = 1 and id in ({marks}) order by id", chunk)]
    return sorted(servers, key=lambda s: s.id)
