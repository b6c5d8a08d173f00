"""What a server page shows beside its score: per-tool quality, schema drift, reliability, protocol. Pure functions of stored rows."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from pipeline import latency
from pipeline.clean import clean_text
from pipeline.drift import breaking_changes, drift_between, extraction_complete
from pipeline.eras import era_sentence
from pipeline.judging import AMBIGUITY_SPREAD, blend, current_judgements, judge_spread, tool_average
from pipeline.models import EraFacts, Judgement, ProbeResult

RATIONALE_SHOWN = 300  # characters of a judge's rationale a page shows


def _hint(annotations: dict[str, Any], name: str) -> bool | None:
    value = annotations.get(name)
    return value if isinstance(value, bool) else None


def _latest_per_model(judged: list[Judgement]) -> list[Judgement]:
    latest: dict[str, Judgement] = {}
    for j in judged:
        if j.model not in latest or j.judged_at > latest[j.model].judged_at:
            latest[j.model] = j
    return list(latest.values())


def interpretability(judged: list[Judgement]) -> dict[str, Any] | None:
    """One tool's judged interpretability: real models blended lowest-first (as the score does), else the offline estimate;
    its average over the judges, and each judge's reading (its rationale is model output: capped here, escaped where shown)."""
    judged = _latest_per_model(judged)
    if not judged:
        return None
    real = [j for j in judged if not j.offline]
    counted = real or judged
    per_model = [tool_average(j) for j in counted]
    spread = judge_spread(real)
    return {
        "value": round(blend(per_model) if len(per_model) >= 2 else per_model[0], 1),
        "average": round(sum(per_model) / len(per_model), 1),
        "models": len(counted),
        "offline": not real,  # an offline heuristic is shown, labelled, and never counted in a score
        "spread": round(spread, 1) if spread is not None else None,
        "ambiguous": spread is not None and spread > AMBIGUITY_SPREAD,
        "judges": [{"model": j.model, "clarity": round(j.clarity), "input_completeness": round(j.input_completeness),
                    "confidence": round(j.confidence), "directive": j.directive, "rationale": clean_text(j.rationale or "", RATIONALE_SHOWN)}
                   for j in sorted(counted, key=lambda j: j.model)],
    }


def tool_rows(tools: list[dict[str, Any]] | None, tool_docs: dict[str, dict[str, float]], judgements: list[Judgement]) -> list[dict[str, Any]]:
    """A row per listed tool: documentation quality (seed 001's per-tool score), annotations, interpretability, ambiguity."""
    by_tool: dict[str, list[Judgement]] = {}
    for j in current_judgements(judgements, tools):
        by_tool.setdefault(j.tool_name, []).append(j)
    rows = []
    for tool in tools or []:
        name = str(tool.get("name", ""))
        annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
        docs = tool_docs.get(name)
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        rows.append({
            "name": name,
            "title": tool.get("title") or annotations.get("title"),
            "description": str(tool.get("description") or "")[:600],
            "params": len(schema.get("properties") or {}) if isinstance(schema.get("properties"), dict) else 0,
            "annotations": {"read_only": _hint(annotations, "readOnlyHint"), "destructive": _hint(annotations, "destructiveHint"),
                            "idempotent": _hint(annotations, "idempotentHint"), "open_world": _hint(annotations, "openWorldHint")},
            "output_schema": tool.get("outputSchema") is not None,
            "docs": {"total": round(sum(docs.values()), 1), "parts": docs} if docs else None,
            "interpretability": interpretability(by_tool.get(name, [])),
        })
    return rows


def schema_drift(analysis: dict[str, Any] | None, tools: list[dict[str, Any]] | None, changes: list[dict[str, Any]]) -> dict[str, Any]:
    """Source vs runtime tool names, and the tool surface's recent changes (added, removed, changed, breaking)."""
    static, complete = None, False
    if analysis and analysis.get("ok"):
        metrics = analysis.get("metrics") or {}
        static, complete = metrics.get("extracted_tools"), extraction_complete(metrics)
    history = []
    for change in changes:
        before = {str(t.get("name")): t for t in change["previous"] or [] if isinstance(t, dict)}
        after = {str(t.get("name")): t for t in change["tools"] or [] if isinstance(t, dict)}
        common = sorted(set(before) & set(after))
        history.append({
            "captured_at": change["captured_at"],
            "added": sorted(set(after) - set(before)),
            "removed": sorted(set(before) - set(after)),
            "changed": [n for n in common if before[n] != after[n]],
            "breaking": sum(breaking_changes(before[n], after[n]) for n in common),
        })
    return {"source_vs_runtime": drift_between(static, tools, complete), "changes": history}


def _window(runs: int, ok: int, histogram: dict[str, int]) -> dict[str, Any]:
    p50, p95 = latency.percentile(histogram, 0.5), latency.percentile(histogram, 0.95)
    return {"probes": runs, "uptime": round(100 * ok / runs, 2) if runs else None,
            "p50_ms": round(p50) if p50 is not None else None, "p95_ms": round(p95) if p95 is not None else None}


def reliability(daily: list[dict[str, Any]], last_day: list[dict[str, Any]], today: date) -> dict[str, Any] | None:
    """Uptime and latency over 24 hours (raw probes), 7 and 30 days (daily rollups); a point per day for the chart."""
    if not daily and not last_day:
        return None
    windows = {}
    ok_24 = [r for r in last_day if r["outcome"] == "ok"]
    windows["24h"] = _window(len(last_day), len(ok_24), latency.from_samples(r["connect_ms"] for r in ok_24 if r["connect_ms"] is not None))
    for label, days in (("7d", 7), ("30d", 30)):
        since = (today - timedelta(days=days - 1)).isoformat()
        rows = [r for r in daily if r["day"] >= since]
        windows[label] = _window(sum(r["runs"] for r in rows), sum(r["ok"] for r in rows), latency.merge(r["latency_hist"] for r in rows))
    days = [{"day": r["day"], "uptime": round(100 * r["ok"] / r["runs"], 1) if r["runs"] else None,
             "p95_ms": (lambda v: round(v) if v is not None else None)(latency.percentile(r["latency_hist"], 0.95))} for r in daily]
    return {"windows": windows, "days": days}


def eras_explained(probe: ProbeResult | None) -> str | None:
    """What the probe tried, which protocol eras answered and what that means for a client, in plain words."""
    if probe is None:
        return None
    eras = probe.eras or EraFacts()
    return era_sentence(eras.modern, eras.legacy, probe.era)


def protocol(probe: ProbeResult | None, outside_in: dict[str, Any] | None) -> dict[str, Any] | None:
    """Which protocol eras work, what was negotiated, and seed 003's spec-readiness evidence."""
    if probe is None:
        return None
    eras = probe.eras
    if eras is not None and (eras.modern is not None or eras.legacy is not None):
        support = "dual" if eras.modern and eras.legacy else "modern" if eras.modern else "legacy" if eras.legacy else "broken"
    else:
        support = probe.era or "unknown"
    signals = None
    if eras is not None:
        signals = {"modern path": eras.modern, "server/discover": eras.discover, "header routing": eras.header_routing,
                   "list-cache hints": eras.list_cache_hints}
    return {
        "support": support,
        "negotiated": probe.protocol_version,
        "handshake": probe.handshake,
        "transport": probe.transport,
        "spec_readiness": (outside_in or {}).get("spec_readiness"),
        "signals": signals,
    }
