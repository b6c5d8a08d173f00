"""How a discovery run changes the stored catalog, decided without touching the database (pure).

An entry keeps the id of any stored server that shares one of its keys, so renames and new
spellings of a server update it instead of starting over. A stored server that this run finds to
be several (a repository's servers that an older rule merged) is kept by one of them: the entry
whose own id it is, else the first whose keys lead to it; the others become new servers (deviation
73). Fields a source leaves empty never blank out what is stored; external links, metrics and attributes accumulate. A source that ran
and no longer lists a server stops vouching for it; a server no source vouches for is
deactivated, never deleted. The store applies the plan in one transaction.

Entries meet the stored catalog in its stored form: their keys and fields are cleaned as the store
cleans what it writes (pipeline.clean), so a key with a control character in it finds its own
stored row again, and an unchanged server is counted unchanged.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterable

from pipeline.clean import clean, clean_text
from pipeline.identity import source_rank, verified_publisher, with_hash
from pipeline.models import CatalogEntry
from pipeline.store import CatalogPlan, CatalogState, classification_of, dumps, iso

_BLANK = (None, "", "[]")
_ENDPOINT = ("remote_url", "launch", "transport")


def plan_catalog(state: CatalogState, entries: Iterable[CatalogEntry], ran: Iterable[str], now: datetime) -> CatalogPlan:
    """The writes that merge `entries` into the catalog `state`, where the sources in `ran` were read whole."""
    ran = set(ran)
    plan = CatalogPlan(stamp=iso(now), counts={"new": 0, "updated": 0, "unchanged": 0, "deactivated": 0, "merged": 0})
    catalog = _Catalog(state, plan)
    seen: dict[str, set[str]] = {}  # server id -> the sources that listed it this run
    entries = list(entries)
    keeper = _keepers(state.keys, entries)
    for index, entry in enumerate(entries):
        keys = [clean_text(key) for key in entry.keys]
        owners = [o for o in dict.fromkeys(catalog.keys[k] for k in keys if k in catalog.keys) if keeper.get(o, index) == index]
        server_id = owners[0] if owners else entry.id
        if entry.derived_id and not owners and (server_id in catalog.ids_with_keys or server_id in catalog.rows):
            server_id = with_hash(entry.id, keys[0])  # another server already has this readable id
        for other in owners[1:]:  # two stored servers turned out to be one: fold the other into this one
            if other in seen:
                continue
            catalog.keys.update({key: server_id for key, owner in catalog.keys.items() if owner == other})
            catalog.write(other, {"is_active": 0, "deactivated_at": plan.stamp, "sources": "[]"})
            plan.counts["merged"] += 1
        seen_sources = seen.setdefault(server_id, set())
        seen_sources.update(entry.sources)
        existing = catalog.rows.get(server_id)
        if existing is None:
            catalog.insert(_new_row(server_id, entry, plan.stamp, state.publishers))
            plan.counts["new"] += 1
        else:
            changes = _changes(existing, entry, ran, seen_sources, state.publishers)
            changed = any(existing.get(k) != v for k, v in changes.items())
            catalog.write(server_id, {**changes, "last_seen_at": plan.stamp})
            plan.counts["updated" if changed else "unchanged"] += 1
        for key in keys:
            if catalog.keys.get(key) != server_id:
                catalog.keys[key] = server_id
                catalog.ids_with_keys.add(server_id)
        plan.records += [(server_id, record) for record in entry.records]
    for server_id, row in list(catalog.rows.items()):
        sources = json.loads(row["sources"] or "[]")
        if row["is_active"] != 1 or server_id in seen or not set(sources) & ran:
            continue
        remaining = [s for s in sources if s not in ran]
        update: dict[str, Any] = {"sources": dumps(remaining)}
        if not remaining:
            update.update(is_active=0, deactivated_at=plan.stamp)
            plan.counts["deactivated"] += 1
        catalog.write(server_id, update)
    plan.keys = {key: owner for key, owner in catalog.keys.items() if state.keys.get(key) != owner}
    return plan


def _keepers(stored: dict[str, str], entries: list[CatalogEntry]) -> dict[str, int]:
    """Which entry keeps each stored server that several entries lead to: the one whose own id it is, else the first."""
    claims: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        for owner in dict.fromkeys(stored[k] for k in (clean_text(key) for key in entry.keys) if k in stored):
            claims.setdefault(owner, []).append(index)
    return {owner: next((i for i in claimants if entries[i].id == owner), claimants[0]) for owner, claimants in claims.items()}


class _Catalog:
    """The catalog as it will be once the plan so far is applied, so each entry sees the ones before it."""

    def __init__(self, state: CatalogState, plan: CatalogPlan) -> None:
        self.rows = dict(state.servers)
        self.keys = dict(state.keys)
        self.ids_with_keys = set(self.keys.values())
        self.plan = plan
        self.inserted: dict[str, dict[str, Any]] = {}

    def insert(self, row: dict[str, Any]) -> None:
        self.plan.inserts.append(row)
        self.inserted[row["id"]] = row
        self.rows[row["id"]] = dict(row)

    def write(self, server_id: str, columns: dict[str, Any]) -> None:
        self.rows[server_id] = {**self.rows[server_id], **columns}
        if server_id in self.inserted:
            self.inserted[server_id].update(columns)
        else:
            self.plan.updates.setdefault(server_id, {}).update(columns)


def _fields(entry: CatalogEntry) -> dict[str, Any]:
    text = {field: getattr(entry, field) for field in ("name", "description", "repository", "subpath", "homepage", "remote_url", "repo_key",
                                                        "registry_name")}
    return {
        **{field: clean_text(value) if value else value for field, value in text.items()},
        "transport": entry.transport,
        "launch": entry.launch.model_dump_json() if entry.launch else None,
        "env_vars": dumps(clean([v.model_dump() for v in entry.env_vars])),
        "packages": dumps(clean([p.model_dump(exclude_none=True) for p in entry.packages])),
        "remotes": dumps(clean([r.model_dump() for r in entry.remotes])),
    }


def _provenance(entry: CatalogEntry) -> dict[str, str]:
    """Which source said each field; columns derived from a field share its source."""
    provenance = dict(entry.provenance)
    if "remote_url" in provenance:
        provenance["transport"] = provenance["remote_url"]
    if "repository" in provenance:
        provenance["repo_key"] = provenance["repository"]
    if entry.launch:  # the server is started from its package: its transport is the launch's
        provenance["launch"] = provenance["transport"] = provenance.get("launch", "local")
    return provenance


def _new_row(server_id: str, entry: CatalogEntry, stamp: str, publishers: dict[str, str]) -> dict[str, Any]:
    row = {
        "id": server_id, **_fields(entry),
        "external_links": dumps(clean(entry.external_links)),
        "metrics": dumps(clean(entry.metrics)),
        "attributes": dumps(clean(entry.attributes)),
        "source_categories": dumps(clean(entry.source_categories)),
        "provenance": dumps(_provenance(entry)),
        "sources": dumps(entry.sources),
        "is_active": 1,
        "first_seen_at": stamp,
        "last_seen_at": stamp,
        "deactivated_at": None,
    }
    row.update(classification_of(row))
    row["verified_publisher"] = verified_publisher(publishers, row["repo_key"], row["registry_name"])
    return row


def _changes(existing: dict[str, Any], entry: CatalogEntry, ran: set[str], seen_sources: set[str], publishers: dict[str, str]) -> dict[str, Any]:
    """The columns of a stored server after this entry: merged fields, accumulated links and metrics, sources, state."""
    merged, kept = _merge_fields(existing, _fields(entry), _provenance(entry), ran)
    sources = sorted((set(json.loads(existing["sources"] or "[]")) - ran) | seen_sources)
    delisted = "delisted_at" in json.loads(existing.get("attributes") or "{}")
    merged.update(
        external_links=dumps({**json.loads(existing["external_links"] or "{}"), **clean(entry.external_links)}),
        metrics=dumps({**json.loads(existing.get("metrics") or "{}"), **clean(entry.metrics)}),
        attributes=dumps({**json.loads(existing.get("attributes") or "{}"), **clean(entry.attributes)}),
        source_categories=dumps({**json.loads(existing.get("source_categories") or "{}"), **clean(entry.source_categories)}),
        provenance=dumps(kept),
        sources=dumps(sources),
        is_active=0 if delisted else 1,  # its owner asked to be taken off: sources listing it do not bring it back
        deactivated_at=existing["deactivated_at"] if delisted else None,
    )
    merged.update(classification_of({**existing, **merged}))
    after = {**existing, **merged}
    merged["verified_publisher"] = verified_publisher(publishers, after.get("repo_key"), after.get("registry_name"))
    return merged


def _merge_fields(
    existing: dict[str, Any], fields: dict[str, Any], provenance: dict[str, str], ran: set[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Which new field values replace stored ones (seed 000: registry first, never blank a field).

    A stored value gives way when its source ran this time (it no longer says so), when the new
    value's source ranks at least as high, or when nothing was stored.
    """
    stored_from = json.loads(existing.get("provenance") or "{}")
    merged: dict[str, Any] = {}
    kept = dict(stored_from)
    for field, value in fields.items():
        if value in _BLANK or field in _ENDPOINT:
            continue
        new_source, old_source = provenance.get(field), stored_from.get(field)
        replace = existing.get(field) in _BLANK or old_source is None
        if new_source is not None:  # a default (stdio, no remote) never overrides what a source said
            replace = replace or old_source in ran or source_rank(new_source) <= source_rank(old_source)
        if replace:
            merged[field] = value
            if new_source:
                kept[field] = new_source
    # The endpoint is one choice (remote URL, or launch, and its transport): the entry's replaces the stored one whole by
    # the same rule, so a launch chosen now never leaves a stored remote URL behind it, nor a remote a stored launch.
    new_source = provenance.get("launch") or provenance.get("remote_url")
    old_source = stored_from.get("launch") or stored_from.get("remote_url")
    replace = all(existing.get(f) in _BLANK for f in ("remote_url", "launch")) or old_source is None
    if new_source is not None:
        replace = replace or old_source in ran or source_rank(new_source) <= source_rank(old_source)
    if replace and any(fields[f] not in _BLANK for f in ("remote_url", "launch")):
        merged.update({field: fields[field] for field in _ENDPOINT})
        for field in _ENDPOINT:
            kept.pop(field, None)
        kept.update({field: source for field in _ENDPOINT if (source := provenance.get(field)) and fields[field] not in _BLANK})
    return merged, kept
