"""Google Gemini generateContent with a JSON answer constrained by response_json_schema, over the official
`google-genai` SDK (the Gemini Developer API, a key; not Vertex AI)."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import httpx
from google import genai
from google.genai import errors, types
from pydantic import BaseModel, ValidationError

from pipeline.llm.base import Attempt, Usage, one_line, parse_answer, status_failure
from pipeline.llm.prices import cost_usd
from pipeline.llm.schema import gemini_schema
from pipeline.llm.sdk import SDKProvider

T = TypeVar("T", bound=BaseModel)
# Given explicitly: left None, the SDK would read GOOGLE_GEMINI_BASE_URL itself, past the environment we were handed.
OFFICIAL_URL = "https://generativelanguage.googleapis.com/"
LEGACY_SCHEMA = re.compile(r"gemini-(1\.|2\.0)")
# Gemini 2.5 Flash and Flash-Lite think by default, and can be told not to (2.5 Pro cannot).
NO_THINKING = re.compile(r"gemini-2\.5-flash(-lite)?(-\d{3}|-preview-[\w-]+)?")
REFUSED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"})


class GoogleProvider(SDKProvider):
    provider = "google"

    def _connect(self, timeout: float) -> Any:
        # retry_options None: the SDK makes one attempt, ours (pipeline.llm.base) are the only retries. Timeout in ms.
        options = types.HttpOptions(base_url=self.base_url or OFFICIAL_URL, timeout=int(timeout * 1000), retry_options=None)
        return genai.Client(api_key=self._key, vertexai=False, http_options=options)

    def _attempt(self, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int) -> tuple[T, Usage]:
        # Gemini 2.0 and older take the OpenAPI subset (response_schema, converted from the pydantic model by the SDK);
        # later models take JSON Schema (response_json_schema).
        constraint: dict[str, Any] = ({"response_schema": schema} if LEGACY_SCHEMA.match(self.model)
                                      else {"response_json_schema": gemini_schema(schema)})
        if NO_THINKING.fullmatch(self.model):  # thinking would come out of the output cap (deviation 116)
            constraint["thinking_config"] = types.ThinkingConfig(thinking_budget=0)
        config = types.GenerateContentConfig(system_instruction=system, response_mime_type="application/json",
                                             max_output_tokens=max_output_tokens, **constraint)
        try:
            response = self._client.models.generate_content(model=self.model, contents=user, config=config)
        except errors.APIError as error:
            raise self._failure(error) from None
        except httpx.TimeoutException:
            raise Attempt("timeout", "no answer within the timeout") from None
        except httpx.HTTPError as error:
            raise Attempt("transport", f"connection failed ({type(error).__name__})") from None
        except (json.JSONDecodeError, ValidationError, errors.UnknownApiResponseError):  # a 200 that is not a response
            raise Attempt("malformed", "the response is not a generateContent response") from None
        except ValueError as error:  # raised before sending: the SDK cannot write the schema for this API
            raise Attempt("config", f"{schema.__name__} cannot be sent as a Gemini schema: {one_line(error, 120)}") from None
        usage = self._usage(response.usage_metadata)
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            raise Attempt("refusal", f"the prompt was blocked ({_name(feedback.block_reason)})", usage=usage)
        if not response.candidates:
            raise Attempt("refusal", "no candidate answer", usage=usage)
        candidate = response.candidates[0]
        reason = _name(candidate.finish_reason)
        if reason in REFUSED:
            raise Attempt("refusal", f"finish reason {reason}", usage=usage)
        if reason == "MAX_TOKENS":
            raise Attempt("malformed", f"the answer was cut at {max_output_tokens} tokens", usage=usage)
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(part.text for part in parts if part.text and not part.thought)
        return parse_answer(text, schema, usage), usage

    def _usage(self, metadata: Any) -> Usage:
        prompt = int(getattr(metadata, "prompt_token_count", 0) or 0)
        # Thinking tokens are billed as output (Gemini API pricing), so they count here.
        output = int(getattr(metadata, "candidates_token_count", 0) or 0) + int(getattr(metadata, "thoughts_token_count", 0) or 0)
        return Usage(input_tokens=prompt, output_tokens=output, cost_usd=cost_usd(self.model, prompt, output))

    def _failure(self, error: errors.APIError) -> Attempt:
        # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID, not 401.
        if error.code == 400 and "API_KEY_INVALID" in str(error.details):
            return Attempt("auth", "the key was refused (HTTP 400 API_KEY_INVALID)")
        headers = getattr(error.response, "headers", None)
        message = str(error.message or error.status or "")
        return status_failure(error.code, headers, self._scrub(message), self._policy)


def _name(value: Any) -> str:
    return str(getattr(value, "value", value))
