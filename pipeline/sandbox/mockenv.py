"""Mock values for the environment a sandboxed server requires, so it starts without any real credential (pure).

A server that needs an API key or a database URL usually refuses to start without one; we give it a value shaped like
the real thing (a `ghp_` GitHub token, a `postgres://` URL on 127.0.0.1) that opens nothing: the sandbox has no network
and nothing listens on those ports. Values come from the variable's name and format alone, never from the real
environment, and are the same on every run. A default the source gives is used as it is (bounded, no control
characters). Paths use the `{workdir}` placeholder, expanded to the sandbox's work directory at the start.

Which variables: those a source marks required, those it lists without saying (a catalog listing a variable means
the server reads it), the defaults it gives, and the credentials and database URLs a README names. Names are a
stranger's text: only `[A-Z_][A-Z0-9_]*`, at most MAX_VARIABLES, and never one the sandbox itself sets (PATH, HOME,
the loader's and the runtimes' own).
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

from pipeline.models import EnvVar, LaunchSpec, Server

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
MAX_VARIABLES = 64
MAX_VALUE = 1000
RESERVED = re.compile(r"^(PATH|HOME|TMPDIR|TMP|TEMP|PWD|SHELL|LANG|LC_[A-Z]+|TZ|LD_[A-Z_]+|PYTHON[A-Z_]*|NODE_OPTIONS|NODE_PATH|"
                      r"NPM_CONFIG_[A-Z_]+|UV_[A-Z_]+|PIP_[A-Z_]+|VIRTUAL_ENV|XDG_[A-Z_]+)$")
SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS$|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|_PAT$|^PAT_")
README_NAME = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_KEY|KEY|TOKEN|SECRET|PASSWORD|DATABASE_URL|DB_URL|URI|CONNECTION_STRING)"
                         r"|DATABASE_URL|API_KEY)\b")
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

# Token shapes of well-known services: (what the name holds, prefix, length of the random part, alphabet)
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_HEX = "0123456789abcdef"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
TOKEN_SHAPES: tuple[tuple[re.Pattern[str], str, int, str], ...] = tuple(
    (re.compile(pattern), prefix, length, alphabet) for pattern, prefix, length, alphabet in (
    (r"ANTHROPIC|CLAUDE", "sk-ant-api03-mock", 80, _ALNUM),
    (r"OPENAI|OPENROUTER", "sk-mock", 48, _ALNUM),
    (r"^(GITHUB|GH)_", "ghp_", 36, _ALNUM),
    (r"GITLAB", "glpat-", 20, _ALNUM),
    (r"SLACK.*(USER|XOXP)", "xoxp-", 40, _HEX),
    (r"SLACK.*APP", "xapp-1-", 40, _HEX),
    (r"SLACK", "xoxb-", 40, _HEX),
    (r"STRIPE", "sk_test_", 32, _ALNUM),
    (r"HUGGING|^HF_", "hf_", 34, _ALNUM),
    (r"NOTION", "secret_", 43, _ALNUM),
    (r"GROQ", "gsk_", 52, _ALNUM),
    (r"PERPLEXITY", "pplx-", 48, _ALNUM),
    (r"TAVILY", "tvly-", 32, _ALNUM),
    (r"FIRECRAWL", "fc-", 32, _HEX),
    (r"LINEAR", "lin_api_", 40, _ALNUM),
    (r"AWS_ACCESS_KEY", "AKIA", 16, _UPPER),
    (r"AWS_SECRET", "", 40, _ALNUM),
    (r"GOOGLE|GEMINI|YOUTUBE|FIREBASE", "AIza", 35, _ALNUM),
    (r"SENDGRID", "SG.", 66, _ALNUM),
    (r"TELEGRAM", "123456789:AA", 33, _ALNUM),
))
DATABASES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), url) for pattern, url in (
    (r"MYSQL|MARIADB", "mysql://mock:mock@127.0.0.1:3306/mock"),
    (r"MONGO", "mongodb://mock:mock@127.0.0.1:27017/mock"),
    (r"REDIS|VALKEY", "redis://:mock@127.0.0.1:6379/0"),
    (r"SQLITE", "sqlite:///{workdir}/mock.db"),
    (r"POSTGRES|PG|SUPABASE_DB|NEON|DATABASE|_DB_|_DB$|^DB_|CONNECTION_STRING", "postgres://mock:mock@127.0.0.1:5432/mock"),
))
PORTS = {"POSTGRES": "5432", "PG": "5432", "MYSQL": "3306", "MONGO": "27017", "REDIS": "6379"}


def mock_environment(source: Server | Iterable[EnvVar], readme: str | None = None) -> dict[str, str]:
    """Name -> mock (or default) value for the variables a server requires. A server's launch already fixes some
    values (its registry entry's own, our `{port}`): those are not mocked."""
    if isinstance(source, Server):
        variables, fixed = list(source.env_vars), set(source.launch.env) if source.launch else set()
    else:
        variables, fixed = list(source), set()
    if readme:
        listed = {v.name for v in variables}
        variables += [EnvVar(name=name, secret=True) for name in dict.fromkeys(README_NAME.findall(readme[:200_000])) if name not in listed]
    mocks: dict[str, str] = {}
    for variable in variables:
        name = variable.name.strip()
        if len(mocks) >= MAX_VARIABLES:
            break
        if name in mocks or name in fixed or not ENV_NAME.match(name) or RESERVED.match(name):
            continue
        default = _usable(variable.default)
        if default is not None:
            mocks[name] = default
        elif variable.required is not False:
            mocks[name] = mock_value(name, secret=variable.secret, format=variable.format)
    return mocks


def mocked_launch(server: Server, readme: str | None = None) -> tuple[LaunchSpec, list[str]]:
    """The server's launch with mock values for what it requires (its own fixed values win), and the names mocked."""
    assert server.launch is not None
    mocks = mock_environment(server, readme)
    return server.launch.model_copy(update={"env": {**mocks, **server.launch.env}}), sorted(mocks)


def mock_value(name: str, *, secret: bool = False, format: str | None = None) -> str:
    """A value shaped for a variable of this name and format, the same on every run."""
    name = name.upper()
    if format == "filepath" or re.search(r"(_|^)(PATH|DIR|DIRECTORY|FILE|FOLDER|ROOT|WORKSPACE)$", name):
        return "{workdir}/" + name.lower()
    if format == "boolean" or re.search(r"^(ENABLE|DISABLE|USE|IS|ALLOW)_|_(ENABLED|DISABLED)$|^(DEBUG|VERBOSE)$", name):
        return "true" if re.search(r"READ_?ONLY", name) else "false"
    if re.search(r"READ_?ONLY", name):
        return "true"
    if name.endswith("PORT"):
        return next((port for word, port in PORTS.items() if word in name), "8080")
    if format == "number" or re.search(r"_(TIMEOUT|LIMIT|MAX|MIN|COUNT|SIZE)$|^(MAX|MIN)_", name):
        return "30" if "TIMEOUT" in name else "10" if format != "number" else "1"
    if re.search(r"(_|^)(URL|URI|DSN|CONNECTION_STRING|CONN_STR)$", name) or "DATABASE" in name:
        database = next((url for pattern, url in DATABASES if pattern.search(name)), None)
        if database and (not re.search(r"_(API|BASE)_URL$", name)):
            return database
        return "http://127.0.0.1:9/"  # the discard port: nothing answers, inside or out
    if re.search(r"(_|^)HOST(NAME)?$", name):
        return "127.0.0.1"
    if name.endswith("EMAIL"):
        return "mock@example.invalid"
    if re.search(r"(_|^)(USER|USERNAME|LOGIN)$", name):
        return "mock"
    if name.endswith("REGION"):
        return "us-east-1"
    if secret or SECRET.search(name):
        shape = next(((prefix, length, alphabet) for pattern, prefix, length, alphabet in TOKEN_SHAPES if pattern.search(name)), None)
        prefix, length, alphabet = shape or ("mock-", 32, _ALNUM)
        return prefix + _characters(name, length, alphabet)
    return "mock"


def _characters(name: str, length: int, alphabet: str) -> str:
    """`length` characters of `alphabet` derived from the name alone."""
    digest = b""
    counter = 0
    while len(digest) < length:
        digest += hashlib.sha256(f"scoreboard-mock:{name}:{counter}".encode()).digest()
        counter += 1
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])


def _usable(default: str | None) -> str | None:
    if default is None or len(default) > MAX_VALUE or CONTROL.search(default):
        return None
    return default
