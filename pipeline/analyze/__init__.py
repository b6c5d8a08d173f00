"""Analyze: fetch each server's source and compute the repository sub-metrics."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.analyze.fetch import FetchFailed, RepoFetcher
from pipeline.analyze.metrics import analyze_tree
from pipeline.models import AnalysisResult, Server, StageReport
from pipeline.progress import Progress


def analyze_server(server: Server, fetcher: RepoFetcher, now: datetime) -> AnalysisResult:
    """Analyse one server; a fetch failure is recorded, never raised."""
    try:
        tree = fetcher.fetch(server)
    except (FetchFailed, OSError, ValueError) as exc:
        return AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False, error=str(exc)[:1000])
    description = server.description or tree.manifest.get("description") or tree.manifest.get("summary")
    metrics = analyze_tree(tree, description)
    return AnalysisResult(
        server_id=server.id,
        analyzed_at=now,
        fetcher=fetcher.name,
        source_ref=tree.ref,
        ok=True,
        files=tree.files[:500],
        description=description,
        readme_chars=len(tree.readme or ""),
        license=metrics["license_clarity"]["license"],
        sdk={k: v for k, v in {**tree.dependencies, **tree.installed_versions}.items()
             if k in ("mcp", "@modelcontextprotocol/sdk", "@modelcontextprotocol/server")},
        spec_version=metrics["spec_version"]["value"],
        metrics=metrics,
    )


def run_analyze(
    db: Database, *, servers: Sequence[Server], fetcher: RepoFetcher, now: datetime, progress: Progress | None = None
) -> StageReport:
    started = time.monotonic()
    report = StageReport(stage="analyze", counts={"analyzed": 0, "failed": 0})
    progress = progress or Progress("analyze", len(servers))
    try:
        for server in servers:
            result = analyze_server(server, fetcher, now)
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
