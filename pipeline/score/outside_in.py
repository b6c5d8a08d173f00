"""The `outside-in` rubric (seed 003): reach, P95, tool success and protocol conformance over 30
days of runs, a verdict bonus, and a Rank Score that shrinks thin evidence toward a neutral prior.

A run is a deep or sandbox probe: the seed is "run-based, not a continuous synthetic heartbeat", so
the monitor's fast probes are no runs of this rubric (deviation 14). Displayed = 0.35·reach +
0.25·latency + 0.25·tool success + 0.15·conformance, renormalised over the components present.
Rank Score = the same after replacing each rate p, measured over its own n runs, by
(n·p + n₀·p₀)/(n + n₀), n₀ = 7, p₀ = 0.5 (latency is never shrunk), plus the verdict bonus, which
is ranking math (deviation 13): the seed's worked example shows 80.9 displayed beside a rank of 51.7 + 5 = 56.7.
Both are capped at 100. A local server's latency is not applicable: we start it, so its timings
are our machine's (deviation 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline import eras, latency
from pipeline.latency import REACHED
from pipeline.models import BoardColumn, DimensionScore, RubricInfo
from pipeline.outcomes import MIN_FAILED_ATTEMPTS, VERDICT_SPAN, measured
from pipeline.score.engine import Dimension, Outcome, Rubric, RuleSet, give_weights, renormalised, share, unmeasured
from pipeline.score.facts import Facts, RunRow

RUBRIC = "outside-in"
RULES_VERSION = "outside-in/1.1"
WEIGHTS = {"reach": 35, "latency": 25, "tool_success": 25, "conformance": 15}
N0, P0 = 7, 0.5  # shrinkage strength and neutral prior
LOW_SAMPLE = 7
VERDICT_BONUS = {"Operational": 5.0, "Impaired": 2.5, "Down": 0.0}  # seed: Operational +5; Impaired and Down are ours (deviation 13)
RUN_PARTS = {"reachable": 30, "transport": 25, "discovery": 25, "invocation": 20}
RULES = RuleSet()
rule = RULES.rule


def _local(facts: Facts) -> str | None:
    if facts.server.is_local:
        return "local server started by the scoreboard: its handshake time is our machine's, not the server's"
    return None


DIMENSIONS = (
    Dimension("reach", "Reach (30d)", WEIGHTS["reach"]),
    Dimension("latency", "Latency P95", WEIGHTS["latency"], applicable=_local),
    Dimension("tool_success", "Tool success", WEIGHTS["tool_success"]),
    Dimension("conformance", "Protocol conformance", WEIGHTS["conformance"]),
)


def latency_score(p95_ms: float) -> float:
    """≤ 200 ms → 100, linear to 0 at ≥ 2000 ms."""
    if p95_ms <= 200:
        return 100.0
    if p95_ms >= 2000:
        return 0.0
    return 100.0 * (2000 - p95_ms) / 1800


def shrink(rate: float, n: int) -> float:
    return (n * rate + N0 * P0) / (n + N0)


def run_conformance(run: RunRow) -> float:
    """One run: reachable 30 / transport 25 / discovery 25 / invocation 20, renormalised over what the run measured."""
    parts = {"reachable": 1.0 if run.outcome in REACHED else 0.0, "transport": 1.0 if run.outcome == "ok" else 0.0,
             "discovery": 1.0 if run.tool_count is not None else 0.0}
    if run.invocations:
        parts["invocation"] = sum(1 for i in run.invocations if i.answered) / len(run.invocations)
    total = sum(RUN_PARTS[k] for k in parts)
    return sum(RUN_PARTS[k] * v for k, v in parts.items()) / total


@dataclass
class Components:
    """The four components, and the runs each rate was measured over (its own n, for the Rank Score's shrinkage)."""

    n: int  # measured runs: reach and conformance are rates over all of them
    tool_runs: int  # the runs that called a safe tool: tool success is a rate over these
    reach: float | None
    latency: float | None
    p95_ms: float | None
    tool_success: float | None
    invocation_rate: float | None
    functional_rate: float | None
    conformance: float | None


def components(facts: Facts) -> Components:
    """Computed once per scoring pass."""
    if "outside-in.components" not in facts.memo:
        facts.memo["outside-in.components"] = _components(facts)
    return facts.memo["outside-in.components"]


def measured_runs(facts: Facts) -> list[RunRow]:
    """The deep and sandbox runs that say something of the server (pipeline.outcomes): a 429, an opt-out, our own
    refusal and a sandbox run our sandbox may have failed are left out."""
    return [r for r in facts.runs if measured(r.kind, r.outcome)]


def _components(facts: Facts) -> Components:
    runs = measured_runs(facts)
    n = len(runs)
    if not n or facts.never_reached:  # failures that do not stand yet are no runs to rate it by
        return Components(0, 0, None, None, None, None, None, None, None)
    reach = sum(1 for r in runs if r.outcome in REACHED) / n
    timed = [] if facts.server.is_local else [r.connect_ms for r in runs if r.outcome == "ok" and r.connect_ms is not None]
    p95_ms = latency.percentile({}, 0.95, exact=timed)  # the runs' own timings, exact (nearest rank)
    invocation, functional, success = _tool_rates(runs)
    return Components(n, sum(1 for r in runs if r.invocations), reach, latency_score(p95_ms) / 100 if p95_ms is not None else None,
                      p95_ms, success, invocation, functional, sum(run_conformance(r) for r in runs) / n)


def _tool_rates(runs: list[RunRow]) -> tuple[float | None, float | None, float | None]:
    """(invocation rate, functional rate, tool success) over the deep runs' calls to safe tools."""
    calls = [i for r in runs if r.invocations for i in r.invocations]
    invocation = sum(1 for i in calls if i.answered) / len(calls) if calls else None  # a refusal of input we made up is handled
    judged = [i for i in calls if i.functional is not None]
    functional = sum(1 for i in judged if i.functional) / len(judged) if judged else None
    if invocation is not None and functional is not None:
        success = 0.6 * invocation + 0.4 * functional
    else:
        success = invocation if invocation is not None else functional
    return invocation, functional, success


@rule("reach", WEIGHTS["reach"])
def reach(facts: Facts) -> Outcome:
    """Reach (35%): reachable runs ÷ all MCP runs over the last 30 days."""
    c = components(facts)
    if c.reach is None:
        return unmeasured(facts.never_reached or "no runs in 30 days")
    return share(c.reach, f"{100 * c.reach:.1f}% of {c.n} runs reached the server")


@rule("latency", WEIGHTS["latency"])
def latency_p95(facts: Facts) -> Outcome:
    """Latency P95 (25%): ≤ 200 ms scores 100, falling linearly to 0 at ≥ 2000 ms."""
    c = components(facts)
    if c.latency is None:
        return unmeasured("no successful run to time")
    return share(c.latency, f"P95 {c.p95_ms:.0f} ms over successful runs",
                 how_to_gain=None if c.latency >= 1 else "answer the handshake within 200 ms at the 95th percentile")


@rule("tool_success", WEIGHTS["tool_success"])
def tool_success(facts: Facts) -> Outcome:
    """Tool success (25%): invocation rate × 0.6 + functional rate × 0.4, or whichever exists."""
    c = components(facts)
    if c.tool_success is None:
        return unmeasured("no safe tool was called in 30 days",
                          "expose a tool the probe may call: readOnlyHint: true, openWorldHint: false, a read verb in its name")
    parts = []
    if c.invocation_rate is not None:
        parts.append(f"invoke {100 * c.invocation_rate:.0f}%")
    if c.functional_rate is not None:
        parts.append(f"functional {100 * c.functional_rate:.0f}%")
    return share(c.tool_success, f"{', '.join(parts)} over {c.tool_runs} runs that called a tool")


@rule("conformance", WEIGHTS["conformance"])
def protocol_conformance(facts: Facts) -> Outcome:
    """Protocol conformance (15%): per run, reachable 30 / transport 25 / discovery 25 / invocation 20, averaged over runs."""
    c = components(facts)
    if c.conformance is None:
        return unmeasured(facts.never_reached or "no runs in 30 days")
    return share(c.conformance, f"average {100 * c.conformance:.1f}% over {c.n} runs")


FAILURES = {"timeout": "timed out", "crashed": "crashed", "protocol_error": "protocol error"}  # status chips of a Down server


def status(facts: Facts) -> tuple[str | None, str]:
    """(verdict, status chip): the chip names the cause whenever the probe classified it. No run, no verdict (deviation
    82): a server never probed is not Down."""
    if facts.never_reached:
        return "Down", facts.failures.wording
    runs = measured_runs(facts)
    if not runs:
        return None, "unrated"
    return _failure(runs[-1].outcome) or _impairment(facts) or _operational(facts)


def _failure(outcome: str) -> tuple[str, str] | None:
    """What the latest run's outcome says when it did not succeed."""
    if outcome == "auth_required":
        return "Impaired", "auth required"
    if outcome != "ok":
        return "Down", FAILURES.get(outcome, "unreachable")
    return None


def _impairment(facts: Facts) -> tuple[str, str] | None:
    """A server that answers but speaks one era only, or whose safe tools all fail."""
    eras = facts.probe.eras if facts.probe else None
    if eras and eras.modern is not None and eras.legacy is not None and eras.modern != eras.legacy:
        return "Impaired", "modern only, legacy fails" if eras.modern else "legacy only, modern fails"
    calls = facts.probe.invocations if facts.probe and facts.probe.reachable else None
    if calls and not any(c.answered for c in calls):
        return "Impaired", "tool calls fail"
    return None


def _operational(facts: Facts) -> tuple[str, str]:
    """An operational server's chip: the eras it speaks."""
    eras = facts.probe.eras if facts.probe else None
    era = facts.probe.era if facts.probe else None
    if eras and eras.modern and eras.legacy:
        return "Operational", "dual-era"
    return "Operational", {"modern": "modern (2026-07-28)", "legacy": "legacy (session)"}.get(era or "", "operational")


def spec_readiness(facts: Facts) -> float | None:
    """0–100 beside the score: modern path, server/discover, header routing, list-cache hints (25 each). Over stdio
    there are no headers to route on, so the other three share the 100."""
    probe = facts.probe
    if probe is None or not probe.reachable:
        return None
    eras = probe.eras
    if eras is None:
        modern = probe.era == "modern"
        return 50.0 if modern else 0.0  # only what the handshake itself proves: the modern path and discover
    signals = [eras.modern, eras.discover, eras.list_cache_hints]
    if probe.transport != "stdio":
        signals.append(eras.header_routing)
    return 100.0 * sum(1 for s in signals if s) / len(signals)


def _rates(c: Components) -> dict[str, float | None]:
    return {"reach": c.reach, "latency": c.latency, "tool_success": c.tool_success, "conformance": c.conformance}


def rank_rates(c: Components) -> dict[str, float | None]:
    """Each rate shrunk toward the prior with the n it was measured over: tool success over the runs that called a
    tool, reach and conformance over every run. Latency is never shrunk."""
    n = {"reach": c.n, "tool_success": c.tool_runs, "conformance": c.n}
    return {k: shrink(v, n[k]) if v is not None and k in n else v for k, v in _rates(c).items()}


def displayed(facts: Facts, dimensions: list[DimensionScore]) -> float | None:
    """The weighted rates, renormalised over the components present, capped at 100."""
    base, effective = renormalised(_rates(components(facts)), WEIGHTS, scale=100)
    give_weights(dimensions, effective)
    return min(100.0, base) if base is not None else None


def visibility(facts: Facts, dimensions: list[DimensionScore], composite: float | None) -> str:
    n = components(facts).n
    return "unrated" if n == 0 else "low sample" if n < LOW_SAMPLE else "rated"


def extra(facts: Facts, composite: float | None) -> dict:
    """Rank score (thin evidence shrunk toward the prior, plus the verdict bonus), status, runs, p95, readiness, trend."""
    c = components(facts)
    verdict, chip = status(facts)
    bonus = VERDICT_BONUS[verdict] if c.n and verdict else 0.0
    rank_base = renormalised(rank_rates(c), WEIGHTS, scale=100)[0]
    rank = min(100.0, rank_base + bonus) if rank_base is not None else None
    trend = None
    if composite is not None and facts.yesterday.get(RUBRIC) is not None:
        trend = round(composite - facts.yesterday[RUBRIC], 1)
    return {
        "rank_score": round(rank, 1) if rank is not None else None,
        "runs": c.n,
        "verdict": verdict,
        "status": chip,
        "verdict_bonus": bonus,
        "p95_ms": round(c.p95_ms, 1) if c.p95_ms is not None else None,
        "spec_readiness": spec_readiness(facts),
        "trend": trend,
    }


# The verdicts and status chips in plain words: what each says of the server and means for a client, said once under the
# board; a server page shows the one its card has.
LEGEND = (
    ("Protocol eras", eras.ERAS),
    ("Operational", f"the latest run reached the server and negotiated a protocol era with it: {VERDICT_BONUS['Operational']:g} added to "
                    "the Rank Score"),
    ("Impaired", f"it answers, but something a client needs is missing or fails, as its status says: {VERDICT_BONUS['Impaired']:g} added "
                 "to the Rank Score"),
    ("Down", f"the latest run could not reach it, or it timed out, crashed or broke the protocol: {VERDICT_BONUS['Down']:g} added"),
    ("dual-era", "operational in both protocol eras"),
    ("legacy (session)", "operational in the legacy era; whether the modern one answers was not measured"),
    ("modern (2026-07-28)", "operational in the modern era; whether the legacy one answers was not measured"),
    ("legacy only, modern fails", "it answers only the legacy era, so a client that speaks only MCP 2026-07-28 cannot connect (Impaired)"),
    ("modern only, legacy fails", "it answers only the modern era, so older clients and SDKs, which send initialize, cannot connect (Impaired)"),
    ("auth required", "it answers, but asks for credentials we do not hold, so its tools could not be listed (Impaired)"),
    ("tool calls fail", "it answers, but every safe tool we called failed (Impaired)"),
    ("unreachable from here", f"its failures to answer do not stand yet: they count once {MIN_FAILED_ATTEMPTS} attempts, the first and the "
                              f"last {VERDICT_SPAN.total_seconds() / 3600:g} hours apart or more, have failed; until then it is not rated"),
)

OUTSIDE_IN = Rubric(
    info=RubricInfo(RUBRIC, "Outside-in", "Outside-in",
                    "The outside-in score: did a client reach the server, speak its protocol era, list and call its tools, over 30 days "
                    "of runs; ranked by Rank Score, which pulls a score measured on few runs toward 50%.", RULES_VERSION,
                    extra_columns=(BoardColumn("extra.rank_score", "Rank score", "num"), BoardColumn("extra.status", "Status"),
                                   BoardColumn("extra.runs", "Runs", "num"), BoardColumn("extra.p95_ms", "P95 ms", "num"),
                                   BoardColumn("extra.spec_readiness", "Spec readiness")),
                    nav="Outside-in", rank_by="rank_score", legend=LEGEND),
    dimensions=DIMENSIONS,
    rules=tuple(RULES.rules),
    composite=displayed,
    visibility=visibility,
    extra=extra,
    tables=("weights", "rules"),
)
