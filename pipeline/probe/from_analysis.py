"""A way to reach a server discovery knew none for, from its latest static analysis (seed 000's Sandbox Probing: "we detect
the server's entry point from static analysis"): an entry point naming an npm or PyPI package becomes a launch, run in
the sandbox like any package; else a validated README endpoint becomes its remote, probed under the same policy as any
remote (private addresses refused, the opt-out file honoured).

Only stdio entry points are started: an HTTP one would need its port argument found and rewritten, which a README does
not state reliably. A README's arguments are examples (paths, placeholders), so the entry point starts alone, as the
2025-05 seed's scraped entries do (methodology deviation 44).
"""

from __future__ import annotations

from pipeline.models import AnalysisResult, EntryPoint, LaunchSpec, Server
from pipeline.sandbox.names import BadName, check_package

INTERPRETERS = frozenset({"node", "python", "python3", "deno", "bun", "uv", "docker"})  # they run a file, not the package's entry point
COMMAND_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@._+-")


def with_analysis(server: Server, analysis: AnalysisResult | None) -> tuple[Server, str | None]:
    """`server` with a launch or a remote from its analysis when it has neither, and what it came from (None: unchanged)."""
    if server.launch is not None or server.remote_url or analysis is None or not analysis.ok:
        return server, None
    for entry in analysis.entry_points:
        spec = launch_spec(entry)
        if spec is not None:
            return server.model_copy(update={"launch": spec, "transport": "stdio"}), f"analysis entry point: {entry.source}"
    for endpoint in analysis.endpoints:
        transport = endpoint.transport or "streamable-http"
        where = f"{endpoint.file} line {endpoint.line}" if endpoint.line else endpoint.file
        return server.model_copy(update={"remote_url": endpoint.url, "transport": transport}), f"analysis endpoint: {where}"
    return server, None


def launch_spec(entry: EntryPoint) -> LaunchSpec | None:
    """A stdio launch for an entry point that names an npm or PyPI package; None for anything else."""
    if entry.registry not in ("npm", "pypi") or not entry.package or entry.transport != "stdio" or entry.command in INTERPRETERS:
        return None
    try:
        package = check_package(entry.registry, entry.package)
    except BadName:
        return None
    return LaunchSpec(registry=entry.registry, package=package, command=_command(entry), transport="stdio")


def _command(entry: EntryPoint) -> str | None:
    """The installed command to run: a manifest's bin or script, uvx's `--from P COMMAND`, the command after `pip install`;
    None for the package's own entry point (npx P, uvx P)."""
    if entry.command in ("npx", "uvx", "pipx"):
        args = entry.args
        at = args.index("--from") + 2 if "--from" in args else len(args)
        return args[at] if at < len(args) and _plain(args[at]) else None
    return entry.command if entry.command and _plain(entry.command) else None


def _plain(command: str) -> bool:
    return 0 < len(command) <= 128 and set(command) <= COMMAND_CHARS and not command.startswith(("-", "."))
