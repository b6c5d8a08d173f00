"""npm: resolve a version once (`npm view`), install exactly it with scripts ignored, verify its integrity.

Each package and version has its own prefix, so dependencies never mix. `--ignore-scripts` means no package code
runs at install; when a package's command needs its install scripts (its bin's file is built by them), the recorded
fallback runs `npm rebuild` inside the sandbox, with the network and only the prefix writable.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipeline.sandbox import Backend, Job, Mount, ResourceLimits, egress
from pipeline.sandbox.installenv import readable_mounts, registry_endpoints
from pipeline.sandbox.names import check_version
from pipeline.sandbox.steps import Bounds, StepFailed, run_sandboxed, run_step

QUIET = ("--no-audit", "--no-fund", "--update-notifier=false", "--loglevel=warn")
PROXY_SETTINGS = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "npm_config_proxy", "npm_config_https_proxy")


@dataclass(frozen=True)
class Resolved:
    version: str
    integrity: str | None  # the tarball's sha512 integrity as the registry states it


def npm_binary() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise StepFailed("node and npm are needed for npm servers and were not found on PATH")
    return npm


def resolve(package: str, request: str | None, env: dict[str, str], bounds: Bounds) -> Resolved:
    argv = [npm_binary(), "view", "--json", *QUIET, "--", f"{package}@{request or 'latest'}", "version", "dist.integrity"]
    output = run_step(argv, f"npm view {package}", env, bounds).strip()
    try:
        found = json.loads(output) if output else None
    except ValueError as exc:
        raise StepFailed(f"npm view {package}: unreadable answer") from exc
    if isinstance(found, list):  # a range matched several versions, oldest first: npm install takes the newest
        found = found[-1] if found else None
    if isinstance(found, str):  # only one field known
        found = {"version": found}
    if not isinstance(found, dict) or not isinstance(found.get("version"), str):
        raise StepFailed(f"npm view {package}: no version matches {request or 'latest'!r}")
    integrity = found.get("dist.integrity")
    return Resolved(check_version(found["version"]), integrity if isinstance(integrity, str) else None)


def install(package: str, resolved: Resolved, prefix: Path, env: dict[str, str], bounds: Bounds) -> str | None:
    """Install exactly `package@version` into `prefix`, no scripts; return the integrity the lockfile records."""
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"name": "scoreboard-install", "private": true}\n')
    argv = [npm_binary(), "install", "--ignore-scripts", *QUIET, "--prefix", str(prefix), "--", f"{package}@{resolved.version}"]
    with registry_only(env, bounds) as guarded_env:
        run_step(argv, f"npm install {package}@{resolved.version}", guarded_env, bounds, prefix)
    try:
        lock = json.loads((prefix / "package-lock.json").read_text())
        entry = lock["packages"][f"node_modules/{package}"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StepFailed(f"npm install {package}: no lockfile entry for it ({exc})") from exc
    if entry.get("version") != resolved.version:
        raise StepFailed(f"npm install {package}: installed {entry.get('version')!r}, not the resolved {resolved.version}")
    if resolved.integrity and entry.get("integrity") != resolved.integrity:
        found = entry.get("integrity")
        raise StepFailed(f"npm install {package}@{resolved.version}: its integrity {found!r} is not the registry's {resolved.integrity!r}")
    return entry.get("integrity") or resolved.integrity


@contextmanager
def registry_only(env: dict[str, str], bounds: Bounds) -> Iterator[dict[str, str]]:
    """npm on the host reaches its registry and nothing else. A package's dependencies may be named by URL or git
    spec (`"x": "http://127.0.0.1:5432/..."`, `"git+ssh://..."`), which npm would fetch from the host, anywhere: every
    request goes through the egress proxy, which reaches the registry's host and port only (403 for the rest), and
    git is a command that fails. Where the host has a proxy of its own, registry access needs it and that proxy decides."""
    if any(env.get(name) for name in PROXY_SETTINGS):
        yield env
        return
    with egress.listening(registry_endpoints([_registry(env, bounds)])) as proxy:
        yield {**{k: v for k, v in env.items() if k not in egress.NO_PROXY_ENV}, **dict.fromkeys(egress.PROXY_ENV, proxy),
               "npm_config_git": shutil.which("false") or "/bin/false",
               # a refused request is retried: briefly, so a URL dependency fails in seconds, not minutes
               "npm_config_fetch_retry_mintimeout": "1000", "npm_config_fetch_retry_maxtimeout": "4000"}


def _registry(env: dict[str, str], bounds: Bounds) -> str:
    return env.get("npm_config_registry") or run_step([npm_binary(), "config", "get", "registry"], "npm config", env, bounds).strip()


def build_in_sandbox(backend: Backend, prefix: Path, env: dict[str, str], bounds: Bounds) -> None:
    """Run the install scripts of everything in `prefix` (npm rebuild), inside the sandbox."""
    npm = npm_binary()
    inside = {**env, "HOME": "/work"}
    mounts = (Mount(prefix, str(prefix), writable=True), *_tool_mounts(npm, env), *readable_mounts(env))
    limits = ResourceLimits(memory_mb=2048, pids=256, cpu_seconds=int(bounds.remaining("npm rebuild")) + 1,
                            wall_seconds=bounds.remaining("npm rebuild"))
    job = Job(argv=(npm, "rebuild", *QUIET, "--prefix", str(prefix)), env=inside, mounts=mounts, network=True,
              registries=registry_endpoints([_registry(env, bounds)]), limits=limits)
    run_sandboxed(backend, job, "npm rebuild (install scripts)", bounds, prefix)
    # npm links a bin only when its file exists, which the scripts may just have made: link again, running nothing.
    run_step([npm, "rebuild", "--ignore-scripts", *QUIET, "--prefix", str(prefix)], "npm rebuild (links)", env, bounds, prefix)


def _tool_mounts(npm: str, env: dict[str, str]) -> tuple[Mount, ...]:
    """node and npm, where they live outside the system directories (a version manager's)."""
    dirs = {str(Path(npm).resolve().parent.parent), *env["PATH"].split(":")}
    return tuple(Mount(Path(d), d) for d in sorted(dirs) if d.startswith("/") and not d.startswith(("/usr", "/bin")) and Path(d).is_dir())
