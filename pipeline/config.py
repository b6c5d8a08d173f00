"""Settings: paths, timeouts, concurrency. Read from the environment once, at the CLI edge."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pipeline.assets import CHECKOUT

# A source tree keeps its working database and built site at its top, wherever it runs from; an installed package,
# in the directory it runs from.
_WORKDIR = CHECKOUT or Path.cwd()


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcp-scoreboard"


class Settings(BaseModel):
    db_path: Path = _WORKDIR / "data" / "scoreboard.db"
    site_dir: Path = _WORKDIR / "_site"
    # SCOREBOARD_OPTOUT: the opt-out file (pipeline.fleet.optout); a source tree's own at its top, none for an installed package.
    optout_path: Path | None = CHECKOUT / "optout.yml" if CHECKOUT else None
    cache_dir: Path = _default_cache_dir()
    site_url: str = "http://localhost:8000/"  # where the site is published: absolute links in the sitemap and feed
    datasette_url: str = "http://localhost:8001/"  # where Datasette serves the database: server pages link to their rows
    snapshot_store: str | None = None  # SCOREBOARD_SNAPSHOT_STORE: where runs publish snapshots; the downloads page links a GitHub one
    # Probing untrusted servers: every wait is bounded.
    start_timeout: float = 30.0  # spawn until an HTTP server accepts connections
    call_timeout: float = 10.0  # one request/response (SCOREBOARD_CALL_TIMEOUT)
    max_response_bytes: int = 5_000_000  # one response, SSE event or stdio message (SCOREBOARD_MAX_RESPONSE_BYTES)
    probe_timeout: float = 12.0  # a whole deep probe of one server, every step within it (SCOREBOARD_PROBE_TIMEOUT)
    fast_probe_timeout: float = 15.0
    install_timeout: float = 600.0
    sandbox: Literal["auto", "bubblewrap", "docker"] = "auto"  # SCOREBOARD_SANDBOX: where packages run (auto: bubblewrap, else Docker)
    # Remote servers probed at once (SCOREBOARD_CONCURRENCY): each has one probe, so one connection at a time, in flight
    # (seed 000: at most one concurrent connection per server); most of a probe is waiting on the network (deviation 87).
    concurrency: int = 48
    sandbox_concurrency: int = 4  # SCOREBOARD_SANDBOX_CONCURRENCY: packages started in the sandbox at once (CPU and memory bound)
    connect_timeout: float = 4.0  # SCOREBOARD_CONNECT_TIMEOUT: every connection a probe opens; a black-holed host costs this once
    allow_private: bool = False  # SCOREBOARD_ALLOW_PRIVATE=1: catalog remotes on loopback/private addresses may be probed (tests)
    stderr_cap: int = 64_000  # bytes of a server's stderr kept as evidence
    # Discovery online: optional credentials and endpoints, from the environment only.
    github_token: str | None = None  # GITHUB_TOKEN: topic search (30 req/min instead of 10), tarballs
    smithery_api_key: str | None = None  # SMITHERY_API_KEY: Smithery's list API needs one
    pulsemcp_api_key: str | None = None  # PULSEMCP_API_KEY + PULSEMCP_TENANT_ID: the v0.1 API; without, the open v0beta list
    pulsemcp_tenant: str | None = None
    glama_token: str | None = None  # GLAMA_API_TOKEN: optional
    npm_downloads_api: str | None = None  # SCOREBOARD_NPM_DOWNLOADS_API: base URL of npm's download-counts API
    pypi_stats_api: str | None = None  # SCOREBOARD_PYPI_STATS_API: base URL of the PyPI Stats API
    # Analyze: where sources are fetched from (never the pip/npm configuration's mirrors), and how many at once.
    github_api: str = "https://api.github.com"  # SCOREBOARD_GITHUB_API (tests point it at a local replay)
    # Where package archives are read: by default the registries npm and pip are configured with (package_registries).
    npm_registry: str | None = None  # SCOREBOARD_NPM_REGISTRY
    pypi_url: str | None = None  # SCOREBOARD_PYPI_URL: the base of a PyPI JSON API (/pypi/<name>/json) and its files
    analyze_concurrency: int = 8  # SCOREBOARD_ANALYZE_CONCURRENCY: sources fetched at once
    analyze_dns: bool = False  # SCOREBOARD_ANALYZE_DNS=1: an endpoint a README names is kept only if it resolves to a public address
    analyze_connect_timeout: float = 3.0  # an unreachable host costs this once: GitHub is then not asked again that run
    # Set by --shard-in-place only (never from the environment): --db was checked by the restore just before (deviation 108).
    db_checked: bool = False

    @classmethod
    def from_env(cls, **overrides: object) -> "Settings":
        env = {
            "db_path": os.environ.get("SCOREBOARD_DB"),
            "site_dir": os.environ.get("SCOREBOARD_SITE"),
            "optout_path": os.environ.get("SCOREBOARD_OPTOUT"),
            "cache_dir": os.environ.get("SCOREBOARD_CACHE"),
            "site_url": os.environ.get("SCOREBOARD_SITE_URL"),
            "datasette_url": os.environ.get("SCOREBOARD_DATASETTE_URL"),
            "snapshot_store": os.environ.get("SCOREBOARD_SNAPSHOT_STORE"),
            "allow_private": os.environ.get("SCOREBOARD_ALLOW_PRIVATE"),
            "call_timeout": os.environ.get("SCOREBOARD_CALL_TIMEOUT"),
            "concurrency": os.environ.get("SCOREBOARD_CONCURRENCY"),
            "connect_timeout": os.environ.get("SCOREBOARD_CONNECT_TIMEOUT"),
            "sandbox_concurrency": os.environ.get("SCOREBOARD_SANDBOX_CONCURRENCY"),
            "probe_timeout": os.environ.get("SCOREBOARD_PROBE_TIMEOUT"),
            "max_response_bytes": os.environ.get("SCOREBOARD_MAX_RESPONSE_BYTES"),
            "github_token": os.environ.get("GITHUB_TOKEN"),
            "smithery_api_key": os.environ.get("SMITHERY_API_KEY"),
            "pulsemcp_api_key": os.environ.get("PULSEMCP_API_KEY"),
            "pulsemcp_tenant": os.environ.get("PULSEMCP_TENANT_ID"),
            "glama_token": os.environ.get("GLAMA_API_TOKEN"),
            "npm_downloads_api": os.environ.get("SCOREBOARD_NPM_DOWNLOADS_API"),
            "pypi_stats_api": os.environ.get("SCOREBOARD_PYPI_STATS_API"),
            "sandbox": os.environ.get("SCOREBOARD_SANDBOX"),
            "github_api": os.environ.get("SCOREBOARD_GITHUB_API"),
            "npm_registry": os.environ.get("SCOREBOARD_NPM_REGISTRY"),
            "pypi_url": os.environ.get("SCOREBOARD_PYPI_URL"),
            "analyze_concurrency": os.environ.get("SCOREBOARD_ANALYZE_CONCURRENCY"),
            "analyze_dns": os.environ.get("SCOREBOARD_ANALYZE_DNS"),
        }
        values = {k: v for k, v in env.items() if v}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
