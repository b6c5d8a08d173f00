"""Judge: the panel of LLM judges reads each tool's text for interpretability (clarity, input completeness, confidence) and
says whether the text tries to instruct the model reading it (seed 000's Schema Interpretability; seed 004's judged reading).

The judges are pipeline.llm Providers (the official SDKs, or any OpenAI-compatible endpoint), run concurrently across
providers, each within its own in-flight and request-rate limits (pipeline.judge.limits). A judgement is keyed by
(model, PROMPT_VERSION, tool text hash): a tool already read by a model under the current prompt is never read again.
A failed request (LLMError: its kind counted) is a failure of that tool for that model, never fatal for the rest and
never a made-up score: the tool waits for the next run. With no judge configured the offline judge runs instead: a
deterministic heuristic, always labelled `offline`, shown but never counted.
Seed 000 runs the evaluation only for servers with at least Assessed visibility: a server is judged once its latest
headline card says so. A hosted endpoint is judged whatever its tier: seed 004's judged reading waits for the judgement
("it resolves by itself once the judgement lands") and charges the endpoint until it does.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from threading import Event, Lock
from typing import Any, Mapping, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.clean import clean_text
from pipeline.fleet.budget import NO_BUDGET, SKIPPED, Deadline
from pipeline.judge.limits import Limits, Pace, RateLimiter, limits_for
from pipeline.judge.offline import OfflineJudge
from pipeline.judge.prompt import PROMPT_VERSION, Verdict, ask
from pipeline.judging import text_hash
from pipeline.listing_only import listing_only
from pipeline.llm import LLMError, Provider, SpendCap, Usage
from pipeline.models import Judgement, Server, StageReport
from pipeline.progress import Progress
from pipeline.visibility import HEADLINE_RUBRIC, at_least_assessed

__all__ = ["OfflineJudge", "Panel", "run_judge"]

WAITING = "waiting_budget"  # tools not read because the run's token or cost budget was spent
BACKLOG = 4  # requests queued per request in flight: enough to keep every judge busy, few to leave unstarted at a stop


@dataclass
class Panel:
    """The judges of one run and their limits. `models` is the configured panel (judges left out for a missing key
    included), so a key missing for one run does not retire a model's judgements; None leaves retirement alone."""

    judges: Sequence[Provider]
    limits: Mapping[str, Limits] = field(default_factory=dict)  # model -> limits; a judge without an entry: its family's default
    models: Sequence[str] | None = None
    spend: SpendCap = field(default_factory=SpendCap)

    @classmethod
    def offline(cls) -> Panel:
        return cls(judges=[])

    def limits_of(self, judge: Provider) -> Limits:
        return self.limits.get(judge.model) or limits_for(judge.provider, judge.model, {})


@dataclass
class _Server:
    server: Server
    outstanding: int
    judged: list[Judgement] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)


class _NotStarted:
    """A request the run stopped before it began (the budget was spent): its tool waits."""


def run_judge(
    db: Database, *, servers: Sequence[Server], panel: Panel, now: datetime, progress: Progress | None = None,
    deadline: Deadline = NO_BUDGET, run_id: int | None = None,
) -> StageReport:
    """Judge each server's new tool texts, in the order given, by every judge of `panel` (the offline judge when it has
    none). Once `deadline` passes no further server is started (they are counted skipped_budget); once the panel's
    spending cap is reached no further request is started, those in flight finish, and the tools left unread are counted
    waiting_budget. A server's judgements are stored in one transaction once all its requests have ended."""
    started = time.monotonic()
    report = StageReport(stage="judge", counts={"judged": 0, "unchanged": 0, "no_tools": 0, "below_assessed": 0})
    progress = progress or Progress("judge", len(servers))
    tiers = store.visibilities(db, [s.id for s in servers], HEADLINE_RUBRIC)
    run = _Run(db, panel, report, progress, now, run_id)
    try:
        for position, server in enumerate(servers):
            if deadline.expired():
                report.counts[SKIPPED] = len(servers) - position
                break
            tools = _tools_to_read(db, server, tiers, report, progress, now)
            if tools is not None:
                run.start(server, tools)
        run.finish()
    except KeyboardInterrupt:
        run.stop.set()
        report.interrupted = True
    finally:
        run.close()
    _account(report, run)
    report.seconds = time.monotonic() - started
    return report


def _tools_to_read(db: Database, server: Server, tiers: dict[str, str], report: StageReport, progress: Progress,
                   now: datetime) -> list[dict[str, Any]] | None:
    if not listing_only(server):
        store.mark_examined(db, "judge", [server.id], now)
    if listing_only(server):  # deviation 80: no tools could ever be captured
        report.counts["listing_only"] = report.counts.get("listing_only", 0) + 1
        progress.step(server.id, "not judged: listing only")
        return None
    if server.is_local and not at_least_assessed(tiers.get(server.id)):
        report.counts["below_assessed"] += 1
        progress.step(server.id, f"not judged: visibility {tiers.get(server.id, 'not scored yet')}, Assessed needed")
        return None
    latest = store.latest_probe(db, server.id)
    tools = latest[1].tools if latest else None
    if not tools:
        report.counts["no_tools"] += 1
        progress.step(server.id, "no tools captured yet")
        return None
    return tools


class _Run:
    """One run's requests: per-judge thread pools and rate limiters; results gathered, and servers stored, on the caller's thread."""

    def __init__(self, db: Database, panel: Panel, report: StageReport, progress: Progress, now: datetime, run_id: int | None) -> None:
        self.db, self.panel, self.report, self.progress, self.now, self.run_id = db, panel, report, progress, now, run_id
        self.stop = Event()
        self.lock = Lock()
        self.usage = Usage()
        self.cost_unknown = False
        self.pools = {j.model: ThreadPoolExecutor(max_workers=panel.limits_of(j).in_flight, thread_name_prefix=f"judge-{j.provider}")
                      for j in panel.judges}
        self.paces = {j.model: Pace(RateLimiter(panel.limits_of(j).per_second)) for j in panel.judges}
        self.capacity = BACKLOG * sum(panel.limits_of(j).in_flight for j in panel.judges)
        self.futures: dict[Future, tuple[_Server, str, str, Provider]] = {}
        self.offline = OfflineJudge()

    def start(self, server: Server, tools: list[dict[str, Any]]) -> None:
        judges = self.panel.judges
        if not judges:  # no LLM judge configured: the offline heuristic, labelled and never counted
            self._store(_Server(server, 0, judged=self._offline(server, tools)))
            return
        todo = []
        for judge in judges:
            done = store.judged_keys(self.db, server.id, judge.model, PROMPT_VERSION)
            for tool in tools:
                digest = text_hash(tool)
                if (str(tool.get("name", "")), digest) in done:
                    self.report.counts["unchanged"] += 1
                else:
                    todo.append((judge, tool, digest))
        state = _Server(server, len(todo))
        if self.stop.is_set():  # the budget is spent: count what waits, ask nothing
            state.waiting = {str(tool.get("name", "")) for _, tool, _ in todo}
            state.outstanding = 0
        for judge, tool, digest in todo if not self.stop.is_set() else []:
            while len(self.futures) >= self.capacity:
                self._collect(wait(self.futures, return_when=FIRST_COMPLETED).done)
            future = self.pools[judge.model].submit(self._ask, judge, tool)
            self.futures[future] = (state, str(tool.get("name", "")), digest, judge)
        if not state.outstanding:
            self._store(state)

    def finish(self) -> None:
        while self.futures:
            self._collect(wait(self.futures, return_when=FIRST_COMPLETED).done)

    def close(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(wait=True, cancel_futures=True)

    def _ask(self, judge: Provider, tool: dict[str, Any]) -> Any:
        return self.paces[judge.model].send(lambda: self._request(judge, tool))

    def _request(self, judge: Provider, tool: dict[str, Any]) -> Any:
        if self.stop.is_set():
            return _NotStarted()
        self.paces[judge.model].rate.wait()
        if self.stop.is_set():
            return _NotStarted()
        try:
            outcome: Any = ask(judge, tool)
        except LLMError as error:
            outcome = error
        self.paces[judge.model].answered(outcome)
        self._spend(outcome.usage)  # here, not on collection: this thread's next request already sees a spent budget
        return outcome

    def _collect(self, done: set[Future]) -> None:
        for future in done:
            state, name, digest, judge = self.futures.pop(future)
            outcome = future.result()
            state.outstanding -= 1
            if isinstance(outcome, _NotStarted):
                state.waiting.add(name)
            elif isinstance(outcome, LLMError):
                key = f"failed_{outcome.kind}"
                self.report.counts[key] = self.report.counts.get(key, 0) + 1
                self.report.failures += 1
                state.failed.append(f"{name}: {outcome}")
            else:
                state.judged.append(self._judgement(state.server, name, digest, judge, outcome.value, outcome.usage))
            if not state.outstanding:
                self._store(state)

    def _spend(self, usage: Usage) -> None:
        """Add one answer's usage (a failed one's too: a malformed answer was paid for) and stop at the spending cap."""
        with self.lock:
            self.usage = self.usage + usage
            self.cost_unknown = self.cost_unknown or usage.cost_usd is None
            total = self.usage
            reason = self.panel.spend.reached(total.input_tokens + total.output_tokens, total.cost_usd or 0.0, self.cost_unknown)
            if not reason or self.stop.is_set():
                return
            self.stop.set()
        self.progress.note(f"{reason}: no further request is started; those in flight finish")

    def _judgement(self, server: Server, name: str, digest: str, judge: Provider, verdict: Verdict, usage: Usage) -> Judgement:
        return Judgement(
            server_id=server.id, tool_name=name, tool_hash=digest, provider=judge.provider, model=judge.model, offline=False,
            judged_at=self.now, clarity=verdict.clarity, input_completeness=verdict.input_completeness, confidence=verdict.confidence,
            rationale=clean_text(verdict.rationale, 300), directive=verdict.directive, prompt_version=PROMPT_VERSION,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usage.cost_usd, run_id=self.run_id,
        )

    def _offline(self, server: Server, tools: list[dict[str, Any]]) -> list[Judgement]:
        done = store.judged_keys(self.db, server.id, self.offline.model, "offline")
        fresh = []
        for tool in tools:
            name, digest = str(tool.get("name", "")), text_hash(tool)
            if (name, digest) in done:
                self.report.counts["unchanged"] += 1
                continue
            verdict = self.offline.judge_tool(tool)
            fresh.append(Judgement(server_id=server.id, tool_name=name, tool_hash=digest, provider=self.offline.provider,
                                   model=self.offline.model, offline=True, judged_at=self.now, prompt_version="offline", run_id=self.run_id,
                                   **verdict))
        return fresh

    def _store(self, state: _Server) -> None:
        if state.waiting:
            self.report.counts[WAITING] = self.report.counts.get(WAITING, 0) + len(state.waiting)
        try:
            self.report.counts["judged"] += store.save_judgements(self.db, state.server.id, state.judged, panel=self.panel.models)
        except store.WriteRefused as refusal:
            self.report.storage_failed()
            self.progress.step(state.server.id, str(refusal), ok=False)
            return
        status = f"{len(state.judged)} judged"
        status += f"; {len(state.waiting)} tools wait for budget" if state.waiting else ""
        status += f"; {len(state.failed)} failed: {state.failed[0]}" if state.failed else ""
        self.progress.step(state.server.id, status, ok=not state.failed)


def _account(report: StageReport, run: _Run) -> None:
    """The run's spending in its counts (the runs row): calls, retries, tokens and, when every price was known, dollars."""
    if not run.panel.judges:
        return
    usage = run.usage
    report.counts.update({"calls": usage.calls, "retries": usage.retries, "input_tokens": usage.input_tokens,
                          "output_tokens": usage.output_tokens})
    report.counts["cost_usd"] = round(usage.cost_usd or 0.0, 6)
    if run.cost_unknown:
        report.counts["cost_unknown"] = 1
    report.counts.setdefault(WAITING, 0)
