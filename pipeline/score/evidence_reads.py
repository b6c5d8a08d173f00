"""Which evidence each rule and flag reads, found by running them: the methodology's evidence table and its list of the
rules whose points decay with the analysis' age are generated from this, so the page cannot claim a reading the code
does not make.

Every rule and flag of every registered rubric runs on specimen Facts (a server with every kind of evidence; the same
without a live probe, so the source-inferred fallbacks run; and one with nothing) whose fields, the probe's and the
analysis' fields, the analysis' metrics and the named probe checks record each read.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from pydantic import BaseModel

from pipeline.judging import text_hash
from pipeline.models import (
    AnalysisResult,
    AppsFacts,
    CheckResult,
    EnvVar,
    EraFacts,
    FuzzCase,
    HttpFacts,
    Invocation,
    Judgement,
    LaunchSpec,
    ProbeOutcome,
    ProbeResult,
    Release,
    RepositoryFacts,
    Server,
)
from pipeline.score import registry
from pipeline.score.facts import Facts, Rollup, RunRow, Snapshot

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
# Where each kind of evidence comes from: the stage that collects it, by the Facts field that carries it.
STAGES = {
    "server": "discover", "duplicate_description": "discover", "probe": "probe", "analysis": "analyze", "judgements": "judge",
    "fast": "probe (fast probes, 7 days)",
    "runs": "probe (deep and sandbox runs, 30 days)", "snapshots": "probe (tool-list snapshots)", "auth_history": "probe (deep probes)",
    "yesterday": "score (yesterday's snapshot)",
}
TOOL = {"name": "get_order", "title": "Look up an order", "description": "Get one order by its ID; returns its status.",
        "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string", "description": "The order ID."}}, "required": ["order_id"]},
        "outputSchema": {"type": "object", "properties": {"status": {"type": "string"}}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}}
METRICS = {
    "documentation_coverage": {"value": 80, "signals": {"readme": True}}, "description_quality": {"value": 80, "signals": {}},
    "license_clarity": {"value": 100, "license": "MIT", "kind": "spdx"}, "dependency_health": {"value": 55, "signals": {"manifest": True}},
    "maintenance_pulse": {"value": 70}, "version_hygiene": {"value": 70}, "schema_completeness": {"value": 80},
    "behavioral": {"value": 90, "files": 3, "findings": {}}, "env_vars": [{"name": "API_TOKEN", "secret": True}],
    "extracted_tools": ["get_order"], "extraction": {"complete": True, "cut": [], "left_out": 0},
    "source_inference": {"error_handling": {"value": 70, "signals": {}}, "fuzz": {"value": 60, "signals": {}},
                         "schema_validity": {"value": 100, "valid": 1, "total": 1}, "auth_discovery": {"value": True, "signals": {}}},
}


class Reads(set):
    """What one run of a rule read, as dotted names ("probe.http", "analysis.metrics.behavioral", "check schema_validity")."""


class _Metrics(dict):
    def __init__(self, values: dict, reads: Reads) -> None:
        super().__init__(values)
        self.reads = reads

    def get(self, key: Any, default: Any = None) -> Any:
        self.reads.add(f"analysis.metrics.{key}")
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.reads.add(f"analysis.metrics.{key}")
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.reads.add(f"analysis.metrics.{key}")
        return super().__contains__(key)


class _Recording:
    """Stands in for a model (the server, the probe, the analysis), noting each public attribute read under `prefix`; `overrides`
    replace some attributes (the analysis' metrics, which note each key read)."""

    __slots__ = ("_target", "_prefix", "_reads", "_overrides")

    def __init__(self, target: BaseModel, prefix: str, reads: Reads, overrides: dict[str, Any] | None = None) -> None:
        self._target, self._prefix, self._reads, self._overrides = target, prefix, reads, overrides or {}

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            self._reads.add(f"{self._prefix}.{name}")
        return self._overrides[name] if name in self._overrides else getattr(self._target, name)


@dataclasses.dataclass
class _RecordingFacts(Facts):
    reads: Reads = dataclasses.field(default_factory=Reads)

    def __getattribute__(self, name: str) -> Any:
        if name in _FACT_FIELDS:
            object.__getattribute__(self, "reads").add(name)
        return object.__getattribute__(self, name)

    def check(self, name: str):
        self.reads.add(f"check {name}")
        return super().check(name)


_FACT_FIELDS = {f.name for f in dataclasses.fields(Facts)} - {"memo", "now"}


def _specimen_probe() -> ProbeResult:
    checks = [CheckResult(name=n, outcome="ok", passed=True) for n in ("schema_validity", "error_unknown_tool", "tools/list", "resources/list",
                                                                       "hidden_characters", "poisoning_markers", "text_sizes", "tool_names")]
    return ProbeResult(
        server_id="s", kind="deep", started_at=NOW, duration_ms=10, transport="streamable-http", outcome=ProbeOutcome.ok, era="modern",
        protocol_version="2026-07-28", handshake="server/discover", connect_ms=90, server_info={"name": "acme", "version": "1.0"},
        capabilities={"tools": {}, "resources": {}}, instructions="Use get_order.", tools=[TOOL], resources=[{"uri": "a://b", "name": "b"}],
        prompts=[{"name": "p"}], checks=checks, invocations=[Invocation(tool="get_order", outcome="ok", functional=True)],
        fuzz=[FuzzCase(tool="get_order", case="empty", outcome="proper_error")],
        http=HttpFacts(tls_version="TLSv1.3", cert_valid=True, hsts=True, auth_required=True, protected_resource_metadata=True,
                       server_card=True, html_setup_page=True),
        eras=EraFacts(modern=True, legacy=True, discover=True, header_routing=True, list_cache_hints=True),
        apps=AppsFacts(views=1, readable=1, html_mime=1, csp=1))


def _specimen_analysis(age_days: float) -> AnalysisResult:
    return AnalysisResult(server_id="s", analyzed_at=NOW - timedelta(days=age_days), fetcher="github", ok=True, description="Orders.",
                          spec_version="2025-11-25", metrics=METRICS,
                          repository=RepositoryFacts(host="github", pushed_at=NOW, stars=10, open_issues=0, releases=[Release(tag="v1.0.0")]))


def _specimens(age_days: float) -> list[Callable[[Reads], Facts]]:
    """Three servers as factories of recording Facts: every kind of evidence; no live probe; nothing at all."""
    server = Server(id="s", name="s", description="Look up orders.", transport="streamable-http", remote_url="https://mcp.example.com/mcp",
                    repository="https://github.com/o/r", env_vars=[EnvVar(name="API_TOKEN", secret=True)], first_seen_at=NOW, last_seen_at=NOW,
                    launch=LaunchSpec(registry="npm", package="p", command="p", transport="stdio"))
    judgement = Judgement(server_id="s", tool_name="get_order", tool_hash=text_hash(TOOL), provider="p", model="m", offline=False, judged_at=NOW,
                          clarity=80, input_completeness=80, confidence=80)
    rollup = Rollup.of(20, 20, [90.0] * 20)
    run = RunRow("deep", NOW, "ok", 90.0, 1, [Invocation(tool="get_order", outcome="ok", functional=True)])

    def full(reads: Reads) -> Facts:
        return _RecordingFacts(
            server=_Recording(server, "server", reads), now=NOW, probe=_Recording(_specimen_probe(), "probe", reads),
            analysis=_analysis(reads, age_days), fast=rollup, judgements=[judgement, judgement.model_copy(update={"model": "n"})],
            runs=[run], snapshots=[Snapshot(NOW - timedelta(days=40), "h", [TOOL])],
            auth_history=[(NOW, True)], duplicate_description=False, yesterday={"outside-in": 50.0}, reads=reads)

    def source_only(reads: Reads) -> Facts:
        return _RecordingFacts(server=_Recording(server, "server", reads), now=NOW, analysis=_analysis(reads, age_days), reads=reads)

    def nothing(reads: Reads) -> Facts:
        return _RecordingFacts(server=_Recording(server, "server", reads), now=NOW, reads=reads)

    return [full, source_only, nothing]


def _analysis(reads: Reads, age_days: float) -> Any:
    return _Recording(_specimen_analysis(age_days), "analysis", reads, {"metrics": _Metrics(METRICS, reads)})


def _readers() -> list[tuple[str, Callable[[Facts], Any]]]:
    """(name, function of Facts) of every rule and flag of every rubric, named `rubric rule`."""
    found: list[tuple[str, Callable[[Facts], Any]]] = []
    for rubric in registry.rubrics():
        found += [(f"{rubric.name} `{rule.name}`", rule.fn) for rule in rubric.rules]
        found += [(f"{rubric.name} flag {flag.label}", flag.fn) for flag in rubric.flags]
    return found


# Read by nearly every rule before its evidence, so listed once in the page's prose rather than per rule: whether the probe
# reached the server (or was a sandbox run that says nothing of it), whether the analysis succeeded and how old it is, and
# the references a reason links to.
GATES = {"probe.outcome", "probe.reachable", "probe.kind", "probe.detail", "probe.sandbox", "analysis.ok", "analysis.analyzed_at",
         "probe_ref", "analysis_ref"}


def _narrowed(reads: set[str]) -> set[str]:
    """Drop a bare field ("probe") when a part of it was read ("probe.tools"), then the gates."""
    return {r for r in reads if not any(other.startswith(r + ".") for other in reads)} - GATES


def evidence_readers() -> dict[str, list[str]]:
    """Each piece of evidence read by some rule or flag -> the rules and flags that read it, in registry order."""
    by_evidence: dict[str, list[str]] = {}
    for name, fn in _readers():
        reads: set[str] = set()
        for make in _specimens(age_days=1):
            run = Reads()
            fn(make(run))
            reads |= run
        for evidence in sorted(_narrowed(reads)):
            by_evidence.setdefault(evidence, []).append(name)
    return dict(sorted(by_evidence.items(), key=lambda item: (stage_of(item[0]), item[0])))


def stage_of(evidence: str) -> str:
    field = evidence.split(" ", 1)[0].split(".", 1)[0] if not evidence.startswith("check ") else "probe"
    return STAGES.get(field, "score")


def decaying_rules() -> list[str]:
    """The rules whose points fall as the static analysis ages (the same evidence read 1 day and 100 days after it was taken)."""
    decaying = []
    for rubric in registry.rubrics():
        for rule in rubric.rules:
            fresh = [rubric.outcome(rule.name, make(Reads())).points for make in _specimens(age_days=1)]
            old = [rubric.outcome(rule.name, make(Reads())).points for make in _specimens(age_days=100)]
            if fresh != old:
                decaying.append(f"{rubric.name} `{rule.name}`")
    return decaying
