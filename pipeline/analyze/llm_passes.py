"""The optional LLM passes of static analysis (seed 000): tool extraction and endpoint discovery (the "extract" model),
the three source-inference passes and a behavioural review (the "infer" model), over the shared provider layer.

Optional and additive (deviations 127–133): without a configured model none runs and the deterministic analysis is
the whole analysis. A pass is keyed by (pass, model, prompt version, hash of what it is sent) and its answer stored
(`llm_answers`), so an unchanged input is never sent again. Each call is admitted by the run's allowance (the stage's
wall-clock budget, --max-tokens, --max-cost); a pass refused by it waits and is counted, a call that fails (refused,
malformed, rate-limited past its retries) is recorded with why, and the server's deterministic analysis stands either way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.llm_answers import (
    EVIDENCE_NOTE,
    INFERENCE_PASSES,
    PROMPT_VERSIONS,
    QUESTIONS,
    EndpointsAnswer,
    InferenceAnswer,
    Rejected,
    ReviewAnswer,
    ToolsAnswer,
    read_inference,
    read_review,
    read_tools,
)
from pipeline.analyze.llm_input import MAX_README_CHARS, MAX_SOURCE_CHARS, Enclosed, enclose, label, rules, source_parts
from pipeline.fleet.budget import NO_BUDGET, Deadline
from pipeline.llm import LLMError, Provider, SpendCap, Usage
from pipeline.models import AnalysisResult, ExtractedTool, LLMAnswer

T = TypeVar("T", bound=BaseModel)
ROLE = "You analyse the source of a Model Context Protocol (MCP) server for a public scoreboard."
OUTPUT_TOKENS = {"tools": 8_000, "endpoints": 600, "error_handling": 800, "fuzz": 800, "auth": 800, "review": 1_500}
Key = tuple[str, str, str, str]  # (pass, model, prompt version, input hash)


def model_label(provider: Provider) -> str:
    return f"{provider.provider}:{provider.model}"


class Allowance:
    """The run's allowance for LLM calls, shared by the stage's worker threads: the wall-clock deadline, a token cap and
    a cost cap. A call is admitted while none is reached; calls in flight may take the total past a cap by their own
    size (at most one call per worker). With --max-cost, a call whose price is unknown ends the run's calls: a cap that
    cannot be counted is not kept by guessing (deviation 132)."""

    def __init__(self, deadline: Deadline = NO_BUDGET, max_tokens: int | None = None, max_cost: float | None = None) -> None:
        self.deadline, self.cap = deadline, SpendCap(max_tokens, max_cost)
        self.used = Usage()
        self.counts = {"llm_calls": 0, "llm_cached": 0, "llm_failed": 0, "llm_waiting": 0}
        self._unpriced = False
        self._lock = threading.Lock()

    def refusal(self) -> str | None:
        """Why no further call may start, or None."""
        with self._lock:
            if self.deadline.expired():
                return "the stage's --budget is spent"
            return self.cap.reached(self.used.input_tokens + self.used.output_tokens, self.used.cost_usd or 0.0, self._unpriced)

    def spend(self, usage: Usage) -> None:
        with self._lock:
            self._unpriced = self._unpriced or usage.cost_usd is None
            self.used = self.used + usage

    def count(self, outcome: str) -> None:
        with self._lock:
            self.counts[f"llm_{outcome}"] += 1

    def summary(self) -> str:
        used = self.used
        cost = "cost unknown" if self._unpriced else f"${used.cost_usd or 0.0:.4f}"
        return (f"LLM passes: {self.counts['llm_calls']} calls, {self.counts['llm_cached']} answered from the cache, "
                f"{self.counts['llm_failed']} failed, {self.counts['llm_waiting']} waiting for the budget; "
                f"{used.input_tokens} input + {used.output_tokens} output tokens, {cost}")


@dataclass
class LLMPasses:
    """What the stage is given: the extraction model, the inference model (either may be None) and the run's allowance."""

    extract: Provider | None
    infer: Provider | None
    allowance: Allowance = field(default_factory=Allowance)

    def for_server(self, stored: list[LLMAnswer]) -> ServerPasses:
        return ServerPasses(self, {(a.pass_name, a.model, a.prompt_version, a.input_hash): a for a in stored})


@dataclass
class Outcome:
    """What the passes found for one server, for analyze_source to combine with the deterministic results."""

    tools: list[ExtractedTool] | None = None
    urls: list[str] = field(default_factory=list)
    readme_sent: str = ""  # the README text endpoint discovery was sent: an LLM endpoint must be written in it
    endpoints_model: str = ""
    inference: dict[str, dict[str, Any]] = field(default_factory=dict)
    review: dict[str, Any] | None = None
    record: dict[str, Any] = field(default_factory=dict)  # pass -> its provenance: model, prompt version, input hash, status, usage


@dataclass
class ServerPasses:
    """The passes of one server: its stored answers (looked up by key) and the answers this run adds (saved with its analysis)."""

    passes: LLMPasses
    stored: dict[Key, LLMAnswer]
    fresh: list[LLMAnswer] = field(default_factory=list)

    def run(self, files: list[SourceFile], readme: str | None, tools: list[ExtractedTool] | None, server_code: bool,
            now: datetime) -> Outcome:
        outcome = Outcome()
        extract, infer = self.passes.extract, self.passes.infer
        source = enclose(source_parts(files), MAX_SOURCE_CHARS, "source") if files else None
        sent = {label(name): f for (name, _), f in zip(source_parts(files), files) if source is not None and label(name) in source.sent}
        if extract is not None and source is not None and tools is None and server_code:
            answer = self._ask("tools", extract, source, ToolsAnswer, now, outcome)
            if answer is not None:
                found, dropped = read_tools(answer, sent, model_label(extract))
                outcome.tools = found or None
                outcome.record["tools"].update({"found": len(found), "dropped": dropped})
        if extract is not None and readme:
            enclosed = enclose([("README", readme)], MAX_README_CHARS, "readme")
            answer = self._ask("endpoints", extract, enclosed, EndpointsAnswer, now, outcome)
            if answer is not None:
                outcome.urls, outcome.readme_sent, outcome.endpoints_model = answer.urls, readme[:MAX_README_CHARS], model_label(extract)
        if infer is not None and source is not None:
            for name in (*INFERENCE_PASSES, "review"):
                answer = self._ask(name, infer, source, ReviewAnswer if name == "review" else InferenceAnswer, now, outcome)
                try:
                    if isinstance(answer, InferenceAnswer):
                        outcome.inference[name] = read_inference(name, answer, set(sent))
                    elif isinstance(answer, ReviewAnswer):
                        outcome.review = read_review(answer, set(sent))
                except Rejected as exc:
                    outcome.record[name].update({"status": "failed", "kind": "malformed", "error": str(exc)})
                    self.passes.allowance.count("failed")
        return outcome

    def _ask(self, name: str, provider: Provider, enclosed: Enclosed, schema: type[T], now: datetime, outcome: Outcome) -> T | None:
        """The pass's answer: stored under its key, else asked now (when the allowance admits it); None when it waits or fails."""
        model, version = model_label(provider), PROMPT_VERSIONS[name]
        record: dict[str, Any] = {"model": model, "prompt_version": version, "input_hash": enclosed.input_hash,
                                  "sent": len(enclosed.sent), "left_out": list(enclosed.left_out[:20])}
        outcome.record[name] = record
        allowance = self.passes.allowance
        stored = self.stored.get((name, model, version, enclosed.input_hash))
        if stored is not None:
            try:
                answer = schema.model_validate(stored.answer)
            except ValueError:
                answer = None  # an answer stored by an older reading of the schema: asked again
            if answer is not None:
                record.update({"status": "cached", "usage": _usage(stored), "answered_at": stored.created_at.isoformat()})
                allowance.count("cached")
                return answer
        refused = allowance.refusal()
        if refused is not None:
            record.update({"status": "waiting", "why": refused})
            allowance.count("waiting")
            return None
        question = QUESTIONS[name] + (EVIDENCE_NOTE if name in INFERENCE_PASSES else "")
        try:
            completion = provider.complete(system=f"{ROLE}\n\n{question}\n\n{rules(enclosed.boundary)}", user=enclosed.text,
                                           schema=schema, schema_name=f"{name}_answer", max_output_tokens=OUTPUT_TOKENS[name])
        except LLMError as exc:
            allowance.spend(exc.usage)  # a malformed answer was paid for
            record.update({"status": "failed", "kind": exc.kind, "error": str(exc)[:300], "usage": _spent(exc.usage)})
            allowance.count("failed")
            return None
        except Exception as exc:  # noqa: BLE001 - one pass's failure must not cost the server its deterministic analysis
            record.update({"status": "failed", "kind": "error", "error": f"{type(exc).__name__}: {str(exc)[:250]}"})
            allowance.count("failed")
            return None
        allowance.spend(completion.usage)
        allowance.count("calls")
        usage = completion.usage
        self.fresh.append(LLMAnswer(pass_name=name, model=model, prompt_version=version, input_hash=enclosed.input_hash,
                                    answer=completion.value.model_dump(mode="json"), input_tokens=usage.input_tokens,
                                    output_tokens=usage.output_tokens, cost_usd=usage.cost_usd, created_at=now))
        record.update({"status": "ok", "usage": _spent(usage)})
        return completion.value


def waiting(analysis: AnalysisResult) -> bool:
    """Whether an analysis has LLM passes the run's allowance held back."""
    passes = (analysis.metrics.get("llm") or {}).get("passes") or {}
    return any(isinstance(p, dict) and p.get("status") == "waiting" for p in passes.values())


def _spent(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost_usd": usage.cost_usd, "calls": usage.calls,
            "retries": usage.retries}


def _usage(stored: LLMAnswer) -> dict[str, Any]:
    return {"input_tokens": stored.input_tokens, "output_tokens": stored.output_tokens, "cost_usd": stored.cost_usd}
