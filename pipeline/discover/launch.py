"""How a discovered server is started: a `LaunchSpec` from a source's package entry (pure).

The official registry's package entries (server.json) carry the most: registryType, identifier, version, transport
(with a URL template for HTTP servers), `runtimeArguments`, `packageArguments` and `environmentVariables`. Other
sources name only a package; their launch is the package's own entry point with no arguments.

Every value is a stranger's text. Arguments stay argv items (no shell ever sees them); an argument or a value with a
NUL or another control character, longer than MAX_CHARS, or more than MAX_ARGS of them, refuses the launch, and the
refusal is recorded (`Refused`), never silently trimmed into a different command.

Argument rules (server.json semantics, with no user to ask):
- a fixed `value` is always passed; else its `default`; else, when `isRequired`, a mock by format (filepath: the
  sandbox's work dir; number: 1; boolean: true; text: a mock value named after it); an optional argument with
  neither is left out. `{variables}` in a value are filled from its `variables` the same way; a value that is still a
  placeholder (an unknown `{name}`, `<your token>`) counts as no value.
- a named argument is two argv items, `--name value` (one, `--name=value`, when the name ends in `=`); a boolean
  named argument is a flag, present when its value is true; a required named argument with no value gets a mock.
- the pre-freeze seed format (snake_case) gives the package's own entry point only: its arguments were scraped from
  READMEs, placeholders and all.
- runtime arguments are for the runtime (npx, uvx, python, docker): we start the package's entry point ourselves, so
  the runtime's own options and the package spec are dropped; `python -m module` becomes the command; uvx's
  `--from package command` names the command; what is left is passed to the server before the package arguments.
  Runtime arguments for an unknown runtime are dropped.
- an HTTP transport's URL must be plain http on loopback (or a `{host}` variable): its port is a literal port the
  server listens on, or a variable an argument or environment variable sets, which then carries our `{port}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

from pipeline.models import LaunchSpec
from pipeline.sandbox.mockenv import ENV_NAME, RESERVED, mock_value

MAX_CHARS = 1000  # one argument or value
MAX_ARGS = 64
NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]{0,213}/)?[a-z0-9._~-][a-z0-9._~-]{0,213}$", re.I)
PYPI_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]{0,63})\}")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "0.0.0.0", "[::1]", "::1"}
PACKAGE_RUNTIMES = {"npx", "bunx", "bun", "pnpm", "pnpx", "yarn", "uvx", "uv", "pipx"}
PYTHON_RUNTIMES = {"python", "python3"}
# Runtime options that take a value (the value goes too) and those that do not: the runtime's, never the server's.
RUNTIME_VALUED = {"--from", "--with", "--python", "-p", "--package", "--index-url", "--extra-index-url", "--registry", "--spec"}
RUNTIME_FLAGS = {"-y", "--yes", "--no", "-q", "--quiet", "--silent", "--prefer-offline", "--refresh", "--no-cache", "--isolated",
                 "--offline", "x", "dlx", "exec", "run", "tool"}


class Refused(ValueError):
    """A package entry we will not start: the message says which field and why."""


@dataclass(frozen=True)
class Argument:
    """One registry argument, read leniently (the legacy seed and odd publishers spell things their own way)."""

    kind: str  # positional | named
    name: str | None
    value: str | None
    default: str | None
    hint: str | None
    required: bool
    format: str | None
    secret: bool
    variables: dict[str, dict[str, Any]]


def simple_launch(registry: str, identifier: str, version: str | None = None) -> LaunchSpec | None:
    """A package named by a source that says nothing else: its own entry point over stdio. None when the registry is
    not npm or PyPI; Refused when the name or version is not one."""
    registry = registry.strip().lower()
    if registry not in ("npm", "pypi"):
        return None
    return LaunchSpec(registry=registry, package=_package_name(registry, identifier), version=_version(version), transport="stdio")


def registry_launch(package: dict[str, Any]) -> LaunchSpec | None:
    """The launch of one server.json package entry (npm or PyPI), or None for other registries. Raises Refused."""
    registry = str(package.get("registryType") or package.get("registry_name") or package.get("registry_type") or "").strip().lower()
    if registry not in ("npm", "pypi"):
        return None
    identifier = str(package.get("identifier") or package.get("name") or "")
    spec = simple_launch(registry, identifier, _text(package.get("version")))
    assert spec is not None
    if "registryType" not in package:
        return spec  # the 2025-05 seed's arguments were scraped from READMEs (`--directory /path/to/...`): its own entry point
    transport = package.get("transport") if isinstance(package.get("transport"), dict) else {}
    kind = _text(transport.get("type")) or "stdio"
    if kind not in ("stdio", "streamable-http", "sse"):
        raise Refused(f"transport: unknown type {kind[:40]!r}")
    url, port_variable = _endpoint(kind, _text(transport.get("url")))
    environment = [found for raw in _items(package, "environmentVariables", "environment_variables")
                   if (found := _read_input(raw, "environmentVariables"))]
    runtime = [_read_argument(raw, "runtimeArguments") for raw in _items(package, "runtimeArguments", "runtime_arguments")]
    arguments = [_read_argument(raw, "packageArguments") for raw in _items(package, "packageArguments", "package_arguments")]
    if port_variable and not _sets(port_variable, environment, runtime + arguments):
        raise Refused(f"transport: the URL's port {{{port_variable}}} is set by no argument or environment variable")
    command, leading = _runtime(spec.package, _text(package.get("runtimeHint")), runtime, port_variable)
    args = leading + [item for argument in arguments for item in _argv(argument, port_variable)]
    env = {}
    for name, value in environment:
        if name == port_variable:
            env[name] = "{port}"
        elif value is not None and not _placeholder(value):
            env[name] = value  # a fixed value; a placeholder is left to the mock environment
    if len(args) > MAX_ARGS:
        raise Refused(f"{len(args)} arguments; at most {MAX_ARGS}")
    for item in [*args, *env.values()]:
        _check(item, "argument")
    return spec.model_copy(update={"command": command, "args": args, "env": env, "transport": kind, "url": url})


def first_launch(packages: Iterable[Any]) -> tuple[LaunchSpec | None, str | None]:
    """The launch of the first npm or PyPI entry that can be started, and why the ones before it could not (None: no
    refusal). Entries that are not objects are skipped."""
    refusals = []
    for index, raw in enumerate(packages):
        if not isinstance(raw, dict):
            continue
        try:
            launch = registry_launch(raw)
        except Refused as exc:
            refusals.append(f"package {index}: {exc}")
            continue
        if launch is not None:
            return launch, "; ".join(refusals) or None
    return None, "; ".join(refusals) or None


# ---------------------------------------------------------------- names and values


def _package_name(registry: str, identifier: str) -> str:
    name = identifier.strip()
    if not (NPM_NAME if registry == "npm" else PYPI_NAME).match(name):
        raise Refused(f"identifier {name[:80]!r} is not an {registry} package name")
    return name


def _version(version: str | None) -> str | None:
    if version is None or version.strip().lower() in ("", "latest"):
        return None
    if not VERSION.match(version.strip()):
        raise Refused(f"version {version[:40]!r} is not a plain version")
    return version.strip()


def _check(value: str, what: str) -> str:
    if len(value) > MAX_CHARS:
        raise Refused(f"{what} of {len(value)} characters; at most {MAX_CHARS}")
    if CONTROL.search(value):
        raise Refused(f"{what} {value[:40]!r} holds a control character")
    return value


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _items(package: dict[str, Any], *fields: str) -> list[dict[str, Any]]:
    for field in fields:
        value = package.get(field)
        if isinstance(value, list):
            if len(value) > MAX_ARGS:
                raise Refused(f"{field}: {len(value)} entries; at most {MAX_ARGS}")
            return [item for item in value if isinstance(item, dict)]
    return []


def _string(raw: dict[str, Any], field: str, where: str) -> str | None:
    value = raw.get(field)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return _check(value, f"{where}.{field}") if isinstance(value, str) else None


def _read_input(raw: dict[str, Any], where: str) -> tuple[str, str | None] | None:
    """(name, fixed value) of an environment variable; None for a name we never set (not a plain name, or one the
    sandbox sets itself). What it requires otherwise is the mock environment's to give (pipeline.sandbox.mockenv)."""
    name = _string(raw, "name", where) or ""
    if not ENV_NAME.match(name) or RESERVED.match(name):
        return None
    return name, _string(raw, "value", where)


def _read_argument(raw: dict[str, Any], where: str) -> Argument:
    name = _string(raw, "name", where)
    kind = "named" if (raw.get("type") == "named" or (raw.get("type") != "positional" and name)) else "positional"
    if kind == "named" and (not name or re.search(r"\s", name)):
        raise Refused(f"{where}: named argument {name!r} is not a flag name")
    variables = raw.get("variables") if isinstance(raw.get("variables"), dict) else {}
    return Argument(kind, name, _string(raw, "value", where), _string(raw, "default", where),
                    _string(raw, "valueHint", where) or _string(raw, "value_hint", where), bool(raw.get("isRequired") or raw.get("is_required")),
                    _text(raw.get("format")), bool(raw.get("isSecret") or raw.get("is_secret")),
                    {k: v for k, v in variables.items() if isinstance(k, str) and isinstance(v, dict)})


def _fill(value: str, variables: dict[str, dict[str, Any]], where: str) -> str:
    """`{name}` in a value replaced by its variable's value or default, or a mock when it is required; others kept."""
    def replace(match: re.Match[str]) -> str:
        variable = variables.get(match.group(1))
        if variable is None:
            return match.group(0)
        for field in ("value", "default"):
            found = _string(variable, field, where)
            if found is not None:
                return found
        return _mock(match.group(1), _text(variable.get("format")), bool(variable.get("isSecret")))
    return VARIABLE.sub(replace, value)


def _mock(name: str, format: str | None, secret: bool) -> str:
    if format == "filepath":
        return "{workdir}"
    if format == "number":
        return "1"
    if format == "boolean":
        return "true"
    return mock_value(re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() or "VALUE", secret=secret)


# ---------------------------------------------------------------- arguments


def _argv(argument: Argument, port_variable: str | None) -> list[str]:
    """The argv items of one argument (none when it is optional and has no value)."""
    bare = (argument.name or "").lstrip("-")
    if port_variable and port_variable in (argument.hint, bare):
        value: str | None = "{port}"
    elif argument.value is not None and not _placeholder(value := _fill(argument.value, argument.variables, "argument")):
        pass
    elif argument.default is not None and not _placeholder(argument.default):
        value = argument.default
    elif argument.required and (argument.kind == "positional" or argument.format != "boolean"):
        value = _mock(argument.hint or bare or "value", argument.format, argument.secret)
    else:
        value = None
    if argument.kind == "positional":
        return [value] if value is not None else []
    assert argument.name is not None
    if value is None:
        return [argument.name] if argument.required else []
    if argument.format == "boolean" and value in ("true", "false") and argument.value is None:
        return [argument.name] if value == "true" else []  # a boolean flag: present or absent
    return [argument.name + value] if argument.name.endswith("=") else [argument.name, value]


def _placeholder(value: str) -> bool:
    """A value that stands for one the user was to give: `{name}` we could not fill, or `<your token>`."""
    return bool(VARIABLE.search(value.replace("{port}", "").replace("{workdir}", ""))) or bool(re.fullmatch(r"<[^<>]*>", value.strip()))


def _runtime(package: str, hint: str | None, runtime: list[Argument], port_variable: str | None) -> tuple[str | None, list[str]]:
    """(command, leading args) from the runtime arguments, for the entry point we start ourselves."""
    items = [item for argument in runtime for item in _argv(argument, port_variable)]
    if items[:1] == ["-m"] and len(items) > 1:  # `python -m module`, whatever the hint says
        return "python", items
    runtime_name = (hint or "").rsplit("/", 1)[-1].lower()
    if runtime_name in PYTHON_RUNTIMES:
        return None, []
    if runtime_name not in PACKAGE_RUNTIMES:
        return None, []  # node's or docker's own options, or a runtime we do not know: not the server's arguments
    command, leading, index = None, [], 0
    from_given = False
    while index < len(items):
        item = items[index]
        option = item.split("=", 1)[0]
        if option in RUNTIME_VALUED:
            from_given = from_given or option == "--from"
            index += 1 if "=" in item else 2
            continue
        if item in RUNTIME_FLAGS or _is_package_spec(item, package):
            index += 1
            continue
        if from_given and command is None and not item.startswith("-"):
            command = item  # uvx --from <package> <command>
        else:
            leading.append(item)
        index += 1
    return command, leading


def _is_package_spec(item: str, package: str) -> bool:
    """`package`, `package@version`, `package[extras]@version`, `package==version` and the like."""
    lowered, name = item.lower(), package.lower()
    return lowered == name or (lowered.startswith(name) and lowered[len(name)] in "@[=<>~!")


def _sets(variable: str, environment: list[tuple[str, str | None]], arguments: list[Argument]) -> bool:
    return any(name == variable for name, _ in environment) or any(
        variable in (a.hint, (a.name or "").lstrip("-")) for a in arguments)


# ---------------------------------------------------------------- transport


def _endpoint(kind: str, url: str | None) -> tuple[str | None, str | None]:
    """(URL inside the sandbox, the variable that sets its port) of an HTTP transport; (None, None) over stdio."""
    if kind == "stdio":
        return None, None
    if url is None:
        raise Refused(f"transport: {kind} without a URL")
    _check(url, "transport URL")
    port_variable = None
    text = url
    for match in VARIABLE.finditer(url):
        name = match.group(1)
        if name.lower() == "host":
            text = text.replace(match.group(0), "127.0.0.1")
        elif "port" in name.lower() and port_variable is None:
            port_variable = name
            text = text.replace(match.group(0), "1")  # a stand-in, so the rest parses
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"transport: URL {url[:80]!r}: {exc}") from exc
    if parts.scheme != "http":
        raise Refused(f"transport: URL {url[:80]!r} is not plain http")
    if (parts.hostname or "") not in {h.strip("[]") for h in LOOPBACK_HOSTS}:
        raise Refused(f"transport: URL {url[:80]!r} is not on loopback: a package started here serves there")
    if VARIABLE.search(parts.path or ""):
        raise Refused(f"transport: URL {url[:80]!r} has a variable in its path")
    host = "127.0.0.1" if parts.hostname == "0.0.0.0" else parts.hostname
    host = f"[{host}]" if host and ":" in host else host
    shown_port = "{port}" if port_variable else str(port or 80)
    return f"http://{host}:{shown_port}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else ""), port_variable



def listing_launch(launch: LaunchSpec | None, packages: Iterable[Any]) -> LaunchSpec | None:
    """A listing's launch: the one its source built, else its first npm or PyPI package's own entry point (other sources
    name a package and nothing else). A package name that is not one gives no launch."""
    if launch is not None:
        return launch
    for package in packages:
        try:
            found = simple_launch(package.registry, package.identifier, package.version)
        except Refused:
            continue
        if found is not None:
            return found
    return None
