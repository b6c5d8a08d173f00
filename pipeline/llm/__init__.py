"""The shared LLM provider layer: one structured, validated completion over the official OpenAI, Mistral and Google
SDKs, with retries, timeouts and token and cost accounting. Used by the judge stage and the optional LLM passes of
analysis and discovery; a library like pipeline/judging.py, not a stage."""

from pipeline.llm.base import Completion, LLMError, Provider, RetryPolicy, Usage
from pipeline.llm.config import providers_from_env

__all__ = ["Completion", "LLMError", "Provider", "RetryPolicy", "Usage", "providers_from_env"]
