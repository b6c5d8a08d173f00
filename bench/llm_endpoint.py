"""A loopback stand-in for the three LLM providers, in their real response shapes, for tests, benches and the acceptance
run: OpenAI POST {root}/openai/v1/chat/completions (and {root}/v1/chat/completions, as a local OpenAI-compatible
server), Mistral POST {root}/mistral/v1/chat/completions, Gemini POST {root}/google/v1beta/models/{model}:generateContent.

    with serve(latency=0.05, rate_limits={"gpt-5-nano": 5}) as endpoint:
        provider = OpenAIProvider("gpt-5-nano", api_key="test-key", base_url=endpoint.base_url("openai"))
        endpoint.script("gpt-5-nano", "rate_limit:2", "server_error")   # the next two answers fail so

It answers a tool-judging request (a schema with clarity and input_completeness) with a deterministic reading of the
tool JSON it finds in the prompt, lenient or strict by model so judges disagree on a poor schema; any other structured
request with a scripted answer (`answer(schema name or title, value)`) or a minimal valid instance of the schema.
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

from pipeline.text import injection_findings, tool_texts

FAULTS = ("malformed", "schema_violation", "refusal", "blocked", "empty", "rate_limit", "server_error", "auth", "hang")
# How lenient each model's reading is: a score s becomes s + (100 - s) * leniency. A poor schema (s <= 40) is read
# 27+ points apart by gpt-5-nano and gemini-2.0-flash, a good one (s >= 90) within 5.
LENIENCY = {"gpt-5-nano": 0.0, "gpt-4.1-nano": 0.1, "mistral-small-2501": 0.2, "gemini-2.0-flash": 0.45}
VERB = re.compile(r"^\s*(get|list|read|search|fetch|find|create|update|delete|write|send|run|add|remove|set|query|return|"
                  r"retrieve|show|describe|check|move|edit|open|close|convert|generate)\w*\b", re.I)
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
            return judge(request)
        return minimal_instance(request.schema, request.schema)


# -- requests and responses in each family's shape --------------------------------------------------------------


def parse_request(path: str, body: dict[str, Any]) -> Request:
    for pattern, family in ROUTES:
        match = pattern.match(path)
        if not match:
            continue
        if family == "google":
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
            user = " ".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
            return Request(family, match["model"], system, user, schema, str(schema.get("title", "")), body)
        messages = body.get("messages", [])
        format_ = (body.get("response_format") or {}).get("json_schema") or {}
        return Request(family, str(body.get("model", "")), _text(messages, "system"), _text(messages, "user"),
                       format_.get("schema") or {}, str(format_.get("name", "")), body)
    raise LookupError(path)


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
        text = json.dumps(_violation(request.schema, content))
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


# -- the deterministic judge and the minimal answer --------------------------------------------------------------


def find_tool(text: str) -> dict[str, Any] | None:
    """The largest JSON object in the prompt that reads as a tool (a name, a description or an input schema)."""
    decoder = json.JSONDecoder()
    best: dict[str, Any] | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and {"name", "description", "inputSchema", "input_schema", "parameters"} & set(value):
            if best is None or len(json.dumps(value)) > len(json.dumps(best)):
                best = value
        position = text.find("{", end)
    return best


def reading(tool: dict[str, Any] | None) -> tuple[float, float]:
    """A plain reading of a tool: (clarity, input completeness) in 0-100."""
    if tool is None:
        return 10.0, 10.0
    description = str(tool.get("description") or "").strip()
    clarity = (35 if len(description) >= 20 else 15 if description else 0) + (20 if len(description) >= 80 else 0)
    clarity += 20 if VERB.search(description) else 0
    clarity += 15 if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*([_\-.][A-Za-z0-9]+)*", str(tool.get("name", ""))) else 0
    clarity += 10 if tool.get("title") or tool.get("annotations") else 0
    schema = _input_schema(tool)
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    if not properties:
        return float(min(clarity, 100)), 90.0
    typed = sum(1 for p in properties.values() if isinstance(p, dict) and ({"type", "enum", "$ref", "anyOf", "oneOf"} & set(p)))
    described = sum(1 for p in properties.values() if isinstance(p, dict) and str(p.get("description") or "").strip())
    completeness = 100 * (0.4 * typed + 0.4 * described) / len(properties) + (20 if "required" in schema else 0)
    return float(min(clarity, 100)), float(min(completeness, 100))


def leniency(model: str) -> float:
    if model in LENIENCY:
        return LENIENCY[model]
    return int(hashlib.sha256(model.encode()).hexdigest(), 16) % 5 * 0.12


def judge(request: Request) -> dict[str, Any]:
    tool = find_tool(request.user)
    clarity, completeness = reading(tool)
    lean = leniency(request.model)
    clarity, completeness = clarity + (100 - clarity) * lean, completeness + (100 - completeness) * lean
    directive = tool is not None and any(injection_findings(text) for _, _, text in tool_texts([{**tool, "inputSchema": _input_schema(tool)}]))
    described = "no tool found in the prompt" if tool is None else f"description of {len(str(tool.get('description') or ''))} chars"
    values = {"clarity": clarity, "input_completeness": completeness, "confidence": (clarity + completeness) / 2,
              "rationale": f"{described}; read with leniency {lean:.2f}" + ("; the text instructs its reader" if directive else ""),
              "directive": directive}
    answer = minimal_instance(request.schema, request.schema)
    properties = request.schema.get("properties", {})
    for key, value in values.items():
        if key in properties:
            answer[key] = _fit(value, _resolve(properties[key], request.schema))
    return answer


def _input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The parameters' schema under any of the names tools are written with (MCP, Anthropic, OpenAI)."""
    return next((tool[k] for k in ("inputSchema", "input_schema", "parameters") if isinstance(tool.get(k), dict)), {})


def _fit(value: Any, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return int(round(value))
    if kind == "number":
        return round(float(value), 1)
    if kind == "string" and isinstance(value, str) and "maxLength" in schema:
        return value[: schema["maxLength"]]
    return value


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return target if isinstance(target, dict) else {}
    return node


def minimal_instance(node: dict[str, Any], root: dict[str, Any]) -> Any:
    """The smallest value valid under a JSON schema as pydantic writes them: required properties only, lower bounds."""
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if node.get(key):
            return minimal_instance(node[key][0], root)
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in node:
        return {name: minimal_instance(node["properties"][name], root) for name in node.get("required", []) if name in node.get("properties", {})}
    if kind == "array":
        return [minimal_instance(node.get("items", {}), root) for _ in range(node.get("minItems", 0))]
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in node else 0))
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    return None


FORMATS = {"uri": "https://example.invalid/", "date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "email": "a@example.invalid"}


def _string(node: dict[str, Any]) -> str:
    """A short string for a string schema: its format's example, or the first alternative of a simple pattern."""
    if node.get("format") in FORMATS:
        return FORMATS[node["format"]]
    plain = "x" * node.get("minLength", 0)
    pattern = node.get("pattern")
    if not isinstance(pattern, str):
        return plain
    guess = re.split(r"[|)]", pattern.strip("^$").lstrip("("))[0]
    for candidate in (guess, plain, "x"):
        try:
            if re.search(pattern, candidate):
                return candidate
        except re.error:
            break
    return plain


def _violation(schema: dict[str, Any], content: dict[str, Any]) -> Any:
    """Valid JSON that breaks the schema: the first required property given a value of no scalar type."""
    required = schema.get("required") or list(schema.get("properties", {}))
    if not required:
        return ["not", "an", "object"]
    return {**content, required[0]: {"unexpected": "shape"}}


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
