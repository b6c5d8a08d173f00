"""Analyze: fetch each server's source and read it: the seven sub-metrics, its tools, its behaviour, its endpoints
and entry points, and the protocol signals its source shows (seed 000's Static Analysis and Source Code Inference).

Deterministic by default: code is parsed, never guessed at, and no code of the server's is run. The optional LLM passes
(llm_passes.py: given a configured model) add what the parsers could not read, each labelled with its model and kept
apart from the deterministic readings (deviations 127–133).
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime
from typing import Callable, Iterator, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.analyze.behaviour import behavioural_score, scan_behaviour
from pipeline.analyze.completeness import schema_completeness
from pipeline.analyze.endpoints import Resolver, discover_endpoints, named_endpoints
from pipeline.analyze.entry import entry_points
from pipeline.analyze.env_vars import required_env_vars
from pipeline.analyze.extract import extract_tools
from pipeline.analyze.fetch import FetchFailed, NotModified, RepoFetcher, SourceTree, Unavailable
from pipeline.analyze.history import maintenance_pulse, version_hygiene
from pipeline.analyze.inference import infer_protocol, schema_validity
from pipeline.analyze.llm_passes import LLMPasses, ServerPasses, waiting
from pipeline.analyze.metrics import analyze_tree
from pipeline.analyze.reach import extraction_texts, unrecognised
from pipeline.analyze.select import select
from pipeline.analyze.spec import spec_version
from pipeline.fleet.budget import NO_BUDGET, SKIPPED, Deadline
from pipeline.models import AnalysisResult, Server, StageReport
from pipeline.progress import Progress


def analyze_server(
    server: Server, fetcher: RepoFetcher, now: datetime, previous: AnalysisResult | None = None, resolve: Resolver | None = None,
    llm: ServerPasses | None = None,
) -> AnalysisResult:
    """Analyse one server; a fetch failure is recorded, never raised. NotModified passes up: nothing to redo; so does
    Unavailable when a good previous analysis exists (a host that cannot be asked this run does not erase it)."""
    try:
        tree = fetcher.fetch(server, previous)
    except NotModified:
        raise
    except Unavailable as exc:
        if previous is not None and previous.ok:
            raise
        return _failed(server, fetcher, now, exc)
    except FetchFailed as exc:
        return _failed(server, fetcher, now, exc)
    except (OSError, ValueError) as exc:
        return AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False, error=str(exc)[:1000])
    return analyze_source(server, tree, now, resolve, llm)


def _failed(server: Server, fetcher: RepoFetcher, now: datetime, exc: FetchFailed) -> AnalysisResult:
    return AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False, error=str(exc)[:1000],
                          repository=exc.repository)


def analyze_source(server: Server, tree: SourceTree, now: datetime, resolve: Resolver | None = None,
                   llm: ServerPasses | None = None) -> AnalysisResult:
    """Everything a fetched tree shows, computed purely (DNS only through `resolve`, models only through `llm`, when given)."""
    description = server.description or tree.manifest.get("description") or tree.manifest.get("summary")  # strings: clean_manifest
    selection = select(tree)
    files = selection.files
    reach = extraction_texts(files, tree)
    parsed = extract_tools(reach.files)
    findings = scan_behaviour(files, parsed, tree)
    inference = infer_protocol(files, parsed)
    endpoints = discover_endpoints(tree.readme, resolve)
    tools, by = parsed, None
    metrics = analyze_tree(tree, description)
    if llm is not None:
        passes = llm.run(files, tree.readme, parsed, bool(inference and inference["server_code"]), now)
        if passes.tools is not None:  # only where the parsers found no tool (deviation 127)
            tools, by = passes.tools, passes.record["tools"]["model"]
        if passes.urls:
            added, refused = named_endpoints(passes.urls, passes.readme_sent, passes.endpoints_model, endpoints, resolve)
            endpoints = endpoints + added
            passes.record["endpoints"].update({"named": len(passes.urls), "added": len(added), "refused": refused})
        metrics["llm"] = {"passes": passes.record, "inference": _inference(passes.inference, tools if by else None, by), "review": passes.review}
    coverage = _coverage(reach.cut, selection.left_out, unrecognised(reach.files, parsed))
    metrics.update({
        "schema_completeness": _labelled(schema_completeness(tools), by),
        "spec_version": spec_version(tree, files),
        "maintenance_pulse": maintenance_pulse(tree.repository, now),
        "version_hygiene": version_hygiene(tree.repository),
        "behavioral": behavioural_score(files, findings),
        "source_inference": inference,
        "env_vars": [v.model_dump() for v in required_env_vars(files, tree)],
        "extracted_tools": [t.name for t in tools] if tools is not None else None,
        # Whether the extractor read every file that may define tools: only then do tools listed at runtime alone show drift.
        # A model's reading never claims drift (deviation 127).
        "extraction": {**coverage, "complete": False, "by": by} if by else coverage,
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
        sdk=metrics["spec_version"]["sdks"],
        spec_version=metrics["spec_version"]["value"],
        metrics=metrics,
        repository=tree.repository,
        tools=tools,
        findings=findings,
        endpoints=endpoints,
        entry_points=entry_points(tree, files),
        selected_files=[f.path for f in files],
    )


def _labelled(reading: dict | None, by: str | None) -> dict | None:
    return {**reading, "by": by} if reading is not None and by else reading


def _inference(readings: dict[str, dict], tools: list | None, by: str | None) -> dict:
    """The model's inference passes, and the schema validity of the tools it read (when the parsers found none)."""
    found = dict(readings)
    if tools is not None:
        found["schema_validity"] = {**schema_validity(tools), "by": by}
    return found


def _passes_said(result: AnalysisResult) -> str:
    """What became of a server's LLM passes, for its progress line: "; LLM passes: 4 ok, 2 cached"."""
    passes = (result.metrics.get("llm") or {}).get("passes") or {}
    counts = Counter(str(p.get("status")) for p in passes.values() if isinstance(p, dict))
    return "; LLM passes: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) if counts else ""


def _coverage(cut: list[str], left_out: list[str], unread: list[str]) -> dict:
    """Whether the extractor read all of the source: no file cut, none with tool patterns beyond the top 20, and no file with
    more tool-definition sites than tools read from it."""
    return {"complete": not (cut or left_out or unread), "cut": cut[:50], "left_out": len(left_out), "unrecognised": unread[:50]}


def run_analyze(
    db: Database,
    *,
    servers: Sequence[Server],
    fetcher: RepoFetcher,
    now: datetime,
    progress: Progress | None = None,
    resolve: Resolver | None = None,
    previous: Callable[[str], AnalysisResult | None] | None = None,
    concurrency: int = 8,
    deadline: Deadline = NO_BUDGET,
    llm: LLMPasses | None = None,
) -> StageReport:
    """Analyse each server; `previous(server_id)` gives its last analysis, so an unchanged source costs one cheap call.
    Once `deadline` passes no new fetch starts (those in flight end within their timeouts); the rest count skipped_budget.
    With `llm`, its passes run on each analysed source, their stored answers (read here, per server) standing for calls
    on unchanged inputs; their counts join the report's.

    Fetching is network-bound, so servers are fetched and analysed in a bounded pool of threads; results are recorded
    here, in the calling thread, one transaction each, as they complete. Ctrl-C keeps what is recorded.
    """
    started = time.monotonic()
    report = StageReport(stage="analyze", counts={"analyzed": 0, "unchanged": 0, "deferred": 0, "failed": 0})
    progress = progress or Progress("analyze", len(servers))
    bound: dict[str, ServerPasses] = {}

    def passes_for(server: Server) -> ServerPasses | None:
        if llm is None:
            return None
        bound[server.id] = llm.for_server(store.llm_answers(db, server.id))
        return bound[server.id]

    def previous_of(server_id: str) -> AnalysisResult | None:
        found = (previous or (lambda _: None))(server_id)
        if llm is not None and found is not None and waiting(found):
            # Passes the budget held back last time: the source is fetched again (no "not modified") so they can run
            # now; their stored answers spare the passes that did run (deviation 132).
            return found.model_copy(update={"repository": None, "source_ref": None})
        return found

    try:
        for server, kind, outcome in _analysed(servers, fetcher, now, resolve, previous_of, concurrency, deadline, passes_for):
            passes = bound.pop(server.id, None)
            if kind == SKIPPED:
                report.counts[SKIPPED] = report.counts.get(SKIPPED, 0) + 1
                continue
            store.mark_examined(db, "analyze", [server.id], now)
            if isinstance(outcome, str):
                report.counts["deferred"] += 1
                progress.step(server.id, f"kept the previous analysis ({outcome})")
                continue
            if outcome is None:
                report.counts["unchanged"] += 1
                progress.step(server.id, "unchanged since the last analysis: kept")
                continue
            try:
                store.record_analysis(db, outcome, passes.fresh if passes is not None and outcome.ok else ())
            except store.WriteRefused as refusal:
                report.storage_failed()
                progress.step(server.id, str(refusal), ok=False)
                continue
            if outcome.ok:
                report.counts["analyzed"] += 1
                progress.step(server.id, f"ok from {outcome.fetcher} ({outcome.license or 'no license'}, spec {outcome.spec_version or '?'})"
                              + _passes_said(outcome))
            else:
                report.counts["failed"] += 1
                report.failures += 1
                progress.step(server.id, f"failed: {outcome.error}", ok=False)
    except KeyboardInterrupt:
        report.interrupted = True
    if llm is not None:
        report.counts.update(llm.allowance.counts)
    report.seconds = time.monotonic() - started
    return report


Outcome = tuple[Server, str, AnalysisResult | str | None]  # the server, what became of it, its result (why it was deferred; None: unchanged)


def _analyse_one(server: Server, fetcher: RepoFetcher, now: datetime, resolve: Resolver | None,
                 previous: AnalysisResult | None, llm: ServerPasses | None) -> Outcome:
    """One server, in a worker thread: ("analyzed", result), ("unchanged", None) or ("deferred", why)."""
    try:
        return server, "analyzed", analyze_server(server, fetcher, now, previous, resolve, llm)
    except NotModified:
        if previous is None:  # a fetcher says NotModified only against a previous analysis
            return server, "analyzed", _failed(server, fetcher, now, FetchFailed("the fetcher said 'not modified' with nothing before"))
        # Seed 000: an unchanged repository is skipped, so its analysis ages (stale-data decay, Stale Analysis) until
        # the source changes or the weekly freshness sweep analyses it again. Nothing is written: no row per server per run.
        return server, "unchanged", None
    except Unavailable as exc:
        return server, "deferred", str(exc)[:300]
    except Exception as exc:  # noqa: BLE001 - one hostile source must not stop the stage: its failure is recorded
        return server, "analyzed", AnalysisResult(server_id=server.id, analyzed_at=now, fetcher=fetcher.name, ok=False,
                                                  error=f"analysis failed: {type(exc).__name__}: {str(exc)[:500]}")


def _analysed(servers: Sequence[Server], fetcher: RepoFetcher, now: datetime, resolve: Resolver | None,
              previous: Callable[[str], AnalysisResult | None], concurrency: int, deadline: Deadline,
              passes_for: Callable[[Server], ServerPasses | None]) -> Iterator[Outcome]:
    """Outcomes as they complete, with at most twice `concurrency` servers in flight (memory stays bounded); once the
    deadline passes, each server not started yet is yielded as skipped."""
    pending = iter(servers)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="analyze")
    running: set[Future[Outcome]] = set()
    try:
        while True:
            while len(running) < 2 * max(1, concurrency):
                server = next(pending, None)
                if server is None:
                    break
                if deadline.expired():
                    yield server, SKIPPED, None
                    continue
                running.add(pool.submit(_analyse_one, server, fetcher, now, resolve, previous(server.id), passes_for(server)))
            if not running:
                return
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
