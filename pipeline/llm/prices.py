"""List prices of the pinned models, USD per million tokens (input, output), standard tier, no caching or batch discount.

Sources, as read when the table was written (December 2026): OpenAI's API pricing page (openai.com/api/pricing:
gpt-5-nano 0.05/0.40, gpt-4.1-nano 0.10/0.40), Google's Gemini API pricing page (ai.google.dev/gemini-api/docs/pricing,
paid tier, text: gemini-2.0-flash 0.10/0.40), Mistral's pricing page (mistral.ai/pricing: Mistral Small 3, the
mistral-small-2501 snapshot, 0.10/0.30). A model not listed is priced None: its tokens are still counted (deviation 113).
A local server serving a model under a listed name is charged the list price, which keeps a cost cap conservative.
"""

from __future__ import annotations

PRICES: dict[str, tuple[float, float]] = {
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1-nano": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    "mistral-small-2501": (0.10, 0.30),
}


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    price = PRICES.get(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
