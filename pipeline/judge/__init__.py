"""Judge: rate each tool's schema for interpretability (clarity, input completeness, confidence).

Providers sit behind one Protocol. With no API key the default is the offline judge: a
deterministic heuristic, always labelled `offline`, whose judgements are shown but never
counted as the multi-model consensus of seed 000's Schema Interpretability dimension.
Only changed tool text is re-judged (by content hash). Seed 000 runs the evaluation only for servers with at
least Assessed visibility: a server is judged once its latest headline card says so (the score stage then counts
the judgements). A hosted endpoint is judged whatever its tier: seed 004's judged reading waits for the judgement
("it resolves by itself once the judgement lands") and charges the endpoint until it does.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Protocol, Sequence

from sqlite_utils import Database

from pipeline import store
from pipeline.fleet.budget import NO_BUDGET, SKIPPED, Deadline
from pipeline.judge.offline import OfflineJudge
from pipeline.judging import text_hash
from pipeline.listing_only import listing_only
from pipeline.models import Judgement, Server, StageReport
from pipeline.progress import Progress
from pipeline.visibility import HEADLINE_RUBRIC, at_least_assessed

__all__ = ["LLMProvider", "OfflineJudge", "run_judge"]


class LLMProvider(Protocol):
    provider: str
    model: str
    offline: bool

    def judge_tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        """Return {"clarity", "input_completeness", "confidence"} in 0–100 and a short "rationale"."""
        ...


def run_judge(
    db: Database, *, servers: Sequence[Server], providers: Sequence[LLMProvider], now: datetime, progress: Progress | None = None,
    deadline: Deadline = NO_BUDGET,
) -> StageReport:
    """Judge each server's new tool texts, in the order given; once `deadline` passes the server being judged is finished
    (its judgements are one transaction) and the rest are counted skipped_budget."""
    started = time.monotonic()
    report = StageReport(stage="judge", counts={"judged": 0, "unchanged": 0, "no_tools": 0, "below_assessed": 0})
    progress = progress or Progress("judge", len(servers))
    tiers = store.visibilities(db, [s.id for s in servers], HEADLINE_RUBRIC)
    try:
        for position, server in enumerate(servers):
            if deadline.expired():
                report.counts[SKIPPED] = len(servers) - position
                break
            if not listing_only(server):
                store.mark_examined(db, "judge", [server.id], now)
            if listing_only(server):  # deviation 80: no tools could ever be captured
                report.counts["listing_only"] = report.counts.get("listing_only", 0) + 1
                progress.step(server.id, "not judged: listing only")
                continue
            if server.is_local and not at_least_assessed(tiers.get(server.id)):
                report.counts["below_assessed"] += 1
                progress.step(server.id, f"not judged: visibility {tiers.get(server.id, 'not scored yet')}, Assessed needed")
                continue
            latest = store.latest_probe(db, server.id)
            tools = latest[1].tools if latest else None
            if not tools:
                report.counts["no_tools"] += 1
                progress.step(server.id, "no tools captured yet")
                continue
            fresh: list[Judgement] = []
            for provider in providers:
                done = store.judged_hashes(db, server.id, provider.model)
                for tool in tools:
                    digest = text_hash(tool)
                    if (str(tool.get("name", "")), digest) in done:
                        report.counts["unchanged"] += 1
                        continue
                    verdict = provider.judge_tool(tool)
                    fresh.append(
                        Judgement(
                            server_id=server.id, tool_name=str(tool.get("name", "")), tool_hash=digest,
                            provider=provider.provider, model=provider.model, offline=provider.offline,
                            judged_at=now, clarity=verdict["clarity"], input_completeness=verdict["input_completeness"],
                            confidence=verdict["confidence"], rationale=verdict.get("rationale"),
                        )
                    )
            try:
                report.counts["judged"] += store.save_judgements(db, server.id, fresh)
            except store.WriteRefused as refusal:
                report.storage_failed()
                progress.step(server.id, str(refusal), ok=False)
                continue
            progress.step(server.id, f"{len(fresh)} judged")
    except KeyboardInterrupt:
        report.interrupted = True
    report.seconds = time.monotonic() - started
    return report
