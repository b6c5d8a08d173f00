"""GitHubFetcher against GitHub's REST API replayed on a real local socket (its response shapes and headers: ETag and
304, 404, archived, rate limits, the tarball redirect, hostile tarballs), the source chooser's fallbacks, and the
Dead / Archived / Stale flags firing end to end from a replayed repository through run_analyze and the score."""

from __future__ import annotations

import io
import json
import socket
import tarfile
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from pipeline import store
from pipeline.analyze import run_analyze
from pipeline.analyze.archive import Limits
from pipeline.analyze.fetch import FetchFailed, NotModified, SourceTree, Unavailable
from pipeline.analyze.github import GitHubFetcher
from pipeline.analyze.sources import NO_SOURCE, SourceChooser, fetch_order
from pipeline.discover import run_discover
from pipeline.models import AnalysisResult, LaunchSpec, RepositoryFacts
from pipeline.progress import Progress
from pipeline.score import run_score
from tests.support import NOW, ListSource, entry, quiet, server

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


@pytest.fixture
def replay():
    with Replay() as running:
        yield running


@pytest.fixture
def client():
    with httpx.Client(timeout=httpx.Timeout(5.0, connect=2.0)) as http:
        yield http


def fetcher(replay: Replay, client: httpx.Client, **kwargs: Any) -> GitHubFetcher:
    return GitHubFetcher(client, replay.base, token="ghp_replaytoken", codeload=replay.codeload, **kwargs)


def time_server(**fields: Any):
    return server(id="time", repository="https://github.com/o/r", subpath="src/time", **fields)


def test_a_monorepo_server_comes_from_the_api_and_the_tarball(replay, client):
    replay.repository("o", "r")
    tree = fetcher(replay, client).fetch(time_server())
    facts = tree.repository
    assert tree.fetcher == "github" and tree.ref == SHA
    assert (facts.host, facts.status, facts.stars, facts.forks, facts.open_issues, facts.license) == ("github", "ok", 7321, 812, 143, "MIT")
    assert facts.default_branch == "main" and facts.etag == 'W/"7f3e9a"' and facts.archived is False
    assert facts.pushed_at == datetime(2026, 11, 27, 18, 3, 41, tzinfo=timezone.utc)
    assert [r.tag for r in facts.releases] == ["v1.2.0", "v1.2.0-rc.1", "v1.1.0"] and facts.releases[1].prerelease
    assert facts.releases[0].notes_chars > 100 and facts.releases[2].notes_chars == 0
    assert facts.tags == ["v1.2.0", "v1.2.0-rc.1", "v1.1.0", "nightly"] and len(facts.commit_dates) == 20
    assert facts.api_calls == 5 and len(replay.seen) == 6  # the codeload download is no API call
    # The server's folder as a tree of its own, with the root's documents, manifests and automation; not its siblings.
    assert tree.files == [".github/workflows/ci.yml", "LICENSE", "README.md", "package-lock.json", "pyproject.toml",
                          "src/mcp_server_time/server.py"]
    assert tree.readme.startswith("# Time server") and tree.dependencies == {"mcp": ">=1.6.0"}
    assert tree.read("src/mcp_server_time/server.py").startswith("from mcp")
    commits = next(p for p in replay.paths() if "/commits" in p)
    assert "path=src%2Ftime" in commits and "sha=main" in commits
    api_headers = replay.seen[0][1]
    assert api_headers["authorization"] == "Bearer ghp_replaytoken" and api_headers["x-github-api-version"] == "2022-11-28"
    assert api_headers["accept"] == "application/vnd.github+json" and api_headers["user-agent"]
    download = replay.seen[-1][1]
    assert download["host"] == f"localhost:{replay.port}" and "authorization" not in download  # the token stays with the API


def test_an_unchanged_repository_costs_one_conditional_call(replay, client):
    replay.repository("o", "r")
    tree = fetcher(replay, client).fetch(time_server())
    previous = AnalysisResult(server_id="time", analyzed_at=NOW, fetcher="github", ok=True, source_ref=tree.ref, repository=tree.repository)
    replay.seen.clear()
    with pytest.raises(NotModified):
        fetcher(replay, client).fetch(time_server(), previous)  # the next run
    assert len(replay.seen) == 1 and replay.seen[0][1]["if-none-match"] == 'W/"7f3e9a"'
    # An ETag that changed (a star) but the same pushed_at: still nothing to redo, after the one call.
    replay.seen.clear()
    with pytest.raises(NotModified):
        fetcher(replay, client).fetch(time_server(), previous.model_copy(update={"repository": tree.repository.model_copy(update={"etag": '"old"'})}))
    assert len(replay.seen) == 1
    # A failed previous analysis, or one from another fetcher, is no reason to skip.
    for earlier in (previous.model_copy(update={"ok": False}), previous.model_copy(update={"fetcher": "npm-archive"})):
        assert fetcher(replay, client).fetch(time_server(), earlier).ref == SHA


def test_a_monorepo_is_fetched_once_for_all_its_servers(replay, client):
    replay.repository("o", "r", tar=tarball({**MONOREPO, "src/other/README.md": b"# other"}))
    github = fetcher(replay, client)
    first = github.fetch(time_server())
    second = github.fetch(server(id="other", repository="https://github.com/o/r", subpath="src/other"))
    assert first.repository.api_calls == 5 and second.repository.api_calls == 1  # its own commits only
    assert second.files == [".github/workflows/ci.yml", "LICENSE", "README.md", "index.ts", "package-lock.json"]
    assert second.readme == "# other" and first.repository.stars == second.repository.stars
    assert sum(1 for p in replay.paths() if "legacy.tar.gz" in p) == 1
    # Unchanged for one of them (its previous analysis): nothing asked at all.
    previous = AnalysisResult(server_id="time", analyzed_at=NOW, fetcher="github", ok=True, repository=first.repository)
    asked = len(replay.seen)
    with pytest.raises(NotModified):
        github.fetch(time_server(), previous)
    assert len(replay.seen) == asked
    # A repository that is gone is asked once for all its servers too.
    for _ in range(3):
        with pytest.raises(FetchFailed, match="not found"):
            github.fetch(server(repository="https://github.com/gone/away"))
    assert len(replay.seen) == asked + 1


def test_a_missing_repository_is_recorded_as_not_found(replay, client):
    with pytest.raises(FetchFailed, match="was not found") as failure:
        fetcher(replay, client).fetch(server(repository="https://github.com/gone/away"))
    assert failure.value.repository.status == "not_found" and failure.value.repository.host == "github"
    assert failure.value.repository.api_calls == 1 and not isinstance(failure.value, Unavailable)


def test_an_archived_repository_is_still_analysed(replay, client):
    replay.repository("old", "thing", archived=True, pushed_at="2023-02-01T00:00:00Z")
    replay.routes["/old/thing/legacy.tar.gz/refs/heads/main"] = lambda h: (200, {}, tarball({"README.md": b"# old"}))
    tree = fetcher(replay, client).fetch(server(repository="https://github.com/old/thing"))
    assert tree.repository.archived is True and tree.files == ["README.md"]


def test_a_renamed_repository_is_followed_on_the_api_host(replay, client):
    replay.repository("new", "name")
    replay.routes["/repos/old/name"] = lambda h: replay.json(301, {"message": "Moved Permanently", "url": f"{replay.base}/repos/new/name"},
                                                              Location=f"{replay.base}/repos/new/name")
    tree = fetcher(replay, client).fetch(server(repository="https://github.com/old/name", subpath="src/time"))
    assert tree.repository.stars == 7321 and tree.repository.api_calls == 6  # the redirect once, then the new name
    assert all(p.startswith("/repos/new/name") for p in replay.paths()[2:-1])


@pytest.mark.parametrize("status,headers,message", [
    (403, {"X-RateLimit-Remaining": "0"}, "API rate limit exceeded for 203.0.113.9."),
    (429, {"Retry-After": "120"}, "Too many requests"),
    (403, {"Retry-After": "60"}, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."),
])
def test_a_rate_limit_stops_github_for_the_run(replay, client, status, headers, message):
    replay.remaining = 0 if status == 403 and "X-RateLimit-Remaining" in headers else 50
    body = {"message": message, "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}
    replay.routes["/repos/busy/one"] = lambda h: replay.json(status, body, **headers)
    replay.repository("o", "r")
    github = fetcher(replay, client)
    with pytest.raises(Unavailable, match="rate limited until"):
        github.fetch(server(repository="https://github.com/busy/one"))
    asked = len(replay.seen)
    with pytest.raises(Unavailable, match="rate limited until"):
        github.fetch(time_server())  # another repository: GitHub is not asked at all
    assert len(replay.seen) == asked == 1


def test_a_nearly_spent_budget_stops_before_the_next_repository(replay, client):
    replay.repository("o", "r")
    replay.remaining = 3
    github = fetcher(replay, client)
    github.fetch(time_server())  # this one is finished
    with pytest.raises(Unavailable, match="nearly spent"):
        github.fetch(time_server())
    assert len(replay.seen) == 6


def test_the_time_github_named_ends_the_stop(replay, client):
    clock = [datetime.now(timezone.utc)]
    replay.routes["/repos/busy/one"] = lambda h: replay.json(429, {"message": "slow down"}, **{"Retry-After": "30"})
    replay.repository("o", "r")
    github = fetcher(replay, client, clock=lambda: clock[0])
    with pytest.raises(Unavailable):
        github.fetch(server(repository="https://github.com/busy/one"))
    clock[0] += timedelta(seconds=31)
    assert github.fetch(time_server()).ref == SHA


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_github_is_given_up_after_the_first_failure(client):
    github = GitHubFetcher(client, f"http://127.0.0.1:{closed_port()}")
    started = time.monotonic()
    for _ in range(20):
        with pytest.raises(Unavailable, match="unreachable"):
            github.fetch(time_server())
    assert time.monotonic() - started < 2 and github.stopped


def test_hostile_tarballs(replay, client):
    def hostile(tar: tarfile.TarFile) -> None:
        for name, kind, target in (("o-r-x/../../../tmp/evil.sh", tarfile.REGTYPE, ""), ("o-r-x/src/time/link", tarfile.SYMTYPE, "/etc/passwd"),
                                   ("o-r-x/src/time/hard", tarfile.LNKTYPE, "/etc/shadow")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)

    replay.repository("o", "r", tar=tarball({"src/time/server.py": b"import mcp\n"}, root="o-r-x", extra=hostile))
    tree = fetcher(replay, client).fetch(time_server())
    assert tree.files == ["server.py"] and tree.read("link") is None and tree.read("../../../tmp/evil.sh") is None


def test_a_tarball_bomb_is_refused_and_the_facts_kept(replay, client):
    replay.repository("o", "r", tar=tarball({"src/time/zeros.txt": b"0" * 3_000_000}))
    with pytest.raises(FetchFailed, match="decompression bomb") as failure:
        fetcher(replay, client, limits=Limits(uncompressed=2_000_000)).fetch(time_server())
    assert failure.value.repository.stars == 7321 and failure.value.repository.status == "ok"


def test_a_missing_folder_is_said(replay, client):
    replay.repository("o", "r")
    with pytest.raises(FetchFailed, match="has no folder src/nowhere"):
        fetcher(replay, client).fetch(server(repository="https://github.com/o/r", subpath="src/nowhere"))


def test_redirects_only_to_the_api_host_or_codeload(replay, client):
    replay.repository("o", "r")
    replay.routes["/repos/o/r/tarball/main"] = lambda h: (302, {"Location": f"http://127.0.0.2:{replay.port}/steal"}, b"")
    with pytest.raises(FetchFailed, match="not followed"):
        fetcher(replay, client).fetch(time_server())
    assert not any(p == "/steal" for p in replay.paths())


@pytest.mark.parametrize("answer,message", [
    (lambda r: r.json(200, {"stargazers_count": "many", "default_branch": "main"}), "malformed"),
    (lambda r: (200, {"Content-Type": "application/json"}, b"[" + b" " * 1_100_000 + b"]"), "over the"),
    (lambda r: r.json(200, ["not", "an", "object"]), "malformed"),
    (lambda r: r.json(451, {"message": "Repository access blocked"}), "451"),
])
def test_hostile_answers_are_refused(replay, client, answer, message):
    replay.routes["/repos/o/r"] = lambda h: answer(replay)
    with pytest.raises(FetchFailed, match=message):
        fetcher(replay, client).fetch(time_server())


def test_a_list_over_its_cap_is_not_measured_and_the_rest_goes_on(replay, client):
    replay.repository("o", "r")
    replay.routes["/repos/o/r/releases"] = lambda h: (200, {"Content-Type": "application/json"}, b"[" + b" " * 9_000_000 + b"]")
    replay.routes["/repos/o/r/tags"] = lambda h: replay.json(200, {"message": "not a list"})
    tree = fetcher(replay, client).fetch(time_server())
    assert tree.repository.releases is None and tree.repository.tags is None and tree.files


def test_a_server_error_is_transient(replay, client):
    replay.routes["/repos/o/r"] = lambda h: replay.json(502, {"message": "Server Error"})
    with pytest.raises(Unavailable):
        fetcher(replay, client).fetch(time_server())


# ---------------------------------------------------------------- the chooser


class Package:
    """A package fetcher twin: a tree, or a failure."""

    name = "package-archive"

    def __init__(self, failure: FetchFailed | None = None) -> None:
        self.failure, self.asked = failure, 0

    def fetch(self, server, previous=None) -> SourceTree:
        self.asked += 1
        if self.failure:
            raise self.failure
        return SourceTree(fetcher="pypi-archive", ref="1.0", repository=RepositoryFacts(host="pypi"))


PACKAGED = LaunchSpec(registry="pypi", package="mcp-server-time", transport="stdio")


def test_a_gone_repository_with_a_package_analyses_the_package_and_keeps_the_404(replay, client):
    tree = SourceChooser(github=fetcher(replay, client), packages=Package()).fetch(server(repository="https://github.com/gone/away", launch=PACKAGED))
    assert tree.fetcher == "pypi-archive" and tree.repository.status == "not_found" and tree.repository.host == "github"


def test_a_repository_without_a_readable_tarball_keeps_its_facts_with_the_package(replay, client):
    replay.repository("o", "r", tar=b"this is not a tarball")
    tree = SourceChooser(github=fetcher(replay, client), packages=Package()).fetch(time_server(launch=PACKAGED))
    assert tree.fetcher == "pypi-archive" and tree.repository.host == "github" and tree.repository.stars == 7321


def test_an_unreachable_github_falls_back_to_the_package(client):
    github = GitHubFetcher(client, f"http://127.0.0.1:{closed_port()}")
    packages = Package()
    chooser = SourceChooser(github=github, packages=packages)
    assert chooser.fetch(time_server(launch=PACKAGED)).fetcher == "pypi-archive"
    assert chooser.fetch(time_server(launch=PACKAGED)).repository.host == "pypi" and packages.asked == 2
    # Without a package, the failure is transient and says so.
    with pytest.raises(Unavailable, match="unreachable"):
        chooser.fetch(time_server(launch=None))
    # A previous analysis from GitHub is kept rather than replaced by the package's poorer view.
    previous = AnalysisResult(server_id="time", analyzed_at=NOW, fetcher="github", ok=True)
    with pytest.raises(Unavailable):
        chooser.fetch(time_server(launch=PACKAGED), previous)


def test_the_installed_package_is_the_last_resort(client, tmp_path):
    failing = Package(Unavailable("pypi.org: ConnectError"))
    installed = Package()
    installed.name = "installed-package"
    chooser = SourceChooser(github=None, packages=failing, installed=installed)  # type: ignore[arg-type]
    assert chooser.fetch(server(repository=None, launch=PACKAGED)).ref == "1.0" and installed.asked == 1
    chooser = SourceChooser(github=None, packages=Package(FetchFailed("no such version")))
    with pytest.raises(FetchFailed, match="no such version") as failure:
        chooser.fetch(server(repository=None, launch=PACKAGED))
    assert not isinstance(failure.value, Unavailable)


def test_nothing_to_fetch_is_one_clear_line(tmp_path):
    with pytest.raises(FetchFailed) as failure:
        SourceChooser(packages=Package()).fetch(server(repository="https://example.com/x", launch=None))
    assert str(failure.value) == NO_SOURCE == "no source: no repository or package is known"


def test_a_configured_directory_comes_first(tmp_path):
    (tmp_path / "README.md").write_text("# local")
    tree = SourceChooser(packages=Package(), directories={"s": tmp_path}).fetch(server(launch=PACKAGED))
    assert tree.fetcher == "local-directory" and tree.readme == "# local"


# ---------------------------------------------------------------- end to end: flags from a replayed repository


def test_dead_archived_and_stale_flags_fire_end_to_end(replay, client, db):
    replay.repository("old", "archived", archived=True)
    replay.repository("old", "stale", pushed_at="2024-06-01T00:00:00Z")
    replay.repository("o", "r")
    listed = [entry("dead", repository="https://github.com/gone/away"), entry("archived", repository="https://github.com/old/archived"),
              entry("stale", repository="https://github.com/old/stale"), entry("fine", repository="https://github.com/o/r"),
              entry("listing-only")]
    run_discover(db, sources=[ListSource("test", listed)], now=NOW, progress=quiet(1))
    servers = store.active_servers(db)
    stream = io.StringIO()
    chooser = SourceChooser(github=fetcher(replay, client), packages=Package())
    report = run_analyze(db, servers=servers, fetcher=chooser, now=NOW, progress=Progress("analyze", len(servers), stream=stream), concurrency=3)
    assert report.counts == {"analyzed": 3, "unchanged": 0, "deferred": 0, "failed": 2}
    assert f"listing-only: failed: {NO_SOURCE}" in stream.getvalue()
    run_score(db, servers=servers, now=NOW, progress=quiet(len(servers)))
    flags = {sid: {f["name"] for f in json.loads(row["flags"])} for sid, row in store.load_scores(db, "scoreboard").items()}
    assert "dead_repository" in flags["dead"] and "archived_repository" in flags["archived"] and "stale_project" in flags["stale"]
    assert not flags["fine"] & {"dead_repository", "archived_repository", "stale_project"}
    analyses = {sid: result for sid, (_, result) in store.latest_analyses(db, [s.id for s in servers]).items()}
    assert analyses["fine"].metrics["maintenance_pulse"]["host"] == "github" and analyses["fine"].metrics["version_hygiene"]["value"] > 0
    # Run again with the previous analyses: every repository costs one conditional call, and the analyses are confirmed.
    replay.seen.clear()
    again = run_analyze(db, servers=servers, fetcher=SourceChooser(github=fetcher(replay, client), packages=Package()), now=NOW + timedelta(days=1),
                        progress=quiet(len(servers)), previous=lambda sid: analyses.get(sid))
    assert again.counts["unchanged"] == 3 and len(replay.seen) == 4  # three 304s and the 404 asked again
    assert store.latest_analyses(db, ["fine"])["fine"][1].analyzed_at == NOW + timedelta(days=1)


def test_a_host_unavailable_this_run_keeps_the_previous_analysis(db, client):
    run_discover(db, sources=[ListSource("test", [entry("kept", repository="https://github.com/o/r")])], now=NOW, progress=quiet(1))
    servers = store.active_servers(db)
    good = AnalysisResult(server_id="kept", analyzed_at=NOW, fetcher="github", ok=True, repository=RepositoryFacts(host="github"))
    store.record_analysis(db, good)
    down = SourceChooser(github=GitHubFetcher(client, f"http://127.0.0.1:{closed_port()}"))
    report = run_analyze(db, servers=servers, fetcher=down, now=NOW, progress=quiet(1), previous=lambda sid: good)
    assert report.counts["deferred"] == 1 and report.failures == 0 and db["analyses"].count == 1
    report = run_analyze(db, servers=servers, fetcher=down, now=NOW, progress=quiet(1))  # nothing to keep: recorded as failed
    assert report.counts["failed"] == 1 and db["analyses"].count == 2


def test_a_crash_in_one_analysis_is_recorded_and_the_stage_goes_on(db):
    class Broken:
        name = "broken"

        def fetch(self, server, previous=None):
            raise RuntimeError("a parser bug")

    run_discover(db, sources=[ListSource("test", [entry("a"), entry("b")])], now=NOW, progress=quiet(1))
    report = run_analyze(db, servers=store.active_servers(db), fetcher=Broken(), now=NOW, progress=quiet(2))
    assert report.counts["failed"] == 2
    assert "analysis failed: RuntimeError: a parser bug" in store.latest_analyses(db, ["a"])["a"][1].error


def test_the_pool_fetches_concurrently(db):
    class Slow:
        name = "slow"

        def fetch(self, server, previous=None):
            time.sleep(0.3)
            raise FetchFailed("slow")

    run_discover(db, sources=[ListSource("test", [entry(f"s{i}") for i in range(8)])], now=NOW, progress=quiet(1))
    started = time.monotonic()
    report = run_analyze(db, servers=store.active_servers(db), fetcher=Slow(), now=NOW, progress=quiet(8), concurrency=8)
    assert report.counts["failed"] == 8 and time.monotonic() - started < 1.5


def test_ctrl_c_keeps_what_is_recorded(db, tmp_path):
    class Interrupting(Progress):
        def step(self, *args, **kwargs):
            super().step(*args, **kwargs)
            if self.done == 2:
                raise KeyboardInterrupt

    (tmp_path / "README.md").write_text("# x")
    from pipeline.analyze.fetch import LocalDirectoryFetcher

    run_discover(db, sources=[ListSource("test", [entry(f"s{i}") for i in range(10)])], now=NOW, progress=quiet(1))
    report = run_analyze(db, servers=store.active_servers(db), fetcher=LocalDirectoryFetcher(tmp_path), now=NOW,
                         progress=Interrupting("analyze", 10, stream=io.StringIO()), concurrency=2)
    assert report.interrupted and report.counts["analyzed"] == 2 and db["analyses"].count == 2


def test_a_monorepos_servers_are_fetched_together():
    listed = [server(id="b", repository="https://github.com/o/r", subpath="x"), server(id="a", repository=None),
              server(id="c", repository="https://github.com/a/z"), server(id="d", repository="https://github.com/O/R", subpath="y")]
    assert [s.id for s in fetch_order(listed)] == ["c", "b", "d", "a"]


def test_the_cli_default_analyses_from_the_chooser(tmp_path, monkeypatch):
    """The embedded default with an unreachable GitHub: analysed from the package archives (or installed packages), quickly."""
    from pipeline.cli import main

    monkeypatch.setenv("SCOREBOARD_GITHUB_API", f"http://127.0.0.1:{closed_port()}")
    db_path = tmp_path / "s.db"
    main(["--db", str(db_path), "discover"])
    started = time.monotonic()
    main(["--db", str(db_path), "--cache", str(tmp_path / "cache"), "analyze"])
    elapsed = time.monotonic() - started
    database = store.open_db(Path(db_path))
    rows = list(database.query("select server_id, ok, fetcher, error from analyses"))
    registries_reachable = any(r["fetcher"].endswith("-archive") for r in rows)
    if not registries_reachable:
        pytest.skip(f"the package registries cannot be reached from here: {rows[0]['error']}")
    assert all(r["ok"] for r in rows), rows
    assert elapsed < 30
