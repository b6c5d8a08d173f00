"""A run's spending cap on LLM calls, shared by the judge panel and the analysis passes, so both stop on the same rule."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpendCap:
    """A run's budget: tokens (input and output) or US dollars; a model whose price is unknown cannot be held to a cost
    cap, so under one its first answer ends the run's spending (deviations 121 and 132)."""

    max_tokens: int | None = None
    max_cost: float | None = None

    def reached(self, tokens: int, cost: float, cost_unknown: bool) -> str | None:
        """Why no further call may start, or None."""
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"token budget reached: {tokens:,} of {self.max_tokens:,} (--max-tokens)"
        if self.max_cost is not None and cost_unknown:
            return "cost budget cannot be kept: a model's price is unknown (--max-cost)"
        if self.max_cost is not None and cost >= self.max_cost:
            return f"cost budget reached: ${cost:.4f} of ${self.max_cost:.4f} (--max-cost)"
        return None
