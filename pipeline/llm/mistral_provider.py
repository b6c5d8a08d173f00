"""Mistral chat completions with a JSON-schema answer, over the official `mistralai` SDK (2.x: mistralai.client)."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from mistralai.client import Mistral, errors
from mistralai.client.utils.logger import NoOpLogger
from pydantic import BaseModel

from pipeline.llm.base import Attempt, Usage, parse_answer, server_message, status_failure
from pipeline.llm.prices import cost_usd
from pipeline.llm.schema import json_schema, strict_schema
from pipeline.llm.sdk import SDKProvider

T = TypeVar("T", bound=BaseModel)


class MistralProvider(SDKProvider):
    provider = "mistral"

    def _connect(self, timeout: float) -> Any:
        # retry_config None: the SDK retries nothing, ours (pipeline.llm.base) are the only retries. Its debug logger
        # (MISTRAL_DEBUG) would write the request headers, the key among them: it stays silent.
        return Mistral(api_key=self._key, server_url=self.base_url, timeout_ms=int(timeout * 1000), retry_config=None,
                       debug_logger=NoOpLogger())

    def _attempt(self, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int) -> tuple[T, Usage]:
        strict = strict_schema(schema)
        format_ = {"type": "json_schema", "json_schema": {
            "name": schema_name, "schema": strict if strict is not None else json_schema(schema), "strict": strict is not None}}
        try:
            response = self._client.chat.complete(
                model=self.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format=format_, max_tokens=max_output_tokens)  # type: ignore[arg-type]
        except errors.ResponseValidationError:
            raise Attempt("malformed", "the response does not have the chat-completion shape") from None
        except errors.MistralError as error:
            message = server_message(error.body, error.message)
            raise status_failure(error.status_code, error.headers, self._scrub(message), self._policy) from None
        except errors.NoResponseError:
            raise Attempt("transport", "no response") from None
        except httpx.TimeoutException:
            raise Attempt("timeout", "no answer within the timeout") from None
        except httpx.HTTPError as error:
            raise Attempt("transport", f"connection failed ({type(error).__name__})") from None
        prompt = int(getattr(response.usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(response.usage, "completion_tokens", 0) or 0)
        usage = Usage(input_tokens=prompt, output_tokens=completion, cost_usd=cost_usd(self.model, prompt, completion))
        if not response.choices:
            raise Attempt("malformed", "the response has no choices", usage=usage)
        choice = response.choices[0]
        if choice.finish_reason in ("length", "model_length"):
            raise Attempt("malformed", f"the answer was cut at {max_output_tokens} tokens", usage=usage)
        if choice.finish_reason == "error":
            raise Attempt("server_error", "the model stopped with an error", usage=usage)
        return parse_answer(_text(choice.message.content), schema, usage), usage



def _text(content: Any) -> str | None:
    """The answer's text: a string, or the text chunks of a chunked answer (a reasoning model's thinking left out)."""
    if content is None or isinstance(content, str):
        return content
    return "".join(chunk.text for chunk in content if getattr(chunk, "type", None) == "text" and isinstance(getattr(chunk, "text", None), str))
