"""GitHub's REST API replayed on a real local socket for the analyze tests: its response shapes and headers (ETag and
304, 404, rate-limit headers, the tarball redirect to another origin) and tarballs shaped as codeload serves them."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import httpx
import pytest

from pipeline.analyze.github import GitHubFetcher
from tests.support import server

SHA = "8c1f2b1d7e0a4f3b9c6d5e4f3a2b1c0d9e8f7a6b"
Answer = tuple[int, dict[str, str], bytes]


def repository_object(owner: str, name: str, **fields: Any) -> dict[str, Any]:
    """GET /repos/{owner}/{repo} as GitHub answers it (the fields we read, and the ones around them)."""
    full = f"{owner}/{name}"
    body = {
        "id": 841230, "node_id": "R_kgDOAAzV7g", "name": name, "full_name": full, "private": False,
        "owner": {"login": owner, "id": 182288589, "type": "Organization", "url": f"https://api.github.com/users/{owner}"},
        "html_url": f"https://github.com/{full}", "description": "Model Context Protocol Servers", "fork": False,
        "url": f"https://api.github.com/repos/{full}", "created_at": "2024-11-19T01:10:17Z", "updated_at": "2026-11-28T09:12:00Z",
        "pushed_at": "2026-11-27T18:03:41Z", "homepage": "https://modelcontextprotocol.io", "size": 28713, "stargazers_count": 7321,
        "watchers_count": 7321, "language": "TypeScript", "has_issues": True, "forks_count": 812, "archived": False, "disabled": False,
        "open_issues_count": 143, "license": {"key": "mit", "name": "MIT License", "spdx_id": "MIT", "url": "https://api.github.com/licenses/mit",
                                              "node_id": "MDc6TGljZW5zZTEz"},
        "topics": ["mcp"], "visibility": "public", "forks": 812, "open_issues": 143, "watchers": 7321, "default_branch": "main",
        "network_count": 812, "subscribers_count": 98,
    }
    body.update(fields)
    return body


def release(tag: str, published: str, body: str, prerelease: bool = False) -> dict[str, Any]:
    return {"url": f"https://api.github.com/repos/o/r/releases/{abs(hash(tag)) % 10**8}", "tag_name": tag, "target_commitish": "main",
            "name": tag, "draft": False, "prerelease": prerelease, "created_at": published, "published_at": published,
            "author": {"login": "bot"}, "assets": [], "tarball_url": "https://api.github.com/repos/o/r/tarball/" + tag, "body": body}


def commit(date: str) -> dict[str, Any]:
    person = {"name": "a", "email": "a@example.com", "date": date}
    return {"sha": SHA, "node_id": "C_kw", "commit": {"author": person, "committer": person, "message": "fix", "comment_count": 0},
            "url": f"https://api.github.com/repos/o/r/commits/{SHA}", "author": {"login": "a"}, "committer": {"login": "web-flow"}, "parents": []}


def tarball(files: dict[str, bytes], root: str = f"o-r-{SHA[:7]}", extra: Callable[[tarfile.TarFile], None] | None = None) -> bytes:
    """A tarball as codeload serves it: one top folder, the commit id in the pax global header's comment."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": SHA}) as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra:
            extra(tar)
    return buffer.getvalue()


MONOREPO = {
    "README.md": b"# Servers\n", "LICENSE": b"MIT License\n\nCopyright (c) 2024", ".github/workflows/ci.yml": b"on: push\n",
    "package-lock.json": b"{}", "src/time/README.md": b"# Time server\n\n## Usage\n", "src/time/pyproject.toml":
    b'[project]\nname = "mcp-server-time"\nversion = "1.0.0"\ndependencies = ["mcp>=1.6.0"]\n',
    "src/time/src/mcp_server_time/server.py": b"from mcp.server.fastmcp import FastMCP\n", "src/other/index.ts": b"export {}\n",
}


class Replay:
    """GitHub's API on 127.0.0.1: exact paths (with query) or paths without query answer; everything else is GitHub's 404."""

    def __init__(self) -> None:
        self.routes: dict[str, Callable[[dict[str, str]], Answer]] = {}
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.remaining = 4990
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server hook
                headers = {k.lower(): v for k, v in self.headers.items()}
                replay.seen.append((self.path, headers))
                answer = replay.routes.get(self.path) or replay.routes.get(self.path.split("?")[0])
                status, extra, body = answer(headers) if answer else replay.json(404, {
                    "message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.codeload = f"http://localhost:{self.port}"  # another origin on the same socket, as codeload.github.com is

    def json(self, status: int, body: Any, **headers: str) -> Answer:
        reset = str(int(time.time()) + 3600)
        common = {"Content-Type": "application/json; charset=utf-8", "X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": str(self.remaining),
                  "X-RateLimit-Reset": reset, "X-RateLimit-Used": str(5000 - self.remaining), "X-RateLimit-Resource": "core",
                  "X-GitHub-Media-Type": "github.v3; format=json", "X-GitHub-Api-Version-Selected": "2022-11-28"}
        return status, {**common, **headers}, json.dumps(body).encode()

    def repository(self, owner: str, name: str, etag: str = 'W/"7f3e9a"', tar: bytes | None = None, **fields: Any) -> None:
        """A whole repository: metadata (with ETag and 304), releases, tags, commits and the tarball behind its redirect."""
        base = f"/repos/{owner}/{name}"
        body = repository_object(owner, name, **fields)

        def metadata(headers: dict[str, str]) -> Answer:
            if headers.get("if-none-match") == etag:
                return 304, {"ETag": etag, "X-RateLimit-Remaining": str(self.remaining)}, b""
            return self.json(200, body, ETag=etag)

        self.routes[base] = metadata
        self.routes[f"{base}/releases"] = lambda h: self.json(200, [
            release("v1.2.0", "2026-11-01T10:00:00Z", "## What's changed\n" + "* a fix to the time zone lookup\n" * 6),
            release("v1.2.0-rc.1", "2026-10-20T10:00:00Z", "Full Changelog: v1.1.0...v1.2.0-rc.1", prerelease=True),
            release("v1.1.0", "2026-08-01T10:00:00Z", "")])
        self.routes[f"{base}/tags"] = lambda h: self.json(200, [
            {"name": t, "commit": {"sha": SHA, "url": "https://api.github.com/repos/o/r/commits/" + SHA},
             "zipball_url": "https://api.github.com/repos/o/r/zipball/" + t, "tarball_url": "https://api.github.com/repos/o/r/tarball/" + t,
             "node_id": "REF_k"} for t in ("v1.2.0", "v1.2.0-rc.1", "v1.1.0", "nightly")])
        self.routes[f"{base}/commits"] = lambda h: self.json(200, [commit(f"2026-11-{d:02d}T12:00:00Z") for d in range(27, 7, -1)])
        codeload = f"/{owner}/{name}/legacy.tar.gz/refs/heads/main"
        self.routes[f"{base}/tarball/main"] = lambda h: (302, {"Location": f"{self.codeload}{codeload}", "Content-Length": "0"}, b"")
        self.routes[codeload] = lambda h: (200, {"Content-Type": "application/x-gzip",
                                                 "Content-Disposition": f"attachment; filename={owner}-{name}-{SHA[:7]}.tar.gz"},
                                           tar if tar is not None else tarball(MONOREPO))

    def paths(self) -> list[str]:
        return [p for p, _ in self.seen]

    def __enter__(self) -> Replay:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def github_fetcher(replay: Replay, client: httpx.Client, **kwargs: Any) -> GitHubFetcher:
    return GitHubFetcher(client, replay.base, token="ghp_replaytoken", codeload=replay.codeload, **kwargs)


def time_server(**fields: Any):
    """A server in the replayed monorepo's src/time folder."""
    return server(id="time", repository="https://github.com/o/r", subpath="src/time", **fields)


@pytest.fixture
def replay():
    """A running GitHub replay, for the tests that import this fixture."""
    with Replay() as running:
        yield running


@pytest.fixture
def client():
    with httpx.Client(timeout=httpx.Timeout(5.0, connect=2.0)) as http:
        yield http
