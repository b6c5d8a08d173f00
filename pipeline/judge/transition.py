"""A model transition (seed 000's Model Transition Policy): before one judge model replaces another in the panel, read a
reproducible sample of judged servers' current tools with both, exactly as the panel asks (pipeline.judge.prompt.ask),
within the panel's per-provider limits and a token or cost cap, and decide whether the aggregate shift is within
tolerance (pipeline.judge.shift; deviations 124-126). The decision is stored; the verdicts are not.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from threading import Event, Lock
from typing import Any, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.judge.limits import Limits, Pace, RateLimiter
from pipeline.judge.prompt import PROMPT_VERSION, ask
from pipeline.judge.shift import Comparison, compare, decide, sample
from pipeline.judging import panel_consensus, text_hash
from pipeline.llm import LLMError, Provider, SpendCap, Usage
from pipeline.models import Judgement, ModelTransition, TransitionServer
from pipeline.progress import Progress

HOPELESS = frozenset({"auth", "config"})  # a judge failing so will fail every call: it is asked nothing more


@dataclass
class _Judge:
    provider: Provider
    limits: Limits
    failures: int = 0
    first_error: str | None = None

    @property
    def label(self) -> str:
        return f"{self.provider.provider}:{self.provider.model}"


@dataclass
class _Server:
    server_id: str
    tools: list[dict[str, Any]]
    outstanding: int
    read: dict[int, list[Judgement]] = field(default_factory=dict)  # judge index -> its verdicts, as unstored judgements
    incomplete: set[int] = field(default_factory=set)  # judges that did not read every tool


def population(db: Database) -> dict[str, list[dict[str, Any]]]:
    """The judged servers and their current tools: active, with a real judge's judgement of a tool text still listed."""
    judged = store.really_judged_servers(db)
    found: dict[str, list[dict[str, Any]]] = {}
    for chunk, marks in store.in_chunks(judged):
        probes = store.latest_probes(db, list(chunk))
        keys = {(r[0], r[1], r[2]) for r in db.execute(
            f"select server_id, tool_name, tool_hash from judgements where offline = 0 and retired = 0 and server_id in ({marks})",
            list(chunk))}
        for server_id in chunk:
            tools = probes[server_id][1].tools if server_id in probes else None
            if tools and any((server_id, str(t.get("name", "")), text_hash(t)) in keys for t in tools):
                found[server_id] = tools
    return found


def run_transition(db: Database, *, old: Provider, new: Provider, limits: Sequence[Limits], sample_size: int, seed: int,
                   now: datetime, spend: SpendCap = SpendCap(), progress: Progress | None = None) -> ModelTransition:
    """Read a sample of `sample_size` judged servers (drawn by `seed`) with `old` and `new` (`limits`: each one's in-flight
    and request-rate limits), decide, store the decision and return it."""
    judges = [_Judge(old, limits[0]), _Judge(new, limits[1])]
    tools_of = population(db)
    chosen = sample(list(tools_of), sample_size, seed)
    states = [_Server(sid, tools_of[sid], 2 * len(tools_of[sid])) for sid in chosen]
    progress = progress or Progress("judge-transition", len(states))
    usage, stopped_by = _read(judges, states, spend, progress, now)
    readings = [(s, _reading(s, 0, old.model), _reading(s, 1, new.model)) for s in states]
    pairs = [(o, n) for _, o, n in readings if o is not None and n is not None]
    comparison = compare(pairs) if pairs else None
    failures = [f"{j.label}: {j.failures} failed calls, the first: {j.first_error}" for j in judges if j.failures]
    failures += [stopped_by] if stopped_by else []
    decision = decide(comparison, len(states), failures)
    transition = ModelTransition(
        decided_at=now, from_judge=judges[0].label, to_judge=judges[1].label, prompt_version=PROMPT_VERSION, seed=seed,
        sampled=len(states), compared=len(pairs), accepted=decision.accepted, reason=decision.reason,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usage.cost_usd,
        servers=[TransitionServer(server_id=s.server_id, tools=len(s.tools), reading_from=o, reading_to=n) for s, o, n in readings],
        **_figures(comparison),
    )
    store.record_transition(db, transition)
    return transition


def _figures(comparison: Comparison | None) -> dict[str, Any]:
    if comparison is None:
        return {}
    quantiles = {name: [round(d.p10, 2), round(d.p50, 2), round(d.p90, 2)]
                 for name, d in (("from", comparison.old), ("to", comparison.new), ("delta", comparison.delta))}
    return {"mean_from": round(comparison.old.mean, 3), "mean_to": round(comparison.new.mean, 3), "shift": round(comparison.shift, 3),
            "quantiles": quantiles}


def _reading(state: _Server, index: int, model: str) -> float | None:
    """A judge's reading of a server, as Schema Interpretability computes it: None unless it read every current tool."""
    if index in state.incomplete:
        return None
    names = {str(t.get("name", "")) for t in state.tools}
    return panel_consensus(state.read.get(index, []), names).models.get(model)


class _Reading:
    """Both judges' requests: a thread pool and a rate limiter per judge; spending counted, and the cap checked, on the
    thread that made the request, so the next one already sees a spent budget or a judge that cannot answer."""

    def __init__(self, judges: list[_Judge], spend: SpendCap, progress: Progress) -> None:
        self.judges, self.spend, self.progress = judges, spend, progress
        # Two models of one family share its request rate: a provider may count it per account (Mistral's is per workspace).
        shared = {j.provider.provider: RateLimiter(min(k.limits.per_second for k in judges if k.provider.provider == j.provider.provider))
                  for j in judges}
        self.paces = [Pace(shared[j.provider.provider]) for j in judges]
        self.stop = Event()
        self.lock = Lock()
        self.usage = Usage()
        self.stopped_by: str | None = None

    def ask(self, index: int, tool: dict[str, Any]) -> Any:
        """A verdict's completion, an LLMError, or None when the reading stopped before this request; paced as the panel
        paces a judge (pipeline.judge.limits.Pace)."""
        return self.paces[index].send(lambda: self._request(index, tool))

    def _request(self, index: int, tool: dict[str, Any]) -> Any:
        judge = self.judges[index]
        if self.stop.is_set():
            return None
        self.paces[index].rate.wait()
        if self.stop.is_set():
            return None
        try:
            outcome: Any = ask(judge.provider, tool)
        except LLMError as error:
            outcome = error
            if error.kind in HOPELESS:  # a refused key or a bad setting: every further call would fail alike
                self.halt(f"{judge.label} cannot be asked ({error.kind}): nothing can be compared")
        self.paces[index].answered(outcome)
        with self.lock:
            self.usage = self.usage + outcome.usage
            tokens, cost = self.usage.input_tokens + self.usage.output_tokens, self.usage.cost_usd
        reason = self.spend.reached(tokens, cost or 0.0, cost is None)
        if reason:
            self.halt(reason)
        return outcome

    def halt(self, reason: str) -> None:
        with self.lock:
            if self.stopped_by is not None:
                return
            self.stopped_by = reason
        self.stop.set()
        self.progress.note(f"{reason}: no further request is started")


def _read(judges: list[_Judge], states: list[_Server], spend: SpendCap, progress: Progress, now: datetime) -> tuple[Usage, str | None]:
    """Ask both judges about every sampled tool, each within its limits; returns the usage and, when the reading was
    stopped (the cap, a judge that cannot answer), why."""
    reading = _Reading(judges, spend, progress)
    with ExitStack() as stack:
        pools = [stack.enter_context(ThreadPoolExecutor(j.limits.in_flight, thread_name_prefix=f"transition-{j.provider.provider}"))
                 for j in judges]
        futures: dict[Future, tuple[_Server, int, dict[str, Any]]] = {
            pools[i].submit(reading.ask, i, tool): (state, i, tool) for state, i, tool in _tasks(states, len(judges))}
        try:
            for future in as_completed(futures):
                state, index, tool = futures[future]
                outcome = future.result()
                state.outstanding -= 1
                if isinstance(outcome, LLMError):
                    _failed(judges[index], outcome, progress)
                if outcome is None or isinstance(outcome, LLMError):
                    state.incomplete.add(index)
                else:
                    verdict = outcome.value
                    state.read.setdefault(index, []).append(Judgement(
                        server_id=state.server_id, tool_name=str(tool.get("name", "")), tool_hash=text_hash(tool),
                        provider=judges[index].provider.provider, model=judges[index].provider.model, offline=False, judged_at=now,
                        clarity=verdict.clarity, input_completeness=verdict.input_completeness, confidence=verdict.confidence))
                if not state.outstanding:
                    read = [f"{j.label} {'read' if i not in state.incomplete else 'did not read'} all" for i, j in enumerate(judges)]
                    progress.step(state.server_id, f"{len(state.tools)} tools; " + ", ".join(read), ok=not state.incomplete)
        except KeyboardInterrupt:
            reading.stop.set()
            raise
    return reading.usage, reading.stopped_by


def _tasks(states: list[_Server], judges: int) -> Iterator[tuple[_Server, int, dict[str, Any]]]:
    """Server by server, each tool for each judge, so the sample's first servers finish first."""
    for state in states:
        for tool in state.tools:
            for index in range(judges):
                yield state, index, tool


def _failed(judge: _Judge, error: LLMError, progress: Progress) -> None:
    judge.failures += 1
    if judge.first_error is None:
        judge.first_error = str(error)
        progress.note(f"{judge.label} failed: {error}")


def report_lines(transition: ModelTransition, seconds: float) -> list[str]:
    """The printed report: the sample, the two distributions, the per-server changes, the shift and the decision."""
    t = transition
    lines = [f"model transition {t.from_judge} -> {t.to_judge} (prompt {t.prompt_version}): {t.sampled} servers sampled "
             f"(seed {t.seed}), {t.compared} read in full by both"]
    if t.quantiles:
        (f10, f50, f90), (t10, t50, t90), (d10, d50, d90) = t.quantiles["from"], t.quantiles["to"], t.quantiles["delta"]
        deltas = sorted(((s.reading_to or 0) - (s.reading_from or 0), s.server_id) for s in t.servers
                        if s.reading_from is not None and s.reading_to is not None)
        up, down = sum(1 for d, _ in deltas if d > 0), sum(1 for d, _ in deltas if d < 0)
        lines += [f"  {t.from_judge:<32} mean {t.mean_from:6.2f}   p10 {f10:6.2f}  p50 {f50:6.2f}  p90 {f90:6.2f}",
                  f"  {t.to_judge:<32} mean {t.mean_to:6.2f}   p10 {t10:6.2f}  p50 {t50:6.2f}  p90 {t90:6.2f}",
                  f"  per-server change (points): p10 {d10:+.2f}  p50 {d50:+.2f}  p90 {d90:+.2f}; {up} up, {down} down, "
                  f"{len(deltas) - up - down} unchanged",
                  "  largest changes: " + ", ".join(f"{sid} {d:+.1f}" for d, sid in sorted(deltas, key=lambda x: -abs(x[0]))[:5]),
                  f"  aggregate shift {t.shift:+.2f}% (relative change of the mean reading; tolerance under 3%)"]
    missing = [s.server_id for s in t.servers if s.reading_from is None or s.reading_to is None]
    if missing:
        lines.append(f"  not read in full by both: {len(missing)} ({', '.join(missing[:5])}{', …' if len(missing) > 5 else ''})")
    cost = "unknown cost" if t.cost_usd is None else f"${t.cost_usd:.4f}"
    lines.append(f"  spent {t.input_tokens:,} input and {t.output_tokens:,} output tokens, {cost}, in {seconds:.1f} s")
    lines.append(("switch accepted: " if t.accepted else "switch refused: ") + t.reason)
    return lines
