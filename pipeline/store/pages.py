"""What the build reads for server pages beyond their cards and latest probe, many servers at a time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic_core import from_json
from sqlite_utils import Database

from pipeline.models import Judgement
from pipeline.store.encoding import in_chunks, iso


def page_evidence_stamps(db: Database, since_day: str) -> dict[str, list[Any]]:
    """Per server, what changes when its page's other evidence changes: recent monitoring counts, judgements, tool snapshots,
    source records."""
    stamps: dict[str, list[Any]] = {}
    queries = [
        "select server_id, group_concat(day || ':' || runs) from probe_daily where kind = 'fast' and day >= ? group by server_id",
        "select server_id, max(judged_at) || ':' || count(*) from judgements group by server_id",
        "select server_id, max(probe_run_id) from tool_snapshots group by server_id",
        "select server_id, max(id) from source_records group by server_id",
    ]
    for position, sql in enumerate(queries):
        for server_id, value in db.execute(sql, [since_day] if "?" in sql else []).fetchall():
            stamps.setdefault(server_id, [None] * len(queries))[position] = value
    return stamps


def page_evidence(db: Database, server_ids: list[str], *, rubric: str, since_day: str, since: datetime,
                  changes: int = 10) -> dict[str, dict[str, list[Any]]]:
    """What server pages show beyond their cards and latest probe, for many servers in one query per kind:
    score history under `rubric`, judgements, the last `changes` changes of the tool surface (each row of the
    tool_snapshots view after a server's first, with the list before it), fast-probe rollups since `since_day`, and the raw
    fast probes since `since` (the 24-hour figures need hours, not days)."""
    found: dict[str, dict[str, list[Any]]] = {
        sid: {"history": [], "judgements": [], "changes": [], "daily": [], "last_day": [], "records": []} for sid in server_ids
    }
    for chunk, marks in in_chunks(server_ids):
        for r in db.query(f"select server_id, day, composite, grade from score_history where rubric = ? and server_id in ({marks}) "
                          "order by server_id, day", [rubric, *chunk]):
            found[r.pop("server_id")]["history"].append(r)
        for r in db.query(f"select * from judgements where server_id in ({marks}) order by server_id, tool_name, model", chunk):
            found[r["server_id"]]["judgements"].append(Judgement.model_validate({k: v for k, v in r.items() if k != "id"}))
        for r in db.query(
            f"""
            select server_id, captured_at, tools, previous_tools from (
              select *, row_number() over (partition by server_id order by captured_at desc) as newest from (
                select server_id, captured_at, tools, lag(tools) over w as previous_tools
                from tool_snapshots where server_id in ({marks}) window w as (partition by server_id order by captured_at, probe_run_id)
              ) where previous_tools is not null
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
