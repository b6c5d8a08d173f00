"""Schema migrations for the evidence database. Append new migrations; never edit applied ones.

docs/schema.md documents every table; tests/test_schema_doc.py fails when the two drift.
"""

from __future__ import annotations

import json

from sqlite_utils import Database
from sqlite_utils.db import Table
from sqlite_utils.migrations import Migrations

from pipeline.store.catalog import classification_of

MIGRATION_SET = "mcp-scoreboard"

migrations = Migrations(MIGRATION_SET)


def _table(db: Database, name: str) -> Table:
    return db.table(name)  # type: ignore[return-value]


@migrations()
def m001_evidence_schema(db: Database) -> None:
    _table(db, "runs").create(
        {
            "id": int,
            "stage": str,
            "started_at": str,
            "finished_at": str,
            "status": str,
            "counts": str,
            "failures": int,
            "seconds": float,
            "engine_version": str,
            "args": str,
        },
        pk="id",
        not_null={"stage", "started_at", "status", "engine_version"},
        defaults={"failures": 0},
    )
    _table(db, "runs").create_index(["stage", "started_at"])
    _table(db, "servers").create(
        {
            "id": str,
            "name": str,
            "description": str,
            "repository": str,
            "subpath": str,
            "homepage": str,
            "transport": str,
            "remote_url": str,
            "launch": str,
            "env_vars": str,
            "external_links": str,
            "sources": str,
            "is_active": int,
            "first_seen_at": str,
            "last_seen_at": str,
            "deactivated_at": str,
        },
        pk="id",
        not_null={"name", "transport", "is_active", "first_seen_at", "last_seen_at"},
        defaults={"is_active": 1, "env_vars": "[]", "external_links": "{}", "sources": "[]"},
    )
    _table(db, "source_records").create(
        {
            "id": int,
            "source": str,
            "source_key": str,
            "server_id": str,
            "fetched_at": str,
            "content_hash": str,
            "payload": str,
        },
        pk="id",
        not_null={"source", "source_key", "server_id", "fetched_at", "content_hash", "payload"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    _table(db, "source_records").create_index(["source", "source_key", "content_hash"], unique=True)
    _table(db, "source_records").create_index(["server_id"])
    _table(db, "analyses").create(
        {
            "id": int,
            "server_id": str,
            "analyzed_at": str,
            "fetcher": str,
            "source_ref": str,
            "ok": int,
            "error": str,
            "license": str,
            "spec_version": str,
            "result": str,
            "engine_version": str,
        },
        pk="id",
        not_null={"server_id", "analyzed_at", "fetcher", "ok", "result", "engine_version"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    _table(db, "analyses").create_index(["server_id", "analyzed_at"])
    _table(db, "probe_runs").create(
        {
            "id": int,
            "server_id": str,
            "run_id": int,
            "kind": str,
            "started_at": str,
            "duration_ms": float,
            "transport": str,
            "outcome": str,
            "detail": str,
            "era": str,
            "protocol_version": str,
            "handshake": str,
            "connect_ms": float,
            "ping_ms": float,
            "tool_count": int,
            "evidence": str,
            "engine_version": str,
        },
        pk="id",
        not_null={"server_id", "kind", "started_at", "duration_ms", "transport", "outcome", "evidence", "engine_version"},
        foreign_keys=[("server_id", "servers", "id"), ("run_id", "runs", "id")],
    )
    _table(db, "probe_runs").create_index(["server_id", "kind", "started_at"])
    _table(db, "tool_snapshots").create(
        {
            "id": int,
            "server_id": str,
            "probe_run_id": int,
            "captured_at": str,
            "content_hash": str,
            "tool_count": int,
            "tools": str,
        },
        pk="id",
        not_null={"server_id", "captured_at", "content_hash", "tool_count", "tools"},
        foreign_keys=[("server_id", "servers", "id"), ("probe_run_id", "probe_runs", "id")],
    )
    _table(db, "tool_snapshots").create_index(["server_id", "captured_at"])
    _table(db, "judgements").create(
        {
            "id": int,
            "server_id": str,
            "tool_name": str,
            "tool_hash": str,
            "provider": str,
            "model": str,
            "offline": int,
            "judged_at": str,
            "clarity": float,
            "input_completeness": float,
            "confidence": float,
            "rationale": str,
        },
        pk="id",
        not_null={"server_id", "tool_name", "tool_hash", "provider", "model", "offline", "judged_at"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    _table(db, "judgements").create_index(["server_id", "tool_name", "model", "tool_hash"], unique=True)
    _table(db, "scores").create(
        {
            "server_id": str,
            "rubric": str,
            "composite": float,
            "grade": str,
            "visibility": str,
            "dimension_indicator": str,
            "dimensions": str,
            "rules": str,
            "flags": str,
            "badges": str,
            "rules_version": str,
            "engine_version": str,
            "scored_at": str,
        },
        pk=("server_id", "rubric"),
        not_null={"server_id", "rubric", "visibility", "dimensions", "rules", "rules_version", "engine_version", "scored_at"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    _table(db, "score_history").create(
        {
            "server_id": str,
            "rubric": str,
            "day": str,
            "composite": float,
            "grade": str,
            "visibility": str,
            "rules_version": str,
            "scored_at": str,
        },
        pk=("server_id", "rubric", "day"),
        not_null={"server_id", "rubric", "day", "visibility", "rules_version", "scored_at"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    _table(db, "alerts").create(
        {
            "id": int,
            "server_id": str,
            "rubric": str,
            "kind": str,
            "created_at": str,
            "old_value": float,
            "new_value": float,
            "message": str,
        },
        pk="id",
        not_null={"server_id", "kind", "created_at", "message"},
        foreign_keys=[("server_id", "servers", "id")],
    )


@migrations()
def m002_probe_daily(db: Database) -> None:
    """Per-server, per-day rollups of probe runs, so 30 days of 5-minute probes stay small."""
    _table(db, "probe_daily").create(
        {
            "server_id": str,
            "day": str,
            "kind": str,
            "runs": int,
            "reachable": int,
            "ok": int,
            "latency_hist": str,
        },
        pk=("server_id", "day", "kind"),
        not_null={"server_id", "day", "kind", "runs", "reachable", "ok", "latency_hist"},
        foreign_keys=[("server_id", "servers", "id")],
    )


@migrations()
def m003_score_extra(db: Database) -> None:
    """Rubric-specific figures beside the composite: rank score, status chip, spec readiness, trend, uncapped composite."""
    _table(db, "scores").add_column("extra", str, not_null_default="{}")


@migrations()
def m004_classification(db: Database) -> None:
    """Seed 000's category and target platforms per server, for leaderboard filters and Datasette."""
    # The catalog keeps them current; this fills existing rows once.
    servers = _table(db, "servers")
    servers.add_column("category", str, not_null_default="Other")
    servers.add_column("platforms", str, not_null_default="[]")
    for row in list(db.query("select id, name, description, repository, subpath, launch from servers")):
        servers.update(row["id"], classification_of(row))
    servers.create_index(["category"])


# Seed 000's verified publishers: known organisations, matched by GitHub owner or registry
# namespace. A table, so the list can change without a code deploy: edit `verified_publishers` and
# the next discovery run applies it.
VERIFIED_PUBLISHERS = {
    "Anthropic": ["github:anthropics", "github:modelcontextprotocol", "namespace:com.anthropic"],
    "OpenAI": ["github:openai", "namespace:com.openai"],
    "Microsoft": ["github:microsoft", "github:azure", "github:azure-samples", "github:microsoftdocs", "namespace:com.microsoft"],
    "Google": ["github:google", "github:googleapis", "github:google-gemini", "github:googlecloudplatform", "namespace:com.google"],
    "Cloudflare": ["github:cloudflare", "namespace:com.cloudflare"],
    "Stripe": ["github:stripe", "namespace:com.stripe"],
    "Supabase": ["github:supabase", "github:supabase-community", "namespace:com.supabase"],
    "GitHub": ["github:github", "namespace:com.github"],
    "AWS": ["github:awslabs", "github:aws", "github:aws-samples", "namespace:com.amazonaws", "namespace:com.amazon"],
    "Docker": ["github:docker", "namespace:com.docker"],
    "HashiCorp": ["github:hashicorp", "namespace:com.hashicorp"],
    "Grafana": ["github:grafana", "namespace:com.grafana"],
    "MongoDB": ["github:mongodb", "github:mongodb-js", "namespace:com.mongodb"],
    "Elastic": ["github:elastic", "namespace:co.elastic"],
    "Redis": ["github:redis", "namespace:io.redis"],
    "Neon": ["github:neondatabase", "github:neondatabase-labs", "namespace:tech.neon"],
    "Atlassian": ["github:atlassian", "namespace:com.atlassian"],
    "Notion": ["github:makenotion", "namespace:com.notion"],
    "Vercel": ["github:vercel", "namespace:com.vercel"],
    "Sentry": ["github:getsentry", "namespace:io.sentry"],
    "Brave": ["github:brave", "namespace:com.brave"],
    "Exa": ["github:exa-labs", "namespace:ai.exa"],
    "Figma": ["github:figma", "namespace:com.figma"],
    "Shopify": ["github:shopify", "namespace:com.shopify"],
    "Twilio": ["github:twilio", "github:twilio-labs", "namespace:com.twilio"],
    "Snowflake": ["github:snowflake-labs", "namespace:com.snowflake"],
    "Datadog": ["github:datadog", "namespace:com.datadoghq"],
    "PayPal": ["github:paypal", "namespace:com.paypal"],
    "JetBrains": ["github:jetbrains", "namespace:com.jetbrains"],
    "Salesforce": ["github:salesforce", "github:salesforcecli", "namespace:com.salesforce"],
    "Hugging Face": ["github:huggingface", "namespace:co.huggingface"],
    "Mistral AI": ["github:mistralai", "namespace:ai.mistral"],
}


@migrations()
def m005_discovery(db: Database) -> None:
    """Discovery from eight sources: identity keys, renames, merged metadata with provenance, verified publishers."""
    servers = _table(db, "servers")
    for column in ("repo_key", "registry_name", "verified_publisher"):
        servers.add_column(column, str)
    for column, empty in (("packages", "[]"), ("remotes", "[]"), ("metrics", "{}"), ("attributes", "{}"), ("source_categories", "{}"),
                          ("provenance", "{}")):
        servers.add_column(column, str, not_null_default=empty)
    servers.create_index(["repo_key"])
    _table(db, "server_keys").create({"key": str, "server_id": str, "first_seen_at": str}, pk="key", not_null={"server_id", "first_seen_at"},
                                      foreign_keys=[("server_id", "servers", "id")])
    _table(db, "server_keys").create_index(["server_id"])
    for row in list(db.query("select id, sources, first_seen_at from servers")):
        if "local" in json.loads(row["sources"] or "[]"):
            _table(db, "server_keys").insert({"key": f"local:{row['id']}", "server_id": row["id"], "first_seen_at": row["first_seen_at"]})
    _table(db, "repo_aliases").create({"old_key": str, "new_key": str, "source": str, "first_seen_at": str}, pk="old_key",
                                       not_null={"new_key", "source", "first_seen_at"})
    _table(db, "verified_publishers").create({"match": str, "publisher": str}, pk="match", not_null={"publisher"})
    _table(db, "verified_publishers").insert_all(
        [{"match": match, "publisher": publisher} for publisher, matches in VERIFIED_PUBLISHERS.items() for match in matches]
    )
    _table(db, "discovery_problems").create({"id": int, "source": str, "problem": str, "seen_at": str}, pk="id",
                                            not_null={"source", "problem", "seen_at"})
    _table(db, "discovery_problems").create_index(["seen_at"])


@migrations()
def m006_attempt_history(db: Database) -> None:
    """Failed attempts since a server last answered are counted from its runs (pipeline.outcomes): an index that holds
    what the count reads, so a server probed every five minutes costs an index scan, not its rows."""
    _table(db, "probe_runs").create_index(["server_id", "started_at", "outcome", "kind"], index_name="probe_runs_attempts")


@migrations()
def m007_fleet_operations(db: Database) -> None:
    """When each stage last examined each server (an unchanged source or tool list writes no evidence, yet was looked at:
    the next run starts with the oldest), and the priority rescores asked for (at most one per server per 24 hours)."""
    _table(db, "examined").create({"server_id": str, "stage": str, "examined_at": str}, pk=("server_id", "stage"),
                                  not_null={"server_id", "stage", "examined_at"}, foreign_keys=[("server_id", "servers", "id")])
    _table(db, "examined").create_index(["stage", "examined_at"])
    _table(db, "rescore_requests").create({"id": int, "server_id": str, "requested_at": str, "requested_by": str, "status": str}, pk="id",
                                          not_null={"server_id", "requested_at", "status"}, foreign_keys=[("server_id", "servers", "id")])
    _table(db, "rescore_requests").create_index(["server_id", "requested_at"])


@migrations()
def m008_shard_merges(db: Database) -> None:
    """Shard databases folded into this one (`scoreboard merge`), so a shard given twice is merged once."""
    _table(db, "shard_merges").create(
        {"shard_id": str, "stage": str, "shard": str, "base": str, "engine_version": str, "created_at": str, "merged_at": str, "rows": str},
        pk="shard_id",
        not_null={"stage", "shard", "base", "engine_version", "created_at", "merged_at", "rows"},
    )
    _table(db, "shard_merges").create_index(["stage", "base", "shard"], unique=True)


@migrations()
def m009_folded_fast_failures(db: Database) -> None:
    """Raw fast runs are kept 48 hours; the failures among those pruned that still count against a server (after it last
    answered) are folded per day, so the failed attempts the score counts stay what they were (deviation 88)."""
    _table(db, "fast_failures").create({"server_id": str, "day": str, "failed": int, "first_at": str, "last_at": str}, pk=("server_id", "day"),
                                       not_null={"server_id", "day", "failed", "first_at", "last_at"},
                                       foreign_keys=[("server_id", "servers", "id")])
    _table(db, "probe_runs").create_index(["kind", "started_at"])  # what the monitor prunes: fast runs past the window


# The `scores` view: every card in its full JSON shape, from the compact rows and the reference tables (migration 10).
SCORES_VIEW = """
create view scores as
select c.server_id, c.rubric, c.composite, c.grade, c.visibility, c.dimension_indicator,
  (select json_group_array(json(x)) from (
     select json_object('name', d.name, 'label', d.label, 'status', e.value ->> 1, 'score', e.value -> 2, 'weight', e.value -> 3,
                        'reason', e.value ->> 4, 'optional', json(iif(d.optional, 'true', 'false'))) as x
     from json_each(c.dimensions) e join score_dimensions d on d.id = e.value ->> 0 order by e.key)) as dimensions,
  (select json_group_array(json(x)) from (
     select json_object('rule', r.rule, 'dimension', r.dimension, 'points', e.value -> 1,
                        'max_points', iif(r.max_points = cast(r.max_points as integer), cast(r.max_points as integer), r.max_points),
                        'measured', json(iif(e.value ->> 2, 'true', 'false')), 'reason', e.value ->> 3, 'how_to_gain', e.value ->> 4,
                        'evidence', e.value ->> 5) as x
     from json_each(c.rules) e join score_rules r on r.id = e.value ->> 0 order by e.key)) as rules,
  c.flags, c.badges, c.rules_version, c.engine_version, c.scored_at, c.extra
from score_cards c
"""

# A row per rule outcome, for queries ("which servers miss this rule, and why") without JSON functions.
RULE_OUTCOMES_VIEW = """
create view rule_outcomes as
select c.server_id, c.rubric, r.dimension, r.rule, e.value ->> 1 as points, r.max_points, e.value ->> 2 as measured,
       e.value ->> 3 as reason, e.value ->> 4 as how_to_gain, e.value ->> 5 as evidence, e.key as position
from score_cards c, json_each(c.rules) e join score_rules r on r.id = e.value ->> 0
"""


@migrations()
def m010_compact_score_outcomes(db: Database) -> None:
    """Score outcomes stored compactly (deviation 104): what each rule and dimension is, once per rubric in a reference table;
    per card, only what each concluded. Existing cards are converted without loss; `scores` becomes a view of the full cards."""
    from pipeline.store.scores import OutcomeRefs

    _table(db, "score_rules").create({"id": int, "rubric": str, "rule": str, "dimension": str, "max_points": float}, pk="id",
                                     not_null={"rubric", "rule", "dimension", "max_points"})
    _table(db, "score_rules").create_index(["rubric", "rule", "dimension", "max_points"], unique=True)
    _table(db, "score_dimensions").create({"id": int, "rubric": str, "name": str, "label": str, "optional": int}, pk="id",
                                          not_null={"rubric", "name", "label", "optional"})
    _table(db, "score_dimensions").create_index(["rubric", "name", "label", "optional"], unique=True)
    columns = {c.name: c.type for c in _table(db, "scores").columns}
    _table(db, "score_cards").create(
        {name: {"TEXT": str, "REAL": float, "INTEGER": int}[kind] for name, kind in columns.items()}, pk=("server_id", "rubric"),
        not_null={"server_id", "rubric", "visibility", "dimensions", "rules", "rules_version", "engine_version", "scored_at", "extra"},
        foreign_keys=[("server_id", "servers", "id")],
    )
    refs = OutcomeRefs(db)
    names = list(columns)
    rows = db.execute(f"select {', '.join(names)} from scores order by server_id, rubric")
    marks = ", ".join("?" for _ in names)
    while batch := rows.fetchmany(1000):
        converted = []
        for row in batch:
            card = dict(zip(names, row))
            card["dimensions"], card["rules"] = (v.decode() for v in refs.compact(card["rubric"], json.loads(card["dimensions"]),
                                                                                   json.loads(card["rules"])))
            converted.append(tuple(card[n] for n in names))
        db.conn.executemany(f"insert into score_cards ({', '.join(names)}) values ({marks})", converted)
    db.execute("drop table scores")
    db.execute(SCORES_VIEW)
    db.execute(RULE_OUTCOMES_VIEW)


@migrations()
def m011_snapshot_probe_index(db: Database) -> None:
    """Deleting a probe run checks the tool snapshots that point at it: without this index each deleted run reads the whole
    table (the 48-hour prune of fast runs took 319 s for 5,179 runs of a 5,000-server fleet; 1 s with it)."""
    _table(db, "tool_snapshots").create_index(["probe_run_id"])


# A server's tool surface over time: one row per capture whose list differs from the server's capture before it (migration 12).
TOOL_SNAPSHOTS_VIEW = """
create view tool_snapshots as
select c.id as probe_run_id, c.server_id, c.started_at as captured_at, c.tools_hash as content_hash, l.tool_count, l.tools
from (select id, server_id, started_at, tools_hash, lag(tools_hash) over (partition by server_id order by started_at, id) as previous
      from probe_runs where tools_hash is not null) c
join tool_lists l on l.server_id = c.server_id and l.content_hash = c.tools_hash
where c.previous is null or c.previous != c.tools_hash
"""


@migrations()
def m012_tool_lists_once(db: Database) -> None:
    """A tool list is stored once per server and content (deviation 110): a probe run names its list by hash instead of
    carrying it in its evidence, and `tool_snapshots`, which held every capture, becomes a view of the captures that changed
    the list. Existing runs are linked to their snapshot's list (a snapshot no run points at, to the run of its server that
    started when it was captured) and lose the copy in their evidence."""
    _table(db, "tool_lists").create({"server_id": str, "content_hash": str, "tool_count": int, "tools": str}, pk=("server_id", "content_hash"),
                                    not_null={"server_id", "content_hash", "tool_count", "tools"}, foreign_keys=[("server_id", "servers", "id")])
    db.execute("insert into tool_lists select server_id, content_hash, tool_count, tools from tool_snapshots where id in "
               "(select min(id) from tool_snapshots group by server_id, content_hash)")
    db.execute("alter table probe_runs add column tools_hash text")
    db.execute("update probe_runs set tools_hash = s.content_hash, evidence = json_remove(probe_runs.evidence, '$.tools') "
               "from tool_snapshots s where s.probe_run_id = probe_runs.id")
    db.execute("update probe_runs set tools_hash = s.content_hash, evidence = json_remove(probe_runs.evidence, '$.tools') "
               "from tool_snapshots s where s.probe_run_id is null and s.server_id = probe_runs.server_id "
               "and s.captured_at = probe_runs.started_at and probe_runs.tools_hash is null")
    db.execute("drop table tool_snapshots")
    # What the view reads: each server's runs that listed tools, in order, from the index alone.
    db.execute("create index probe_runs_tools on probe_runs (server_id, started_at, tools_hash) where tools_hash is not null")
    db.execute(TOOL_SNAPSHOTS_VIEW)
@migrations()
def m013_judgement_panel(db: Database) -> None:
    """The judge panel's judgements (issue 19): each records the prompt version it answered, its tokens and cost, the judge run
    that made it (a `runs` row), whether the judge reported the tool text instructing its reader (`directive`), and whether it
    was retired (its model left the panel, or the same model read the same text again under a newer prompt: kept as history,
    never counted; deviation 117). A judgement is one per (server, tool, model, tool text, prompt version)."""
    judgements = _table(db, "judgements")
    for column, kind in (("input_tokens", int), ("output_tokens", int), ("cost_usd", float), ("directive", int)):
        judgements.add_column(column, kind)
    judgements.add_column("prompt_version", str, not_null_default="unversioned")
    judgements.add_column("retired", int, not_null_default=0)
    db.execute("update judgements set prompt_version = 'offline' where offline = 1")
    judgements.add_column("run_id", int)
    judgements.transform(add_foreign_keys=[("run_id", "runs", "id")])
    for index in judgements.indexes:
        if index.unique:
            db.execute(f"drop index [{index.name}]")
    judgements.create_index(["server_id", "tool_name", "model", "tool_hash", "prompt_version"], unique=True)
    judgements.create_index(["run_id"])
@migrations()
def m014_llm_answers(db: Database) -> None:
    """The answers of static analysis' LLM passes, keyed by (server, pass, model, prompt version, input hash): an unchanged
    input is never sent again (deviation 130)."""
    _table(db, "llm_answers").create(
        {"server_id": str, "pass_name": str, "model": str, "prompt_version": str, "input_hash": str, "answer": str, "input_tokens": int,
         "output_tokens": int, "cost_usd": float, "created_at": str},
        pk=("server_id", "pass_name", "model", "prompt_version", "input_hash"),
        not_null={"server_id", "pass_name", "model", "prompt_version", "input_hash", "answer", "input_tokens", "output_tokens", "created_at"},
        foreign_keys=[("server_id", "servers", "id")],
    )


@migrations()
def m015_model_transitions(db: Database) -> None:
    """Each `scoreboard judge-transition` decision: the readings of a sample of servers by the old and the new judge model,
    the aggregate shift and whether the switch was accepted (seed 000's Model Transition Policy; deviation 126)."""
    _table(db, "model_transitions").create(
        {"id": int, "decided_at": str, "from_judge": str, "to_judge": str, "prompt_version": str, "seed": int, "sampled": int,
         "compared": int, "mean_from": float, "mean_to": float, "shift": float, "quantiles": str, "accepted": int, "reason": str,
         "input_tokens": int, "output_tokens": int, "cost_usd": float, "servers": str},
        pk="id",
        not_null={"decided_at", "from_judge", "to_judge", "prompt_version", "seed", "sampled", "compared", "quantiles", "accepted",
                  "reason", "input_tokens", "output_tokens", "servers"},
    )
    _table(db, "model_transitions").create_index(["decided_at", "from_judge", "to_judge"], unique=True)
