"""What the static analysis read from a server's source, as its page shows it (pure; from the stored analysis)."""

from __future__ import annotations

from typing import Any

METRIC_LABELS = (
    ("schema_completeness", "Schema completeness"),
    ("description_quality", "Description quality"),
    ("documentation_coverage", "Documentation coverage"),
    ("maintenance_pulse", "Maintenance pulse"),
    ("dependency_health", "Dependency health"),
    ("license_clarity", "License clarity"),
    ("version_hygiene", "Version hygiene"),
    ("behavioral", "Behavioural security"),
)
SHOWN = 50  # tools, findings and endpoints listed on a page; the JSON keeps them all


def source_seen(analysis: dict[str, Any] | None) -> dict[str, Any] | None:
    """The analysis as a page shows it: where the source came from, the sub-metrics (None: not measured), what was found
    in it with file and line. None when the server was never analysed."""
    if not analysis:
        return None
    metrics = analysis.get("metrics") or {}
    tools = analysis.get("tools")
    findings = sorted(analysis.get("findings") or [], key=lambda f: (f.get("severity") != "critical", f.get("file", ""), f.get("line", 0)))
    return {
        "ok": bool(analysis.get("ok")),
        "error": analysis.get("error"),
        "analyzed_at": analysis.get("analyzed_at"),
        "fetcher": analysis.get("fetcher"),
        "ref": analysis.get("source_ref"),
        "repository": analysis.get("repository"),
        "metrics": [{"name": name, "label": label, "value": _value(metrics.get(name))} for name, label in METRIC_LABELS],
        "spec_version": analysis.get("spec_version"),
        "tools": None if tools is None else tools[:SHOWN],
        "tool_count": None if tools is None else len(tools),
        "findings": findings[:SHOWN],
        "finding_count": len(findings),
        "endpoints": (analysis.get("endpoints") or [])[:SHOWN],
        "entry_points": (analysis.get("entry_points") or [])[:SHOWN],
        "selected_files": len(analysis.get("selected_files") or []),
        "models": _models(metrics),
    }


def _models(metrics: dict[str, Any]) -> list[str]:
    """The models whose answers this analysis holds (its optional LLM passes, deviations 127–133), each once."""
    passes = (metrics.get("llm") or {}).get("passes") or {}
    return sorted({str(p["model"]) for p in passes.values() if isinstance(p, dict) and p.get("status") in ("ok", "cached") and p.get("model")})


def _value(metric: Any) -> float | None:
    if isinstance(metric, dict) and isinstance(metric.get("value"), (int, float)):
        return float(metric["value"])
    return None
