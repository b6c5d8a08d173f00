"""Evidence: probes (with their daily rollups and tool lists), analyses and judgements."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Collection, Iterable

from pydantic_core import from_json
from sqlite_utils import Database

from pipeline import ENGINE_VERSION, latency
from pipeline.clean import clean_text
from pipeline.models import AnalysisResult, Judgement, LLMAnswer, ProbeResult
from pipeline.outcomes import measured
from pipeline.store.encoding import cleaned_json, content_hash, dumps, iso, parse_iso
from pipeline.store.refusals import one_server


def record_probe(db: Database, result: ProbeResult, run_id: int | None) -> int:
    """Store one probe's evidence (every string in it cleaned) in one transaction. Its tool list is stored once per server
    and content (tool_lists): the run names it by hash, so a daily probe of an unchanged surface adds no copy (deviation 110).

    Raises WriteRefused, with nothing written, when the database refuses the server's rows.
    """
    with one_server(db, result.server_id):
        evidence = cleaned_json(result)
        tools = evidence.pop("tools")
        digest = None if tools is None else content_hash(tools)
        table = db["probe_runs"]
        table.insert(
            {
                "server_id": result.server_id,
                "run_id": run_id,
                "kind": result.kind,
                "started_at": iso(result.started_at),
                "duration_ms": round(result.duration_ms, 2),
                "transport": evidence["transport"],
                "outcome": result.outcome.value,
                "detail": clean_text(result.detail or "", 2000) or None,
                "era": evidence["era"],
                "protocol_version": evidence["protocol_version"],
                "handshake": evidence["handshake"],
                "connect_ms": result.connect_ms,
                "ping_ms": result.ping_ms,
                "tool_count": None if tools is None else len(tools),
                "evidence": dumps(evidence),
                "engine_version": ENGINE_VERSION,
                "tools_hash": digest,
            }
        )
        probe_id = int(table.last_pk)
        _roll_up(db, result)
        if tools is not None:
            db.execute("insert into tool_lists (server_id, content_hash, tool_count, tools) values (?, ?, ?, ?) "
                       "on conflict (server_id, content_hash) do nothing", [result.server_id, digest, len(tools), dumps(tools)])
    return probe_id


def _roll_up(db: Database, result: ProbeResult) -> None:
    """Fold one probe into its server's daily rollup (same transaction as the raw row); a run that says nothing of the
    server (a 429, an opt-out, our own refusal, a sandbox failure: pipeline.outcomes) is not a run of it."""
    if not measured(result.kind, result.outcome.value):
        return
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


# A probe run's stored evidence with its tool list (tool_lists, by hash): `select p.id, {PROBE_COLUMNS} from probe_runs p {WITH_TOOLS}`.
PROBE_COLUMNS = "p.evidence, l.tools"
WITH_TOOLS = "left join tool_lists l on l.server_id = p.server_id and l.content_hash = p.tools_hash"


def stored_probe(evidence: str, tools: str | None) -> ProbeResult:
    """A probe as recorded: its evidence, and the tool list its run names (none: it listed no tools)."""
    result = ProbeResult.model_validate_json(evidence)
    if tools is not None:
        result.tools = from_json(tools)
    return result


def latest_probe(db: Database, server_id: str, kinds: tuple[str, ...] = ("deep", "sandbox")) -> tuple[int, ProbeResult] | None:
    marks = ",".join("?" for _ in kinds)
    row = db.execute(
        f"select p.id, {PROBE_COLUMNS} from probe_runs p {WITH_TOOLS} where p.server_id = ? and p.kind in ({marks}) "
        "order by p.started_at desc, p.id desc limit 1",
        [server_id, *kinds],
    ).fetchone()
    return None if row is None else (row[0], stored_probe(row[1], row[2]))


def rate_limited_until(db: Database) -> dict[str, datetime]:
    """Servers whose latest probe was rate limited with a Retry-After, and until when they asked us to wait."""
    rows = db.query(
        "select p.server_id, p.started_at, json_extract(p.evidence, '$.retry_after_s') wait from probe_runs p join "
        "(select server_id, max(id) id from probe_runs group by server_id) latest on p.id = latest.id where p.outcome = 'rate_limited'"
    )
    return {r["server_id"]: parse_iso(r["started_at"]) + timedelta(seconds=r["wait"]) for r in rows if r["wait"]}


def latest_probes(db: Database, server_ids: list[str], kinds: tuple[str, ...] = ("deep", "sandbox")) -> dict[str, tuple[int, ProbeResult]]:
    """`latest_probe` of many servers in one query (the build reads a batch of pages at once)."""
    rows = db.execute(
        f"select p.server_id, p.id, {PROBE_COLUMNS} from json_each(?) s join probe_runs p on p.id = (select q.id from probe_runs q "
        f"where q.server_id = s.value and q.kind in ({','.join('?' for _ in kinds)}) order by q.started_at desc, q.id desc limit 1) {WITH_TOOLS}",
        [dumps(server_ids), *kinds],
    )
    return {server_id: (probe_id, stored_probe(evidence, tools)) for server_id, probe_id, evidence, tools in rows}


def latest_analyses(db: Database, server_ids: list[str]) -> dict[str, tuple[int, AnalysisResult]]:
    """The latest analysis of many servers in one query."""
    rows = db.execute(
        "select a.server_id, a.id, a.result from json_each(?) s join analyses a on a.id = (select b.id from analyses b "
        "where b.server_id = s.value order by b.analyzed_at desc, b.id desc limit 1)",
        [dumps(server_ids)],
    )
    return {server_id: (analysis_id, AnalysisResult.model_validate_json(result)) for server_id, analysis_id, result in rows}


def latest_probe_summaries(db: Database) -> dict[str, dict[str, Any]]:
    """The latest deep/sandbox probe of every server, from its columns only (no evidence parsed)."""
    return {
        row["server_id"]: row
        for row in db.query(
            "select p.server_id, p.id, p.era, p.protocol_version, p.tool_count, p.outcome from probe_runs p join "
            "(select server_id, max(id) id from probe_runs where kind in ('deep', 'sandbox') group by server_id) latest on p.id = latest.id"
        )
    }


def latest_analysis_ids(db: Database) -> dict[str, int]:
    return {row["server_id"]: row["id"] for row in db.query("select server_id, max(id) id from analyses group by server_id")}


def record_analysis(db: Database, result: AnalysisResult, answers: Iterable[LLMAnswer] = ()) -> int:
    """Store one analysis (every string in it cleaned) and the new answers of its LLM passes; raises WriteRefused, with
    nothing written, when the database refuses them."""
    with one_server(db, result.server_id):
        rows = [{**cleaned_json(a), "server_id": result.server_id, "answer": dumps(cleaned_json(a)["answer"]), "created_at": iso(a.created_at)}
                for a in answers]
        for row in rows:  # one answer per server, pass and model: its latest input's
            db.execute("delete from llm_answers where server_id = ? and pass_name = ? and model = ?",
                       [row["server_id"], row["pass_name"], row["model"]])
        if rows:
            db["llm_answers"].insert_all(rows)
        cleaned = cleaned_json(result)
        table = db["analyses"]
        table.insert(
            {
                "server_id": result.server_id,
                "analyzed_at": iso(result.analyzed_at),
                "fetcher": result.fetcher,
                "source_ref": cleaned["source_ref"],
                "ok": int(result.ok),
                "error": cleaned["error"],
                "license": cleaned["license"],
                "spec_version": cleaned["spec_version"],
                "result": dumps(cleaned),
                "engine_version": ENGINE_VERSION,
            }
        )
        return int(table.last_pk)

def llm_answers(db: Database, server_id: str) -> list[LLMAnswer]:
    """The stored answers of a server's LLM passes (every model, prompt version and input), the cache its next analysis reads."""
    return [LLMAnswer.model_validate({**r, "answer": json.loads(r["answer"])})
            for r in db.query("select pass_name, model, prompt_version, input_hash, answer, input_tokens, output_tokens, cost_usd, "
                              "created_at from llm_answers where server_id = ?", [server_id])]


def save_judgements(db: Database, server_id: str, judgements: Iterable[Judgement], panel: Collection[str] | None = None) -> int:
    """Store one server's judgements (their text cleaned) and, given the judge `panel` (its models), retire the server's
    judgements by models outside it and restore those by models in it (deviation 117); raises WriteRefused, with none
    written, when the database refuses them."""
    with one_server(db, server_id):
        rows = [{**cleaned_json(j), "offline": int(j.offline), "retired": int(j.retired), "judged_at": iso(j.judged_at),
                 "directive": None if j.directive is None else int(j.directive)} for j in judgements]
        # The unique index on (server, tool, model, tool hash, prompt version) makes a re-judgement replace its row.
        db["judgements"].insert_all(rows, replace=True)
        if panel is not None:
            models = sorted(set(panel))
            outside = f"model not in ({', '.join('?' for _ in models)})" if models else "1"
            # Only rows whose state changes are written: a shard's capture carries every row an update touches.
            db.execute(f"update judgements set retired = ({outside}) where server_id = ? and offline = 0 and retired != ({outside})",
                       [*models, server_id, *models])
    return len(rows)


def judged_keys(db: Database, server_id: str, model: str, prompt_version: str) -> set[tuple[str, str]]:
    """The (tool name, tool text hash) pairs `model` has judged for this server under `prompt_version`."""
    return {
        (r["tool_name"], r["tool_hash"])
        for r in db.query("select tool_name, tool_hash from judgements where server_id = ? and model = ? and prompt_version = ?",
                          [server_id, model, prompt_version])
    }


def fast_probe_minutes(db: Database, since: datetime, until: datetime) -> list[tuple[str, str, int]]:
    """The fast probes started from `since` to `until` of servers that completed a handshake at least once (their daily
    rollups say so), counted per minute (`YYYY-MM-DDTHH:MM`, UTC) and outcome: what the fleet's probe success rate reads."""
    return db.execute(
        "select substr(p.started_at, 1, 16) minute, p.outcome, count(*) from (select distinct server_id from probe_daily where ok > 0) s "
        "join probe_runs p on p.server_id = s.server_id and p.started_at >= ? and p.started_at <= ? and p.kind = 'fast' "
        "group by minute, p.outcome order by minute",
        [iso(since), iso(until)],
    ).fetchall()
