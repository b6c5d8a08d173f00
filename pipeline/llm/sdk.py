"""What the three SDK providers share: the key kept out of errors and reprs, our retries around each attempt, one client."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from pipeline.llm.base import Completion, RetryPolicy, Usage, run_with_retries

T = TypeVar("T", bound=BaseModel)
# Sent to a local server without authentication: each SDK refuses an empty key, or reads its own environment variable.
NO_KEY = "no-key"


class SDKProvider:
    """A provider over one official SDK: subclasses build the client (`_connect`, the SDK's own retries off: ours are the
    only ones, and they honour Retry-After) and make one attempt (`_attempt`)."""

    provider = ""
    offline = False

    def __init__(self, model: str, *, api_key: str | None, base_url: str | None = None, timeout: float = 60.0,
                 policy: RetryPolicy | None = None):
        self.model = model
        self.base_url = base_url
        self._key = api_key or NO_KEY
        self._policy = policy or RetryPolicy()
        self._client = self._connect(timeout)

    def _connect(self, timeout: float) -> Any:
        raise NotImplementedError

    def _attempt(self, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int) -> tuple[T, Usage]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, *, system: str, user: str, schema: type[T], schema_name: str, max_output_tokens: int = 1024) -> Completion[T]:
        return run_with_retries(f"{self.provider}:{self.model}", lambda: self._attempt(system, user, schema, schema_name, max_output_tokens),
                                self._policy)

    def _scrub(self, text: str) -> str:
        """The text without the key (a server may echo it back in an error)."""
        return text.replace(self._key, "[key]") if self._key != NO_KEY else text
