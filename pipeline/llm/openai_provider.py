"""OpenAI chat completions with a strict JSON-schema answer, over the official `openai` SDK. With a base URL it serves
any OpenAI-compatible server (llama.cpp, vLLM, Ollama), where no key is needed."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import openai
from pydantic import BaseModel

from pipeline.llm.base import Attempt, Usage, one_line, parse_answer, server_message, status_failure
from pipeline.llm.prices import cost_usd
from pipeline.llm.schema import json_schema, strict_schema
from pipeline.llm.sdk import SDKProvider

T = TypeVar("T", bound=BaseModel)
# Given explicitly: left None, the SDK would read OPENAI_BASE_URL itself, past the environment we were handed.
OFFICIAL_URL = "https://api.openai.com/v1"
# GPT-5's reasoning tokens come out of max_completion_tokens: at the default effort a short structured answer can be
# cut before it starts. The judge and the passes ask for a reading, not a proof (deviation 116).
MINIMAL_REASONING = re.compile(r"gpt-5(-mini|-nano)?(-\d{4}-\d{2}-\d{2})?")


class OpenAIProvider(SDKProvider):
    provider = "openai"

    def _connect(self, timeout: float) -> Any:
        # The SDK's retries are off: ours (pipeline.llm.base) are the only ones, and they honour Retry-After.
        return openai.OpenAI(api_key=self._key, base_url=self.base_url or OFFICIAL_URL, timeout=timeout, max_retries=0)

    def _attempt(self, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int) -> tuple[T, Usage]:
        strict = strict_schema(schema)
        format_: dict[str, Any] = {"type": "json_schema", "json_schema": {
            "name": schema_name, "schema": strict if strict is not None else json_schema(schema), "strict": strict is not None}}
        official = self.base_url is None or self.base_url.rstrip("/") == OFFICIAL_URL
        limit = token_options(self.model, official=official, max_output_tokens=max_output_tokens)
        try:
            response = self._client.chat.completions.create(
                model=self.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format=format_, **limit)  # type: ignore[call-overload]
        except openai.APIError as error:
            raise self._failure(error) from None
        except ValueError as error:  # a 200 whose body is not JSON
            raise Attempt("malformed", f"the response is not JSON ({type(error).__name__})") from None
        usage = self._usage(response.usage)
        if not response.choices:
            raise Attempt("malformed", "the response has no choices", usage=usage)
        choice = response.choices[0]
        if choice.message.refusal:
            raise Attempt("refusal", f"refused: {one_line(self._scrub(choice.message.refusal), 120)}", usage=usage)
        if choice.finish_reason == "content_filter":
            raise Attempt("refusal", "the content filter stopped the answer", usage=usage)
        if choice.finish_reason == "length":
            raise Attempt("malformed", f"the answer was cut at {max_output_tokens} tokens", usage=usage)
        return parse_answer(choice.message.content, schema, usage), usage

    def _usage(self, usage: Any) -> Usage:
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)  # reasoning tokens included, as billed
        return Usage(input_tokens=prompt, output_tokens=completion, cost_usd=cost_usd(self.model, prompt, completion))

    def _failure(self, error: openai.APIError) -> Attempt:
        if isinstance(error, openai.APITimeoutError):
            return Attempt("timeout", "no answer within the timeout")
        if isinstance(error, openai.APIConnectionError):
            return Attempt("transport", f"connection failed ({one_line(self._scrub(error.message), 120)})")
        if isinstance(error, openai.APIResponseValidationError):
            return Attempt("malformed", "the response does not have the chat-completion shape")
        if isinstance(error, openai.APIStatusError):
            message = server_message(error.body, error.message)
            return status_failure(error.status_code, error.response.headers, self._scrub(message), self._policy)
        return Attempt("transport", one_line(self._scrub(str(error)), 160))



def token_options(model: str, *, official: bool, max_output_tokens: int) -> dict[str, Any]:
    """The output cap as each server takes it: OpenAI's reasoning models take max_completion_tokens only, and GPT-5 is
    asked for minimal reasoning; an OpenAI-compatible server knows max_tokens best."""
    if not official:
        return {"max_tokens": max_output_tokens}
    options: dict[str, Any] = {"max_completion_tokens": max_output_tokens}
    if MINIMAL_REASONING.fullmatch(model):
        options["reasoning_effort"] = "minimal"
    return options
