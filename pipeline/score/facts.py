"""Facts: everything the rules may read about one server, gathered from stored evidence.

Gathering is the only step that touches the database; rules then run on Facts alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlite_utils import Database

from pipeline import db as store
from pipeline.models import AnalysisResult, Judgement, ProbeResult, Server

RELIABILITY_WINDOW = timedelta(days=7)  # seed 000: the 7-day figures feed the composite


@dataclass
class Facts:
    server: Server
    now: datetime
    probe: ProbeResult | None = None
    probe_ref: str | None = None
    analysis: AnalysisResult | None = None
    analysis_ref: str | None = None
    fast: dict[str, Any] = field(default_factory=lambda: {"total": 0, "ok": 0, "latencies_ms": []})
    judgements: list[Judgement] = field(default_factory=list)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.probe.tools if self.probe and self.probe.reachable else None

    def check(self, name: str):
        if self.probe is None:
            return None
        return next((c for c in self.probe.checks if c.name == name), None)

    @property
    def description(self) -> str | None:
        if self.server.description:
            return self.server.description
        if self.analysis and self.analysis.description:
            return self.analysis.description
        info = (self.probe.server_info or {}) if self.probe else {}
        return info.get("description")


def gather(db: Database, server: Server, now: datetime) -> Facts:
    facts = Facts(server=server, now=now)
    probe = store.latest_probe(db, server.id)
    if probe:
        facts.probe_ref = f"probe_runs:{probe[0]}"
        facts.probe = probe[1]
    analysis = store.latest_analysis(db, server.id)
    if analysis:
        facts.analysis_ref = f"analyses:{analysis[0]}"
        facts.analysis = analysis[1]
    facts.fast = store.fast_probe_stats(db, server.id, now - RELIABILITY_WINDOW)
    facts.judgements = store.judgements_for(db, server.id)
    return facts
