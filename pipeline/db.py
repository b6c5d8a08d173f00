"""The evidence database: the only module that knows table shapes.

Every write that belongs together happens in one transaction, so an interrupted run leaves
what it had committed and nothing half-written.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from pydantic_core import from_json, to_json
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, latency
from pipeline.classify import classify
from pipeline.discover.keys import with_hash
from pipeline.migrations import MIGRATION_SET, migrations
from pipeline.models import (
    AnalysisResult,
    CatalogEntry,
    Judgement,
    ProbeResult,
    ScoreCard,
    Server,
    StageReport,
)

SQLITE_HEADER = b"SQLite format 3\x00"
MAX_STORED_STRING = 16_384  # longer strings in evidence are trimmed, with their length noted
SCORE_DROP_ALERT = 10.0  # seed 000: a drop of 10+ points between runs raises an alert


class ScoreboardDatabaseError(Exception):
    """The database file is missing, not SQLite, corrupt, or not a scoreboard database."""


def open_db(path: Path | str, *, create: bool = True) -> Database:
    """Open (and migrate) the scoreboard database at `path`, or explain clearly why not."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise ScoreboardDatabaseError(f"{path}: no such database (run `scoreboard run` to create it)")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise ScoreboardDatabaseError(f"{path}: is a directory, not a database file")
    elif path.stat().st_size > 0:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
        if header != SQLITE_HEADER:
            raise ScoreboardDatabaseError(f"{path}: not a SQLite database (the file does not start with the SQLite header)")
    try:
        conn = sqlite3.connect(str(path))
        conn.execute("PRAGMA busy_timeout = 10000")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            conn.close()
            raise ScoreboardDatabaseError(f"{path}: the database is corrupt: {'; '.join(problems[:3])}")
        db = Database(conn)
        _check_is_ours(db, path)
        if db.journal_mode != "wal":
            db.enable_wal()
        conn.execute("PRAGMA foreign_keys = ON")
        # In WAL mode NORMAL keeps the database consistent through a crash or power loss (only the
        # last commits can be lost); FULL would add an fsync per commit and per checkpoint.
        conn.execute("PRAGMA synchronous = NORMAL")
        migrations.apply(db)
    except sqlite3.DatabaseError as exc:
        raise ScoreboardDatabaseError(f"{path}: cannot be read as a SQLite database: {exc}") from exc
    return db


def _check_is_ours(db: Database, path: Path) -> None:
    tables = set(db.table_names())
    if not tables:
        return
    ours = "_sqlite_migrations" in tables and db.execute(
        "select count(*) from _sqlite_migrations where migration_set = ?", [MIGRATION_SET]
    ).fetchone()[0]
    if not ours:
        listed = ", ".join(sorted(tables)[:5])
        raise ScoreboardDatabaseError(
            f"{path}: a SQLite database, but not a scoreboard database (it holds tables: {listed}); "
            "refusing to write to it"
        )


# ---------------------------------------------------------------- encoding helpers


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


# ---------------------------------------------------------------- catalog


_JSON_COLUMNS = {"packages": "[]", "remotes": "[]", "metrics": "{}", "attributes": "{}", "source_categories": "{}", "provenance": "{}"}


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
    (an npm scope), else the local catalog's package.
    """
    package = json.loads(row["launch"]).get("package") if row.get("launch") else None
    if row.get("registry_name"):
        package = row["registry_name"]
    elif row.get("packages") and row["packages"] != "[]":
        package = json.loads(row["packages"])[0].get("identifier") or package
    found = classify(row["name"], row.get("description"), row.get("repository"), row.get("subpath"), package)
    return {"category": found.category, "platforms": dumps(list(found.platforms))}


def verified_publisher(publishers: dict[str, str], repo_key: str | None, registry_name: str | None) -> str | None:
    """Seed 000's verified publisher: a known organisation by GitHub owner or registry namespace."""
    matches = []
    if repo_key and repo_key.startswith("github:"):
        matches.append("github:" + repo_key.removeprefix("github:").split("/")[0])
    if registry_name:
        namespace = registry_name.lower().split("/")[0]
        matches.append(f"namespace:{namespace}")
        if namespace.startswith("io.github."):
            matches.append("github:" + namespace.removeprefix("io.github."))
    return next((publishers[m] for m in matches if m in publishers), None)


def catalog_keys(db: Database) -> dict[str, str]:
    """Every identity key the catalog has seen, and the server it belongs to."""
    return {row["key"]: row["server_id"] for row in db.query("select key, server_id from server_keys")}


def repo_aliases(db: Database) -> dict[str, str]:
    return {row["old_key"]: row["new_key"] for row in db.query("select old_key, new_key from repo_aliases")}


def save_aliases(db: Database, source: str, aliases: dict[str, str], now: datetime) -> None:
    with db.atomic():
        for old, new in sorted(aliases.items()):
            db.execute("insert into repo_aliases (old_key, new_key, source, first_seen_at) values (?, ?, ?, ?) "
                       "on conflict(old_key) do update set new_key = excluded.new_key, source = excluded.source", [old, new, source, iso(now)])


def record_problems(db: Database, source: str, problems: Iterable[str], now: datetime) -> None:
    with db.atomic():
        db["discovery_problems"].insert_all([{"source": source, "problem": p[:2000], "seen_at": iso(now)} for p in problems])


def _merge_fields(existing: dict[str, Any], fields: dict[str, Any], provenance: dict[str, str], ran: set[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Which new field values replace stored ones (seed 000: registry first, never blank a field).

    A stored value gives way when its source ran this time (it no longer says so), when the new
    value's source ranks at least as high, or when nothing was stored.
    """
    from pipeline.discover.merge import source_rank

    stored_from = json.loads(existing.get("provenance") or "{}")
    merged: dict[str, Any] = {}
    kept = dict(stored_from)
    for field, value in fields.items():
        if value in (None, "", "[]"):
            continue
        new_source, old_source = provenance.get(field), stored_from.get(field)
        if new_source is None:  # a default (stdio, no remote) never overrides what a source said
            replace = existing.get(field) in (None, "", "[]") or old_source is None
        else:
            replace = existing.get(field) in (None, "", "[]") or old_source is None or old_source in ran or source_rank(new_source) <= source_rank(old_source)
        if replace:
            merged[field] = value
            if new_source:
                kept[field] = new_source
    return merged, kept


def upsert_catalog(db: Database, entries: Iterable[CatalogEntry], ran: Iterable[str], now: datetime) -> dict[str, int]:
    """Merge entries into the catalog; a source in `ran` that no longer lists a server stops vouching for it.

    An entry keeps the id of any stored server that shares one of its keys, so renames and new
    spellings of a server update it instead of starting over. Fields a source leaves empty never
    blank out what is stored; external links, metrics and attributes accumulate. A server missing
    from every source is deactivated, never deleted. One transaction: all of it lands or none.
    """
    ran = set(ran)
    counts = {"new": 0, "updated": 0, "unchanged": 0, "deactivated": 0, "merged": 0}
    seen: dict[str, set[str]] = {}  # server id -> the sources that listed it this run
    stamp = iso(now)
    keys = catalog_keys(db)
    ids_with_keys = set(keys.values())
    publishers = {row["match"]: row["publisher"] for row in db.query("select match, publisher from verified_publishers")}
    with db.atomic():
        for entry in entries:
            owners = list(dict.fromkeys(keys[k] for k in entry.keys if k in keys))
            server_id = owners[0] if owners else entry.id
            existing = next(db.query("select * from servers where id = ?", [server_id]), None)
            if entry.derived_id and not owners and (server_id in ids_with_keys or existing is not None):
                server_id = with_hash(entry.id, entry.keys[0])  # another server already has this readable id
                existing = next(db.query("select * from servers where id = ?", [server_id]), None)
            for other in owners[1:]:  # two stored servers turned out to be one: fold the other into this one
                if other in seen:
                    continue
                db.execute("update server_keys set server_id = ? where server_id = ?", [server_id, other])
                keys.update({key: server_id for key, owner in keys.items() if owner == other})
                db["servers"].update(other, {"is_active": 0, "deactivated_at": stamp, "sources": "[]"})
                counts["merged"] += 1
            seen_sources = seen.setdefault(server_id, set())
            seen_sources.update(entry.sources)
            fields = {
                "name": entry.name,
                "description": entry.description,
                "repository": entry.repository,
                "subpath": entry.subpath,
                "homepage": entry.homepage,
                "transport": entry.transport,
                "remote_url": entry.remote_url,
                "launch": entry.launch.model_dump_json() if entry.launch else None,
                "env_vars": dumps([v.model_dump() for v in entry.env_vars]),
                "repo_key": entry.repo_key,
                "registry_name": entry.registry_name,
                "packages": dumps([p.model_dump(exclude_none=True) for p in entry.packages]),
                "remotes": dumps([r.model_dump() for r in entry.remotes]),
            }
            provenance = dict(entry.provenance)
            if "remotes" in provenance:
                provenance["transport"] = provenance["remotes"]
            if "repository" in provenance:
                provenance["repo_key"] = provenance["repository"]
            if entry.launch:
                provenance["launch"] = provenance["transport"] = "local"
            if existing is None:
                row = {
                    "id": server_id, **fields,
                    "external_links": dumps(entry.external_links),
                    "metrics": dumps(entry.metrics),
                    "attributes": dumps(entry.attributes),
                    "source_categories": dumps(entry.source_categories),
                    "provenance": dumps(provenance),
                    "sources": dumps(entry.sources),
                    "is_active": 1,
                    "first_seen_at": stamp,
                    "last_seen_at": stamp,
                    "deactivated_at": None,
                }
                row.update(classification_of(row))
                row["verified_publisher"] = verified_publisher(publishers, row["repo_key"], row["registry_name"])
                db["servers"].insert(row)
                counts["new"] += 1
            else:
                merged, kept = _merge_fields(existing, fields, provenance, ran)
                sources = sorted((set(json.loads(existing["sources"] or "[]")) - ran) | seen_sources)
                delisted = "delisted_at" in json.loads(existing.get("attributes") or "{}")
                merged.update(
                    external_links=dumps({**json.loads(existing["external_links"] or "{}"), **entry.external_links}),
                    metrics=dumps({**json.loads(existing.get("metrics") or "{}"), **entry.metrics}),
                    attributes=dumps({**json.loads(existing.get("attributes") or "{}"), **entry.attributes}),
                    source_categories=dumps({**json.loads(existing.get("source_categories") or "{}"), **entry.source_categories}),
                    provenance=dumps(kept),
                    sources=dumps(sources),
                    is_active=0 if delisted else 1,  # its owner asked to be taken off: sources listing it do not bring it back
                    deactivated_at=existing["deactivated_at"] if delisted else None,
                )
                merged.update(classification_of({**existing, **merged}))
                after = {**existing, **merged}
                merged["verified_publisher"] = verified_publisher(publishers, after.get("repo_key"), after.get("registry_name"))
                changed = any(existing.get(k) != v for k, v in merged.items())
                db["servers"].update(server_id, {**merged, "last_seen_at": stamp})
                counts["updated" if changed else "unchanged"] += 1
            for key in entry.keys:
                if keys.get(key) != server_id:
                    db.execute("insert into server_keys (key, server_id, first_seen_at) values (?, ?, ?) "
                               "on conflict(key) do update set server_id = excluded.server_id", [key, server_id, stamp])
                    keys[key] = server_id
                    ids_with_keys.add(server_id)
            for record in entry.records:
                payload = record.payload
                db["source_records"].insert(
                    {
                        "source": record.source,
                        "source_key": record.key,
                        "server_id": server_id,
                        "fetched_at": stamp,
                        "content_hash": content_hash(payload),
                        "payload": dumps(trim(payload)),
                    },
                    ignore=True,  # the same content from the same source is kept once, at first sight
                )
        for row in list(db.query("select id, sources from servers where is_active = 1")):
            sources = json.loads(row["sources"] or "[]")
            if row["id"] in seen or not set(sources) & ran:
                continue
            remaining = [s for s in sources if s not in ran]
            update: dict[str, Any] = {"sources": dumps(remaining)}
            if not remaining:
                update.update(is_active=0, deactivated_at=stamp)
                counts["deactivated"] += 1
            db["servers"].update(row["id"], update)
    return counts


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
    from pipeline.discover.downloads import pypi_name

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


def delist(db: Database, server_id: str, now: datetime) -> None:
    """Take a server off the scoreboard at its owner's request (`/.well-known/mcp-scoreboard` with "delist": true).

    Its rows stay (never deleted); discovery will not make it active again while the request stands.
    """
    with db.atomic():
        row = db["servers"].get(server_id)
        attributes = {**json.loads(row["attributes"] or "{}"), "delisted_at": iso(now)}
        db["servers"].update(server_id, {"is_active": 0, "deactivated_at": iso(now), "attributes": dumps(attributes)})


def active_servers(db: Database, ids: Iterable[str] | None = None) -> list[Server]:
    if ids is None:
        return [_server_from_row(row) for row in db.query("select * from servers where is_active = 1 order by id")]
    wanted = sorted(set(ids))
    servers: list[Server] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        servers += [_server_from_row(r) for r in db.query(f"select * from servers where is_active = 1 and id in ({marks}) order by id", chunk)]
    return sorted(servers, key=lambda s: s.id)


def all_servers(db: Database) -> list[Server]:
    return [_server_from_row(row) for row in db.query("select * from servers order by id")]


# ---------------------------------------------------------------- runs


def start_run(db: Database, stage: str, args: dict[str, Any], now: datetime) -> int:
    with db.atomic():
        # A run of this stage still marked running was killed before it could say so.
        db.execute("update runs set status = 'abandoned' where stage = ? and status = 'running'", [stage])
        table = db["runs"]
        table.insert(
            {
                "stage": stage,
                "started_at": iso(now),
                "status": "running",
                "engine_version": ENGINE_VERSION,
                "args": dumps(args),
            }
        )
        return int(table.last_pk)


def finish_run(db: Database, run_id: int, report: StageReport, now: datetime) -> None:
    with db.atomic():
        db["runs"].update(
            run_id,
            {
                "finished_at": iso(now),
                "status": "interrupted" if report.interrupted else "ok",
                "counts": dumps(report.counts),
                "failures": report.failures,
                "seconds": round(report.seconds, 3),
            },
        )


def fail_run(db: Database, run_id: int, error: str, now: datetime) -> None:
    """A stage stopped on an error (a damaged database, a full disk): say so, with the error."""
    with db.atomic():
        db["runs"].update(run_id, {"finished_at": iso(now), "status": "failed", "counts": dumps({"error": error[:2000]})})


# ---------------------------------------------------------------- evidence


def record_probe(db: Database, result: ProbeResult, run_id: int | None) -> int:
    """Store one probe's evidence, and its tool list as a snapshot, in one transaction."""
    evidence = trim(result.model_dump(mode="json"))
    with db.atomic():
        table = db["probe_runs"]
        table.insert(
            {
                "server_id": result.server_id,
                "run_id": run_id,
                "kind": result.kind,
                "started_at": iso(result.started_at),
                "duration_ms": round(result.duration_ms, 2),
                "transport": result.transport,
                "outcome": result.outcome.value,
                "detail": (result.detail or "")[:2000] or None,
                "era": result.era,
                "protocol_version": result.protocol_version,
                "handshake": result.handshake,
                "connect_ms": result.connect_ms,
                "ping_ms": result.ping_ms,
                "tool_count": None if result.tools is None else len(result.tools),
                "evidence": dumps(evidence),
                "engine_version": ENGINE_VERSION,
            }
        )
        probe_id = int(table.last_pk)
        _roll_up(db, result)
        if result.tools is not None:
            tools = evidence["tools"]
            db["tool_snapshots"].insert(
                {
                    "server_id": result.server_id,
                    "probe_run_id": probe_id,
                    "captured_at": iso(result.started_at),
                    "content_hash": content_hash(tools),
                    "tool_count": len(tools),
                    "tools": dumps(tools),
                }
            )
    return probe_id


def _roll_up(db: Database, result: ProbeResult) -> None:
    """Fold one probe into its server's daily rollup (same transaction as the raw row)."""
    day = result.started_at.astimezone(timezone.utc).date().isoformat()
    key = (result.server_id, day, result.kind)
    row = next(db.query("select runs, reachable, ok, latency_hist from probe_daily where server_id = ? and day = ? and kind = ?", list(key)), None)
    histogram = json.loads(row["latency_hist"]) if row else {}
    ok = result.outcome.value == "ok"
    if ok and result.connect_ms is not None:
        latency.add(histogram, result.connect_ms)
    db["probe_daily"].upsert(
        {
            "server_id": result.server_id,
            "day": day,
            "kind": result.kind,
            "runs": (row["runs"] if row else 0) + 1,
            "reachable": (row["reachable"] if row else 0) + int(result.outcome.value in latency.REACHED),
            "ok": (row["ok"] if row else 0) + int(ok),
            "latency_hist": dumps(histogram),
        },
        pk=("server_id", "day", "kind"),
    )


def latest_probe(db: Database, server_id: str, kinds: tuple[str, ...] = ("deep", "sandbox")) -> tuple[int, ProbeResult] | None:
    marks = ",".join("?" for _ in kinds)
    row = next(
        db.query(
            f"select id, evidence from probe_runs where server_id = ? and kind in ({marks}) "
            "order by started_at desc, id desc limit 1",
            [server_id, *kinds],
        ),
        None,
    )
    if row is None:
        return None
    return row["id"], ProbeResult.model_validate_json(row["evidence"])


def rate_limited_until(db: Database) -> dict[str, datetime]:
    """Servers whose latest probe was rate limited with a Retry-After, and until when they asked us to wait."""
    from datetime import timedelta

    rows = db.query(
        "select p.server_id, p.started_at, json_extract(p.evidence, '$.retry_after_s') wait from probe_runs p join "
        "(select server_id, max(id) id from probe_runs group by server_id) latest on p.id = latest.id where p.outcome = 'rate_limited'"
    )
    return {r["server_id"]: parse_iso(r["started_at"]) + timedelta(seconds=r["wait"]) for r in rows if r["wait"]}


def latest_probe_summaries(db: Database) -> dict[str, dict[str, Any]]:
    """The latest deep/sandbox probe of every server, from its columns only (no evidence parsed)."""
    return {
        row["server_id"]: row
        for row in db.query(
            "select p.server_id, p.id, p.era, p.protocol_version, p.tool_count, p.outcome from probe_runs p join "
            "(select server_id, max(id) id from probe_runs where kind in ('deep', 'sandbox') group by server_id) latest on p.id = latest.id"
        )
    }


def page_evidence_stamps(db: Database, since_day: str) -> dict[str, list[Any]]:
    """Per server, what changes when its page's other evidence changes: recent monitoring counts, judgements, tool snapshots,
    source records."""
    stamps: dict[str, list[Any]] = {}
    queries = [
        "select server_id, group_concat(day || ':' || runs) from probe_daily where kind = 'fast' and day >= ? group by server_id",
        "select server_id, max(judged_at) || ':' || count(*) from judgements group by server_id",
        "select server_id, max(id) from tool_snapshots group by server_id",
        "select server_id, max(id) from source_records group by server_id",
    ]
    for position, sql in enumerate(queries):
        for server_id, value in db.execute(sql, [since_day] if "?" in sql else []).fetchall():
            stamps.setdefault(server_id, [None] * len(queries))[position] = value
    return stamps


def latest_analysis_ids(db: Database) -> dict[str, int]:
    return {row["server_id"]: row["id"] for row in db.query("select server_id, max(id) id from analyses group by server_id")}


def record_analysis(db: Database, result: AnalysisResult) -> int:
    with db.atomic():
        table = db["analyses"]
        table.insert(
            {
                "server_id": result.server_id,
                "analyzed_at": iso(result.analyzed_at),
                "fetcher": result.fetcher,
                "source_ref": result.source_ref,
                "ok": int(result.ok),
                "error": result.error,
                "license": result.license,
                "spec_version": result.spec_version,
                "result": dumps(trim(result.model_dump(mode="json"))),
                "engine_version": ENGINE_VERSION,
            }
        )
        return int(table.last_pk)


def latest_analysis(db: Database, server_id: str) -> tuple[int, AnalysisResult] | None:
    row = next(
        db.query(
            "select id, result from analyses where server_id = ? order by analyzed_at desc, id desc limit 1",
            [server_id],
        ),
        None,
    )
    if row is None:
        return None
    return row["id"], AnalysisResult.model_validate_json(row["result"])


def save_judgements(db: Database, judgements: Iterable[Judgement]) -> int:
    rows = [
        {**j.model_dump(mode="json"), "offline": int(j.offline), "judged_at": iso(j.judged_at)}
        for j in judgements
    ]
    with db.atomic():
        # The unique index on (server, tool, model, tool hash) makes a re-judgement replace its row.
        db["judgements"].insert_all(rows, replace=True)
    return len(rows)


def judged_hashes(db: Database, server_id: str, model: str) -> set[tuple[str, str]]:
    return {
        (r["tool_name"], r["tool_hash"])
        for r in db.query("select tool_name, tool_hash from judgements where server_id = ? and model = ?", [server_id, model])
    }


# ---------------------------------------------------------------- scores


SCORE_COLUMNS = ("server_id", "rubric", "composite", "grade", "visibility", "dimension_indicator", "dimensions", "rules", "flags",
                 "badges", "rules_version", "engine_version", "scored_at", "extra")
HISTORY_COLUMNS = ("server_id", "rubric", "day", "composite", "grade", "visibility", "rules_version", "scored_at")


JSON_BYTES_COLUMNS = {"dimensions", "rules", "flags", "badges", "extra"}  # handed over as UTF-8 bytes, stored as TEXT


def _upsert_sql(table: str, columns: tuple[str, ...], keys: tuple[str, ...]) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
    values = ", ".join("cast(? as text)" if c in JSON_BYTES_COLUMNS else "?" for c in columns)
    return f"insert into {table} ({', '.join(columns)}) values ({values}) on conflict ({', '.join(keys)}) do update set {updates}"


class CardRow(NamedTuple):
    """A score card serialised for storage; made wherever the card was scored (a worker process too)."""

    score: tuple
    history: tuple
    server_id: str
    rubric: str
    composite: float | None


def _card_json(value: Any) -> bytes:
    # Score cards are our own dataclasses with a fixed field order, so they need no key sorting to be
    # stable; pydantic-core encodes their dicts (vars) several times faster than json.dumps. The
    # bytes cross from worker processes as they are (cheaper to pickle than text) and SQLite casts
    # them to TEXT on insert.
    return to_json(value)


@functools.lru_cache(maxsize=8)
def _stamps(scored_at: datetime) -> tuple[str, str]:
    """(UTC day, ISO time) of a scoring pass: every card of a pass shares them."""
    return scored_at.astimezone(timezone.utc).date().isoformat(), iso(scored_at)


def card_row(card: ScoreCard, now: datetime) -> CardRow:
    day, scored_at = _stamps(now)[0], _stamps(card.scored_at)[1]
    return CardRow(
        score=(
            card.server_id, card.rubric, card.composite, card.grade, card.visibility, card.dimension_indicator,
            _card_json([vars(d) for d in card.dimensions]), _card_json([vars(r) for r in card.rules]),
            _card_json([vars(f) for f in card.flags]), _card_json(card.badges),
            card.rules_version, ENGINE_VERSION, scored_at,
            _card_json({**card.extra, "uncapped": card.uncapped} if card.uncapped is not None else card.extra),
        ),
        history=(card.server_id, card.rubric, day, card.composite, card.grade, card.visibility, card.rules_version, scored_at),
        server_id=card.server_id,
        rubric=card.rubric,
        composite=card.composite,
    )


def write_scores(db: Database, cards: list[ScoreCard], now: datetime) -> dict[str, int]:
    """Store score cards, the day's history snapshot, and drop alerts, in one transaction, in bulk."""
    return write_card_rows(db, [card_row(c, now) for c in cards], now)


def write_card_rows(db: Database, rows: list[CardRow], now: datetime) -> dict[str, int]:
    counts = {"scored": len(rows), "alerts": 0}
    if not rows:
        return counts
    stamp = iso(now)
    previous: dict[tuple[str, str], float | None] = {}
    ids = sorted({r.server_id for r in rows})
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in db.execute(f"select server_id, rubric, composite from scores where server_id in ({marks})", chunk).fetchall():
            previous[(row[0], row[1])] = row[2]
    alerts = []
    for row in rows:
        old = previous.get((row.server_id, row.rubric))
        if old is not None and row.composite is not None and old - row.composite >= SCORE_DROP_ALERT:
            alerts.append((row.server_id, row.rubric, "score_drop", stamp, old, row.composite,
                           f"{row.rubric} score fell from {old:.1f} to {row.composite:.1f}"))
    with db.atomic():
        db.conn.executemany(_upsert_sql("scores", SCORE_COLUMNS, ("server_id", "rubric")), [r.score for r in rows])
        db.conn.executemany(_upsert_sql("score_history", HISTORY_COLUMNS, ("server_id", "rubric", "day")), [r.history for r in rows])
        db.conn.executemany(
            "insert into alerts (server_id, rubric, kind, created_at, old_value, new_value, message) values (?, ?, ?, ?, ?, ?, ?)", alerts
        )
    counts["alerts"] = len(alerts)
    return counts


def database_path(db: Database) -> str:
    return db.execute("pragma database_list").fetchone()[2]


SCORE_SUMMARY = "server_id, rubric, composite, grade, visibility, dimension_indicator, rules_version, scored_at, extra, flags"


def load_scores(db: Database, rubric: str) -> dict[str, dict[str, Any]]:
    """Every server's card under `rubric`, without its per-rule detail (what leaderboards need)."""
    return {r["server_id"]: r for r in db.query(f"select {SCORE_SUMMARY} from scores where rubric = ?", [rubric])}


def score_cards(db: Database, server_ids: list[str]) -> dict[str, dict[str, dict[str, Any] | None]]:
    """Full score rows (rules included) of some servers: {server_id: {rubric: row}}."""
    cards: dict[str, dict[str, dict[str, Any] | None]] = {sid: {} for sid in server_ids}
    for start in range(0, len(server_ids), 500):
        chunk = server_ids[start : start + 500]
        for row in db.query(f"select * from scores where server_id in ({','.join('?' for _ in chunk)})", chunk):
            cards[row["server_id"]][row["rubric"]] = row
    return cards


def score_changes(db: Database, rubric: str, since_day: str) -> list[dict[str, Any]]:
    """Day-to-day composite changes since `since_day`, newest first (each server against its previous day)."""
    return list(
        db.query(
            """
            select server_id, day, previous_day, previous, composite, grade from (
              select server_id, day, composite, grade,
                     lag(day) over w as previous_day, lag(composite) over w as previous
              from score_history where rubric = ? window w as (partition by server_id order by day)
            )
            where previous_day is not null and day >= ? and coalesce(previous, -1) != coalesce(composite, -1)
            order by day desc, server_id
            """,
            [rubric, since_day],
        )
    )


def snapshot(source: str | Path, target: Path) -> None:
    """A consistent copy of the whole database, for download.

    SQLite's online backup on connections of its own, so it can run in a thread beside the build (the
    copy releases the GIL); written under a temporary name and renamed, so a reader never sees half a
    file; left in rollback-journal mode, so the download opens anywhere, read-only or in the browser.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(partial)
        try:
            reader.backup(copy)
            copy.execute("pragma journal_mode = delete")
        finally:
            copy.close()
    finally:
        reader.close()
    os.replace(partial, target)


# ---------------------------------------------------------------- server page evidence


def page_evidence(db: Database, server_ids: list[str], *, rubric: str, since_day: str, since: datetime,
                  changes: int = 10) -> dict[str, dict[str, list[Any]]]:
    """What server pages show beyond their cards and latest probe, for many servers in one query per kind:
    score history under `rubric`, judgements, the last `changes` changes of the tool surface (each capture whose
    hash differs from the one before, with both tool lists), fast-probe rollups since `since_day`, and the raw
    fast probes since `since` (the 24-hour figures need hours, not days)."""
    found: dict[str, dict[str, list[Any]]] = {
        sid: {"history": [], "judgements": [], "changes": [], "daily": [], "last_day": [], "records": []} for sid in server_ids
    }
    for start in range(0, len(server_ids), 500):
        chunk = server_ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        for r in db.query(f"select server_id, day, composite, grade from score_history where rubric = ? and server_id in ({marks}) "
                          "order by server_id, day", [rubric, *chunk]):
            found[r.pop("server_id")]["history"].append(r)
        for r in db.query(f"select * from judgements where server_id in ({marks}) order by server_id, tool_name, model", chunk):
            found[r["server_id"]]["judgements"].append(Judgement.model_validate({k: v for k, v in r.items() if k != "id"}))
        for r in db.query(
            f"""
            select server_id, captured_at, tools, previous_tools from (
              select *, row_number() over (partition by server_id order by captured_at desc) as newest from (
                select server_id, captured_at, content_hash, tools, lag(content_hash) over w as previous_hash,
                       lag(tools) over w as previous_tools
                from tool_snapshots where server_id in ({marks}) window w as (partition by server_id order by captured_at, id)
              ) where previous_hash is not null and previous_hash != content_hash
            ) where newest <= ? order by server_id, captured_at desc
            """,
            [*chunk, changes],
        ):
            found[r["server_id"]]["changes"].append(
                {"captured_at": r["captured_at"], "tools": from_json(r["tools"]), "previous": from_json(r["previous_tools"])})
        for r in db.query(f"select server_id, day, runs, reachable, ok, latency_hist from probe_daily where kind = 'fast' and day >= ? "
                          f"and server_id in ({marks}) order by server_id, day", [since_day, *chunk]):
            found[r.pop("server_id")]["daily"].append({**r, "latency_hist": from_json(r["latency_hist"])})
        for r in db.query(f"select server_id, outcome, connect_ms from probe_runs where kind = 'fast' and started_at >= ? "
                          f"and server_id in ({marks})", [iso(since), *chunk]):
            found[r.pop("server_id")]["last_day"].append(r)
        for r in db.query(f"select server_id, source, min(fetched_at) as first_seen, max(fetched_at) as last_changed, count(*) as versions "
                          f"from source_records where server_id in ({marks}) group by server_id, source order by server_id, source", chunk):
            found[r.pop("server_id")]["records"].append(r)
    return found


# ---- build reads (one-house-build)


def latest_probes(db: Database, server_ids: list[str], kinds: tuple[str, ...] = ("deep", "sandbox")) -> dict[str, tuple[int, ProbeResult]]:
    """`latest_probe` of many servers in one query."""
    rows = db.execute(
        f"select p.server_id, p.id, p.evidence from json_each(?) s join probe_runs p on p.id = (select q.id from probe_runs q "
        f"where q.server_id = s.value and q.kind in ({','.join('?' for _ in kinds)}) order by q.started_at desc, q.id desc limit 1)",
        [dumps(server_ids), *kinds],
    )
    return {server_id: (probe_id, ProbeResult.model_validate_json(evidence)) for server_id, probe_id, evidence in rows}


def latest_analyses(db: Database, server_ids: list[str]) -> dict[str, tuple[int, AnalysisResult]]:
    """`latest_analysis` of many servers in one query."""
    rows = db.execute(
        "select a.server_id, a.id, a.result from json_each(?) s join analyses a on a.id = (select b.id from analyses b "
        "where b.server_id = s.value order by b.analyzed_at desc, b.id desc limit 1)",
        [dumps(server_ids)],
    )
    return {server_id: (analysis_id, AnalysisResult.model_validate_json(result)) for server_id, analysis_id, result in rows}
