"""Entry points a README states: install and run commands (`npx -y pkg`, `uvx pkg`, `pip install pkg && cmd`, `docker run
…`, `claude mcp add name -- npx …`) and "command"/"args" in mcpServers JSON blocks.

Arguments are argv items, never shell text: a command with shell metacharacters (pipes, redirections, substitutions,
placeholders in angle brackets) is refused whole rather than half-understood.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, Iterator

from pipeline.models import EntryPoint, Registry, Transport

MAX_README = 300_000
MAX_LINE = 2_000  # characters of one command line read
MAX_BLOCK = 50_000  # characters of one fenced block parsed as JSON
MAX_ARGS = 40
_META = re.compile(r"[;&|`$<>(){}\\*?!\n\r]")
_LAUNCHER = re.compile(r"(?:^|[\s`>$])((?:npx|uvx|pipx run|docker run|pip3? install|uv pip install|uv tool run|claude mcp add)\s.{1,2000})")
_JSON_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)\s{0,4}(json5?|jsonc|javascript|js)?\s*$", re.I)
_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)")
_INLINE = re.compile(r"`([^`\n]{1,2000})`")
# Clients and bridges to a remote server, not the server: `npx mcp-remote URL` names an endpoint (endpoints.py), not an entry point.
_PROXIES = frozenset({"mcp-remote", "@modelcontextprotocol/inspector", "supergateway", "@smithery/cli", "@smithery/sdk", "mcp-proxy"})
_RUNNERS = frozenset({"npx", "uvx", "pipx", "pip", "pip3", "uv", "docker", "claude"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}=")
_NPM = re.compile(r"(?:@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,213}(?:@[A-Za-z0-9._^~-]{1,64})?", re.I)
_PYPI = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}(?:\[[A-Za-z0-9_,-]{1,100}\])?(?:(?:==|>=|@)[A-Za-z0-9._*+!-]{1,64})?")


def safe_argv(argv: list[Any]) -> bool:
    """Every item a string free of shell metacharacters (and not too many of them)."""
    return len(argv) <= MAX_ARGS and all(isinstance(a, str) and len(a) <= 500 and not _META.search(a) for a in argv)


def readme_entry_points(readme: str | None) -> Iterator[EntryPoint]:
    if not readme:
        return
    lines = readme[:MAX_README].splitlines()
    yield from _commands(lines)
    yield from _config_blocks(lines)


def _commands(lines: list[str]) -> Iterator[EntryPoint]:
    for text in _code(lines):
        for match in _LAUNCHER.finditer(text[:MAX_LINE]):
            steps = [s.strip() for s in match.group(1).strip().split("&&")]
            if len(steps) > 2:
                continue
            argvs = [_split(step) for step in steps]
            if any(not argv for argv in argvs):
                continue
            entry = from_argv(argvs[0], argvs[1] if len(argvs) == 2 else None)  # type: ignore[arg-type]
            if entry is not None:
                yield entry


def _code(lines: list[str]) -> Iterator[str]:
    """The README's code: fenced blocks line by line (backslash continuations joined, at most 20 lines at once) and
    inline code spans; prose is not read as commands."""
    inside = False
    held: list[str] = []
    for line in lines:
        line = line[:MAX_LINE]
        if _FENCE.match(line):
            inside = not inside
            if held:
                yield " ".join(held)
            held = []
            continue
        if not inside:
            yield from _INLINE.findall(line)
            continue
        stripped = line.rstrip()
        if stripped.endswith("\\") and len(held) < 20:
            held.append(stripped[:-1])
            continue
        held.append(stripped)
        yield " ".join(held)
        held = []


def _split(text: str) -> list[str] | None:
    """argv of one shell command, or None when it is more than a plain command (metacharacters, unbalanced quotes)."""
    try:
        argv = shlex.split(text[:MAX_LINE], comments=False, posix=True)
    except ValueError:
        return None
    while argv and _ASSIGNMENT.match(argv[0]):  # FOO=bar npx ...: the environment is not the command
        argv = argv[1:]
    return argv if safe_argv(argv) else None


def from_argv(argv: list[str], then: list[str] | None = None, source: str = "README") -> EntryPoint | None:
    """An entry point for one command line (`then`: the command run after an install)."""
    if argv[:3] == ["claude", "mcp", "add"]:
        return from_argv(argv[argv.index("--") + 1:], source=source) if "--" in argv and argv.index("--") + 1 < len(argv) else None
    if argv[:2] in (["pipx", "run"], ["uv", "tool"]):
        argv = ["uvx", *argv[2:]] if argv[0] == "uv" else ["pipx", *argv[1:]]
    command = argv[0].rsplit("/", 1)[-1]
    if command == "npx":
        return _runner(argv, "npm", _NPM, source)
    if command in ("uvx", "pipx"):
        return _runner(argv, "pypi", _PYPI, source)
    if command in ("pip", "pip3") or argv[:3] == ["uv", "pip", "install"]:
        package = _first_operand(argv[3:] if command == "uv" else argv[2:])
        if package is None or not _PYPI.fullmatch(package) or then is None or not then:
            return None
        return EntryPoint(registry="pypi", package=_bare(package, "pypi"), command=then[0], args=then[1:], transport=_transport(then),
                          source=f"{source} pip install")
    if command == "docker" and len(argv) > 2 and argv[1] == "run":
        return EntryPoint(command="docker", args=argv[1:], transport=_transport(argv), source=f"{source} docker run")
    if command in ("node", "python", "python3", "uv", "deno", "bun") and len(argv) > 1:
        return EntryPoint(command=command, args=argv[1:], transport=_transport(argv), source=source)
    return None


def _runner(argv: list[str], registry: Registry, name: re.Pattern[str], source: str) -> EntryPoint | None:
    """npx / uvx / pipx: the package is the first operand (or uvx's --from); what follows it are the server's arguments."""
    rest = argv[1:]
    if "--from" in rest and rest.index("--from") + 1 < len(rest):
        package = rest[rest.index("--from") + 1]
    else:
        package = _first_operand(rest)
    if package is None or not name.fullmatch(package) or _bare(package, registry).lower() in _PROXIES:
        return None
    return EntryPoint(registry=registry, package=_bare(package, registry), command=argv[0].rsplit("/", 1)[-1], args=rest,
                      transport=_transport(rest), source=f"{source} {argv[0].rsplit('/', 1)[-1]}")


def _first_operand(argv: list[str]) -> str | None:
    """The first item that is not an option (npx -y, --yes, -p pkg take no operand of ours)."""
    skip_next = False
    for item in argv:
        if skip_next:
            skip_next = False
            continue
        if item in ("--package", "-p", "--python", "--with", "--index-url", "-i"):
            skip_next = True
            continue
        if not item.startswith("-"):
            return item
    return None


def _bare(package: str, registry: Registry) -> str:
    """The package's name without the version or extras it was written with."""
    if registry == "npm":
        head, at, _ = package[1:].partition("@")
        return (package[0] + head) if at else package
    return re.split(r"[\[=><@]", package, maxsplit=1)[0]


def _transport(argv: list[str]) -> Transport:
    """stdio unless the arguments ask for HTTP (--transport http|sse, --port)."""
    for i, item in enumerate(argv):
        value = item.split("=", 1)[1] if "=" in item else (argv[i + 1] if i + 1 < len(argv) else "")
        if item.split("=", 1)[0] in ("--transport", "-t"):
            if value == "sse":
                return "sse"
            if value in ("http", "streamable-http", "streamable_http", "streamableHttp", "shttp"):
                return "streamable-http"
        if item.split("=", 1)[0] == "--port":
            return "streamable-http"
    return "stdio"


def _config_blocks(lines: list[str]) -> Iterator[EntryPoint]:
    """Fenced JSON blocks holding a client configuration: {"mcpServers" | "servers": {name: {"command", "args"}}}."""
    inside = False
    block: list[str] | None = None
    size = 0
    for line in lines:
        if _FENCE.match(line):
            if inside and block is not None:
                yield from _servers(_parse("\n".join(block)))
            inside, block, size = not inside, ([] if not inside and _JSON_FENCE.match(line) else None), 0
        elif block is not None and size < MAX_BLOCK:
            block.append(line[:MAX_BLOCK])
            size += len(line)


def _parse(text: str) -> Any:
    for candidate in (text, re.sub(r",(\s{0,200}[}\]])", r"\1", re.sub(r"(?m)^\s{0,80}//.{0,2000}$", "", text))):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


def _servers(document: Any) -> Iterator[EntryPoint]:
    if not isinstance(document, dict):
        return
    mcp = document.get("mcp") if isinstance(document.get("mcp"), dict) else {}  # VS Code's settings.json
    for holder in (document, mcp):
        servers = holder.get("mcpServers") or holder.get("servers") or holder.get("context_servers")
        if not isinstance(servers, dict):
            continue
        for config in list(servers.values())[:20]:
            if not isinstance(config, dict) or not isinstance(config.get("command"), str):
                continue
            args = config.get("args", [])
            argv = [config["command"], *(args if isinstance(args, list) else [])]
            if not safe_argv(argv):
                continue
            entry = from_argv(argv, source="README mcpServers")
            if entry is None and argv[0] not in _RUNNERS and not argv[0].startswith("/"):
                entry = EntryPoint(command=argv[0], args=argv[1:], transport=_transport(argv[1:]), source="README mcpServers")
            if entry is not None:
                yield entry
