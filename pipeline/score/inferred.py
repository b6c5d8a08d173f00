"""Seed 000's Source Code Inference Fallback: when no live probe data exists, the protocol signals the analysis inferred
from source (pipeline/analyze/inference.py) stand in for error handling, fuzz resilience, schema validity and auth
discovery. Reachability and the invocation smoke test need a running server and stay not measured.

"No live probe data": no probe, or a probe that did not complete the handshake (unreachable, an install or start that
failed, the sandbox's not-measured outcomes). A probe that reached the server always wins, and so do the auth facts any
probe saw over HTTP.
"""

from __future__ import annotations

from typing import Any

from pipeline.score.facts import Facts

LABEL = "inferred from source"


def live_protocol_data(facts: Facts) -> bool:
    return facts.probe is not None and facts.probe.reachable


def inferred(facts: Facts, key: str) -> dict[str, Any] | None:
    """The analysis' inferred signal `key` ("error_handling", "fuzz", "schema_validity", "auth_discovery") when the
    fallback applies and the analysis could say something; None otherwise. The deterministic reading first; the LLM
    passes' reading (labelled with its model, "by") only where the deterministic one measured nothing (deviation 128)."""
    if live_protocol_data(facts) or facts.analysis is None or not facts.analysis.ok:
        return None
    metrics = facts.analysis.metrics
    deterministic = metrics.get("source_inference") or {}
    signal = deterministic.get(key)
    if isinstance(signal, dict) and (signal.get("value") is not None or (key == "auth_discovery" and deterministic.get("server_code"))):
        return signal
    reading = ((metrics.get("llm") or {}).get("inference") or {}).get(LLM_KEYS.get(key, key))
    if isinstance(reading, dict) and (reading.get("value") is not None or key == "auth_discovery"):
        return {**reading, "by": reading.get("by") or (metrics["llm"].get("passes") or {}).get(LLM_KEYS.get(key, key), {}).get("model")}
    if isinstance(signal, dict) and key == "auth_discovery":
        return signal
    return None


LLM_KEYS = {"auth_discovery": "auth"}  # the LLM pass' name where it differs from the signal's


def label(signal: dict[str, Any]) -> str:
    """How a reason names where an inferred signal comes from: the source, read by our patterns or by a model."""
    return f"{LABEL} by {signal['by']}" if signal.get("by") else LABEL


def places(signal: dict[str, Any], limit: int = 3) -> str:
    """Where the source shows it, for the reason: "server.py:12, server.py:30"."""
    found = signal.get("evidence") or []
    return ", ".join(found[:limit]) + (f" (+{len(found) - limit} more)" if len(found) > limit else "")


def found_and_missing(signal: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The signal's parts present and absent, as words ("mcp error results")."""
    parts = signal.get("signals") or {}
    return ([k.replace("_", " ") for k, v in parts.items() if v], [k.replace("_", " ") for k, v in parts.items() if not v])
