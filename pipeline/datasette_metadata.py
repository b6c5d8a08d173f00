"""Datasette metadata: table and column documentation (from docs/schema.md) and canned queries, keyed to the name each
Datasette gives the database. Core, not render's: the build writes it beside the site's copy of the database, a publish
beside each snapshot, and `serve` hands it to the Datasette it starts.

Datasette runs a canned query with every parameter the URL leaves out as an empty string, so each query reads an empty
parameter as its default: a number its stated default, a filter no filter."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from pipeline.assets import SCHEMA_DOC

CANNED_QUERIES = {
    "top_servers": {
        "title": "Top servers",
        "description": "The headline leaderboard: visibility tier, then composite score; the first 100 unless limit says how many.",
        "sql": """select s.id, s.name, sc.composite, sc.grade, sc.visibility, sc.dimension_indicator, s.transport
from scores sc join servers s on s.id = sc.server_id
where sc.rubric = 'scoreboard' and s.is_active = 1
order by case sc.visibility when 'complete' then 0 when 'verified' then 1 when 'assessed' then 2 when 'limited' then 3 else 4 end,
         sc.composite desc
limit cast(coalesce(nullif(:limit, ''), 100) as integer)""",
        "params": ["limit"],
    },
    "top_servers_by_category": {
        "title": "Top servers per category",
        "description": "The best headline scores in each of the leaderboard's categories: 10 per category unless per_category says how many.",
        "sql": """select category, rank, id, name, composite, grade, transport from (
  select s.category, s.id, s.name, sc.composite, sc.grade, s.transport,
         row_number() over (partition by s.category order by sc.composite desc, s.id) as rank
  from scores sc join servers s on s.id = sc.server_id
  where sc.rubric = 'scoreboard' and s.is_active = 1 and sc.composite is not null
) where rank <= cast(coalesce(nullif(:per_category, ''), 10) as integer) order by category, rank""",
        "params": ["per_category"],
    },
    "top_servers_by_transport": {
        "title": "Top servers per transport",
        "description": "The best headline score for each transport (stdio, Streamable HTTP, SSE).",
        "sql": """select s.transport, s.id, s.name, max(sc.composite) as composite
from scores sc join servers s on s.id = sc.server_id
where sc.rubric = 'scoreboard' and s.is_active = 1 and sc.composite is not null
group by s.transport order by composite desc""",
    },
    "recent_score_drops": {
        "title": "Recent score drops",
        "description": "Alerts raised when a score fell by 10 points or more between runs.",
        "sql": "select created_at, server_id, rubric, old_value, new_value, message from alerts order by created_at desc limit 200",
    },
    "critical_flags": {
        "title": "Servers with critical flags",
        "description": "Red flags that cap the composite score (dead or archived repository, staging endpoint, prompt injection, exfiltration risk).",
        "sql": """select sc.server_id, json_extract(f.value, '$.label') as flag, json_extract(f.value, '$.reason') as reason,
       json_extract(f.value, '$.cap') as cap, sc.composite
from scores sc, json_each(sc.flags) f
where sc.rubric = 'scoreboard' and json_extract(f.value, '$.severity') = 'critical'
order by sc.server_id""",
    },
    "tools_by_server": {
        "title": "Tools by server",
        "description": "Every tool of each server's latest capture, with its description and read-only hint; "
                       "only the servers whose id starts with server_id when it is given.",
        "sql": """select t.server_id, json_extract(tool.value, '$.name') as tool, json_extract(tool.value, '$.description') as description,
       json_extract(tool.value, '$.annotations.readOnlyHint') as read_only
from probe_runs p join tool_lists t on t.server_id = p.server_id and t.content_hash = p.tools_hash, json_each(t.tools) tool
where p.id in (select max(id) from probe_runs where tools_hash is not null group by server_id) and p.server_id like :server_id || '%'
order by t.server_id, tool""",
        "params": ["server_id"],
    },
    "failing_rule": {
        "title": "Servers failing a rule",
        "description": "Servers that earned less than the maximum on a scoring rule, with the reason: "
                       "on the rule named (e.g. error_handling), else on every rule.",
        "sql": """select rule, server_id, rubric, points, max_points, reason from rule_outcomes
where (:rule = '' or rule = :rule) and measured = 1 and points < max_points
order by rule, server_id, rubric""",
        "params": ["rule"],
    },
}


def schema_documentation(text: str) -> dict[str, dict[str, Any]]:
    """Tables, their description (the paragraph under the heading) and column meanings, from docs/schema.md."""
    tables: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        heading = re.match(r"^###\s+(\w+)(?: \(view\))?\s*$", line)
        if heading:
            current = tables.setdefault(heading.group(1), {"description": "", "columns": {}})
            continue
        if current is None:
            continue
        row = re.match(r"^\|\s*(\w+)\s*\|\s*[A-Z]+\s*\|\s*(.*?)\s*\|\s*$", line)
        if row:
            current["columns"][row.group(1)] = row.group(2)
        elif line.strip() and not line.startswith("|") and not current["description"]:
            current["description"] = line.strip()
        elif line.strip() and not line.startswith("|") and not current["columns"]:
            current["description"] += " " + line.strip()
    return tables


def database_name(file_name: str) -> str:
    """The name Datasette gives the database in a file: the file's stem (`datasette scoreboard-….db`)."""
    return PurePosixPath(file_name).stem


def lite_database_name(url: str) -> str:
    """The name Datasette Lite gives the database it loads from `url` (`?url=`): Lite saves the download under the URL's
    text before its first ".db", from the last "/", and Datasette then takes that file's stem, so a name with a dot
    (an engine version's) loses its last dotted part: scoreboard-2026-11-29-engine-0.1.0.db is "…-engine-0.1" in Lite."""
    return database_name(url.split(".db", 1)[0].split("/")[-1])


def metadata(*databases: str, schema_text: str | None = None) -> dict[str, Any]:
    """The metadata for one database under each of the names given (the names two Datasettes give one file)."""
    tables = schema_documentation(schema_text if schema_text is not None else SCHEMA_DOC.read_text(encoding="utf-8"))
    described = {
        "tables": {name: {"description": doc["description"], "columns": doc["columns"]} for name, doc in tables.items()},
        "queries": CANNED_QUERIES,
    }
    return {
        "title": "MCP Scoreboard",
        "description": "Evidence and scores of Model Context Protocol servers: what each probe saw, and every rule's points.",
        "databases": dict.fromkeys(databases, described),
    }
