"""A loopback stand-in for the three LLM providers, in their real response shapes, for tests, benches and the acceptance
run: OpenAI POST {root}/openai/v1/chat/completions (and {root}/v1/chat/completions, as a local OpenAI-compatible
server), Mistral POST {root}/mistral/v1/chat/completions, Gemini POST {root}/google/v1beta/models/{model}:generateContent.

    with serve(latency=0.05, rate_limits={"gpt-5-nano": 5}) as endpoint:
        provider = OpenAIProvider("gpt-5-nano", api_key="test-key", base_url=endpoint.base_url("openai"))
        endpoint.script("gpt-5-nano", "rate_limit:2", "server_error")   # the next two answers fail so

It answers a tool-judging request (a schema with clarity and input_completeness) with a deterministic reading of the
tool JSON it finds in the prompt, lenient or strict by model so judges disagree on a poor schema (bench/llm_answers.py);
any other structured request with a scripted answer (`answer(schema name or title, value)`) or a minimal valid instance of the schema.
Faults, scripted per model and consumed in order: malformed, schema_violation, refusal, blocked (Gemini's blocked
prompt), empty, rate_limit[:seconds], server_error, auth, hang[:seconds]. It counts requests, 429s and the peak number
of requests in flight per model. Run alone (`python -m bench.llm_endpoint`) it prints its root URL and serves until
interrupted, for a child process or a manual panel run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import threading
import time
from collections import Counter, defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

from bench.llm_answers import judge, minimal_instance, violation

FAULTS = ("malformed", "schema_violation", "refusal", "blocked", "empty", "rate_limit", "server_error", "auth", "hang")
ROUTES = (
    (re.compile(r"^/openai/v1/chat/completions$"), "openai"),
    (re.compile(r"^/v1/chat/completions$"), "openai"),
    (re.compile(r"^/mistral/v1/chat/completions$"), "mistral"),
    (re.compile(r"^/google/v1beta/models/(?P<model>[^/:]+):generateContent$"), "google"),
)


@dataclass
class Request:
    """One parsed request, as the judge and a scripted answer see it."""

    family: str
    model: str
    system: str
    user: str
    schema: dict[str, Any]
    schema_name: str
    body: dict[str, Any]


class Endpoint:
    def __init__(self, *, latency: float = 0.0, rate_limits: dict[str, float] | None = None,
                 faults: dict[str, list[str]] | None = None, hang_seconds: float = 5.0):
        self.latency = latency
        self.rate_limits = dict(rate_limits or {})  # model -> requests per second, over a sliding second
        self.hang_seconds = hang_seconds
        self.requests: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()  # 429s from the rate limit (scripted ones not counted)
        self.peak_in_flight: Counter[str] = Counter()
        self.received: list[Request] = []
        self._faults: dict[str, deque[str]] = defaultdict(deque)
        self._answers: dict[str, Any] = {}
        self._in_flight: Counter[str] = Counter()
        self._window: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.root = ""
        for model, kinds in (faults or {}).items():
            self.script(model, *kinds)

    def base_url(self, family: str) -> str:
        """The base URL each SDK is given: OpenAI's includes /v1, Mistral's and Gemini's do not."""
        return {"openai": f"{self.root}/openai/v1", "mistral": f"{self.root}/mistral", "google": f"{self.root}/google"}[family]

    def script(self, model: str, *kinds: str) -> None:
        """Faults for the next requests to `model` ("*": any model), in order."""
        for kind in kinds:
            if kind.split(":")[0] not in FAULTS:
                raise ValueError(f"unknown fault {kind!r}: one of {', '.join(FAULTS)}")
        with self._lock:
            self._faults[model].extend(kinds)

    def answer(self, key: str, value: dict[str, Any] | Callable[[Request], dict[str, Any]]) -> None:
        """A scripted answer for requests whose schema is named (OpenAI, Mistral) or titled (all three) `key`."""
        self._answers[key] = value

    # -- serving -------------------------------------------------------------------------------------------------

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        request = parse_request(path, body)
        model = request.model
        with self._lock:
            self.requests[model] += 1
            self.received.append(request)
            limited = self._rate_limited(model)
            fault = None if limited is not None else self._next_fault(model)
            if limited is not None:
                self.rejected[model] += 1
            self._in_flight[model] += 1
            self.peak_in_flight[model] = max(self.peak_in_flight[model], self._in_flight[model])
        try:
            if limited is not None:
                return error(request.family, 429, limited)
            kind, _, argument = (fault or "").partition(":")
            if kind == "rate_limit":
                return error(request.family, 429, float(argument or 1))
            if kind in ("server_error", "auth"):
                return error(request.family, 500 if kind == "server_error" else 401)
            if kind == "hang":
                self._stop.wait(float(argument or self.hang_seconds))
            elif self.latency:
                self._stop.wait(self.latency)
            return 200, {}, render(request, self._content(request), kind)
        finally:
            with self._lock:
                self._in_flight[model] -= 1

    def _rate_limited(self, model: str) -> float | None:
        """Seconds until `model` may be asked again, or None when this request is within its rate."""
        limit = self.rate_limits.get(model)
        if not limit:
            return None
        now = time.monotonic()
        window = self._window[model]
        while window and now - window[0] >= 1.0:
            window.popleft()
        if len(window) >= limit:
            return 1.0 - (now - window[0])
        window.append(now)
        return None

    def _next_fault(self, model: str) -> str | None:
        for key in (model, "*"):
            if self._faults.get(key):
                return self._faults[key].popleft()
        return None

    def _content(self, request: Request) -> dict[str, Any]:
        scripted = self._answers.get(request.schema_name) or self._answers.get(str(request.schema.get("title", "")))
        if scripted is not None:
            return scripted(request) if callable(scripted) else scripted
        properties = request.schema.get("properties", {})
        if "clarity" in properties and "input_completeness" in properties:
            return judge(request.user, request.model, request.schema)
        return minimal_instance(request.schema, request.schema)


# -- requests and responses in each family's shape --------------------------------------------------------------


def parse_request(path: str, body: dict[str, Any]) -> Request:
    for pattern, family in ROUTES:
        match = pattern.match(path)
        if not match:
            continue
        if family == "google":
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or openapi_to_json_schema(config.get("responseSchema") or {})
            system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
            user = " ".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
            return Request(family, match["model"], system, user, schema, str(schema.get("title", "")), body)
        messages = body.get("messages", [])
        format_ = (body.get("response_format") or {}).get("json_schema") or {}
        return Request(family, str(body.get("model", "")), _text(messages, "system"), _text(messages, "user"),
                       format_.get("schema") or {}, str(format_.get("name", "")), body)
    raise LookupError(path)


def openapi_to_json_schema(node: Any) -> Any:
    """Gemini's OpenAPI-subset schema (responseSchema: upper-case types, keys in either case) as JSON Schema."""
    if isinstance(node, list):
        return [openapi_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for key, value in node.items():
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        if camel == "type" and isinstance(value, str):
            converted[camel] = value.lower()
        elif camel == "properties" and isinstance(value, dict):
            converted[camel] = {name: openapi_to_json_schema(child) for name, child in value.items()}
        else:
            converted[camel] = openapi_to_json_schema(value) if camel in ("items", "anyOf") else value
    return converted


def _text(messages: list[dict[str, Any]], role: str) -> str:
    parts: list[str] = []
    for message in messages:
        if message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def render(request: Request, content: dict[str, Any], fault: str) -> dict[str, Any]:
    text = json.dumps(content)
    if fault == "malformed":
        text = text[: max(1, len(text) // 2)]
    elif fault == "schema_violation":
        text = json.dumps(violation(request.schema, content))
    elif fault in ("refusal", "empty", "blocked"):
        text = ""
    tokens_in = math.ceil(len(request.system + request.user) / 4) or 1
    tokens_out = math.ceil(len(text) / 4)
    if request.family == "google":
        usage = {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out, "totalTokenCount": tokens_in + tokens_out}
        if fault == "blocked":
            return {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage, "modelVersion": request.model}
        candidate: dict[str, Any] = {"index": 0, "finishReason": "SAFETY" if fault == "refusal" else "STOP"}
        if fault == "refusal":
            candidate["safetyRatings"] = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
        else:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": request.model}
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if request.family == "openai":
        message["refusal"] = None
        if fault == "refusal":
            message.update(content=None, refusal="I can't help with that.")
    return {
        "id": f"chatcmpl-{hashlib.sha256(request.user.encode()).hexdigest()[:12]}", "object": "chat.completion",
        "created": int(time.time()), "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


def error(family: str, status: int, retry_after: float | None = None) -> tuple[int, dict[str, str], dict[str, Any]]:
    headers = {}
    if retry_after is not None:
        headers = {"Retry-After": str(max(1, math.ceil(retry_after))), "retry-after-ms": str(max(1, round(retry_after * 1000)))}
    if family == "google":
        # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
        code, state, message = {429: (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
                                500: (500, "INTERNAL", "An internal error has occurred."),
                                401: (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")}[status]
        details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}] if status == 401 else []
        return code, headers, {"error": {"code": code, "message": message, "status": state, "details": details}}
    message = {429: "Rate limit reached for requests", 500: "The server had an error while processing your request.",
               401: "Incorrect API key provided."}[status]
    if family == "mistral":
        return status, headers, {"object": "error", "message": message, "type": "invalid_request_error", "code": str(status)}
    kind = {429: "rate_limit_exceeded", 500: "server_error", 401: "invalid_api_key"}[status]
    return status, headers, {"error": {"message": message, "type": kind, "param": None, "code": kind}}


# -- the server --------------------------------------------------------------------------------------------------


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (the http.server name)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                status, headers, payload = endpoint.handle(self.path.split("?")[0], body)
            except LookupError:
                status, headers, payload = 404, {}, {"error": {"message": "no such route", "code": 404}}
            except ValueError:
                status, headers, payload = 400, {}, {"error": {"message": "the body is not JSON", "code": 400}}
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the http.server name)
            pass

    return Handler


@contextmanager
def serve(*, latency: float = 0.0, rate_limits: dict[str, float] | None = None, faults: dict[str, list[str]] | None = None,
          hang_seconds: float = 5.0, port: int = 0) -> Iterator[Endpoint]:
    """An endpoint served from a thread on 127.0.0.1 (port 0: a free one) for the length of the block."""
    endpoint = Endpoint(latency=latency, rate_limits=rate_limits, faults=faults, hang_seconds=hang_seconds)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(endpoint))
    server.daemon_threads = True
    endpoint.root = f"http://127.0.0.1:{server.server_address[1]}"
    # A short poll interval: shutdown() waits up to one interval, and tests open an endpoint each.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-endpoint", daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint._stop.set()  # a hanging answer returns at once
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--rate-limit", action="append", default=[], metavar="MODEL=PER_SECOND")
    args = parser.parse_args()
    limits = {model: float(rate) for model, _, rate in (item.partition("=") for item in args.rate_limit)}
    with serve(latency=args.latency, rate_limits=limits, port=args.port) as endpoint:
        print(endpoint.root, flush=True)
        print(f"openai {endpoint.base_url('openai')}  mistral {endpoint.base_url('mistral')}  google {endpoint.base_url('google')}",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
