"""Analyze: fetch each server's source and read it: the seven sub-metrics, its tools, its behaviour, its endpoints
and entry points, and the protocol signals its source shows (seed 000's Static Analysis and Source Code Inference).

Deterministic throughout: code is parsed, never guessed at, and no code of the server's is run.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Callable, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.analyze.behaviour import behavioural_score, scan_behaviour
from pipeline.analyze.completeness import schema_completeness
from pipeline.analyze.endpoints import Resolver, discover_endpoints
from pipeline.analyze.entry import entry_points
from pipeline.analyze.env_vars import required_env_vars
from pipeline.analyze.extract import extract_tools
from pipeline.analyze.fetch import FetchFailed, NotModified, RepoFetcher, SourceTree
from pipeline.analyze.history import maintenance_pulse, version_hygiene
from pipeline.analyze.inference import infer_protocol
from pipeline.analyze.metrics import analyze_tree
from pipeline.analyze.select import select_files
from pipeline.models import AnalysisResult, Server, StageReport
from pipeline.progress import Progress

SDK_NAMES = ("mcp", "@modelcontextprotocol/sdk", "@modelcontextprotocol/server")


def analyze_server(
    server: Server, fetcher: RepoFetcher, now: datetime, previous: AnalysisResult | None = None, resolve: Resolver | None = None
) -> AnalysisResult:
    """Analyse one server; a fetch failure is recorded, never raised. NotModified passes up: nothing to redo."""
    try:
        tree = fetcher.fetch(server, previous)
    except NotModified:
        raise
    except FetchFailed as exc:
        return AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False, error=str(exc)[:1000],
                              repository=exc.repository)
    except (OSError, ValueError) as exc:
        return AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False, error=str(exc)[:1000])
    return analyze_source(server, tree, now, resolve)


def analyze_source(server: Server, tree: SourceTree, now: datetime, resolve: Resolver | None = None) -> AnalysisResult:
    """Everything a fetched tree shows, computed purely (DNS only through `resolve`, when given)."""
    description = server.description or tree.manifest.get("description") or tree.manifest.get("summary")
    files = select_files(tree)
    tools = extract_tools(files)
    findings = scan_behaviour(files, tools, tree)
    metrics = analyze_tree(tree, description)
    metrics.update({
        "schema_completeness": schema_completeness(files, tools),
        "maintenance_pulse": maintenance_pulse(tree.repository, now),
        "version_hygiene": version_hygiene(tree.repository),
        "behavioral": behavioural_score(files, findings),
        "source_inference": infer_protocol(files, tools),
        "env_vars": [v.model_dump() for v in required_env_vars(files, tree)],
        "extracted_tools": [t.name for t in tools] if tools is not None else None,
    })
    return AnalysisResult(
        server_id=server.id,
        analyzed_at=now,
        fetcher=tree.fetcher,
        source_ref=tree.ref,
        ok=True,
        files=tree.files[:500],
        description=description,
        readme_chars=len(tree.readme or ""),
        license=metrics["license_clarity"]["license"],
        sdk={k: v for k, v in {**tree.dependencies, **tree.installed_versions}.items() if k in SDK_NAMES},
        spec_version=metrics["spec_version"]["value"],
        metrics=metrics,
        repository=tree.repository,
        tools=tools,
        findings=findings,
        endpoints=discover_endpoints(tree.readme, resolve),
        entry_points=entry_points(tree, files),
        selected_files=[f.path for f in files],
    )


def run_analyze(
    db: Database,
    *,
    servers: Sequence[Server],
    fetcher: RepoFetcher,
    now: datetime,
    progress: Progress | None = None,
    resolve: Resolver | None = None,
    previous: Callable[[str], AnalysisResult | None] | None = None,
) -> StageReport:
    """Analyse each server; `previous(server_id)` gives its last analysis, so an unchanged source costs one cheap call."""
    started = time.monotonic()
    report = StageReport(stage="analyze", counts={"analyzed": 0, "unchanged": 0, "failed": 0})
    progress = progress or Progress("analyze", len(servers))
    try:
        for server in servers:
            try:
                result = analyze_server(server, fetcher, now, previous(server.id) if previous else None, resolve)
            except NotModified:
                report.counts["unchanged"] += 1
                progress.step(server.id, "unchanged since the last analysis")
                continue
            try:
                store.record_analysis(db, result)
            except store.WriteRefused as refusal:
                report.storage_failed()
                progress.step(server.id, str(refusal), ok=False)
                continue
            if result.ok:
                report.counts["analyzed"] += 1
                progress.step(server.id, f"ok ({result.license or 'no license'}, spec {result.spec_version or '?'})")
            else:
                report.counts["failed"] += 1
                report.failures += 1
                progress.step(server.id, f"failed: {result.error}", ok=False)
    except KeyboardInterrupt:
        report.interrupted = True
    report.seconds = time.monotonic() - started
    return report
