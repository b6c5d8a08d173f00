"""GitHubFetcher against GitHub's REST API replayed on a real local socket (tests/github_replay.py): metadata, releases,
tags, commits and the tarball; ETag and 304; 404; archived; renamed; rate limits; an unreachable host; hostile
tarballs and answers; a monorepo fetched once for all its servers."""

from __future__ import annotations

import io
import tarfile
import time
from datetime import datetime, timedelta, timezone

import pytest

from pipeline.analyze.archive import Limits
from pipeline.analyze.fetch import FetchFailed, NotModified, Unavailable
from pipeline.analyze.github import GitHubFetcher
from pipeline.models import AnalysisResult
from tests.github_replay import MONOREPO, SHA, closed_port, github_fetcher, tarball, time_server
from tests.support import NOW, server


def test_a_monorepo_server_comes_from_the_api_and_the_tarball(replay, client):
    replay.repository("o", "r")
    tree = github_fetcher(replay, client).fetch(time_server())
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
    tree = github_fetcher(replay, client).fetch(time_server())
    previous = AnalysisResult(server_id="time", analyzed_at=NOW, fetcher="github", ok=True, source_ref=tree.ref, repository=tree.repository)
    replay.seen.clear()
    with pytest.raises(NotModified):
        github_fetcher(replay, client).fetch(time_server(), previous)  # the next run
    assert len(replay.seen) == 1 and replay.seen[0][1]["if-none-match"] == 'W/"7f3e9a"'
    # An ETag that changed (a star) but the same pushed_at: still nothing to redo, after the one call.
    replay.seen.clear()
    with pytest.raises(NotModified):
        starred = tree.repository.model_copy(update={"etag": '"old"'})
        github_fetcher(replay, client).fetch(time_server(), previous.model_copy(update={"repository": starred}))
    assert len(replay.seen) == 1
    # A failed previous analysis, or one from another fetcher, is no reason to skip.
    for earlier in (previous.model_copy(update={"ok": False}), previous.model_copy(update={"fetcher": "npm-archive"})):
        assert github_fetcher(replay, client).fetch(time_server(), earlier).ref == SHA


def test_a_monorepo_is_fetched_once_for_all_its_servers(replay, client):
    replay.repository("o", "r", tar=tarball({**MONOREPO, "src/other/README.md": b"# other"}))
    github = github_fetcher(replay, client)
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
        github_fetcher(replay, client).fetch(server(repository="https://github.com/gone/away"))
    assert failure.value.repository.status == "not_found" and failure.value.repository.host == "github"
    assert failure.value.repository.api_calls == 1 and not isinstance(failure.value, Unavailable)


def test_an_archived_repository_is_still_analysed(replay, client):
    replay.repository("old", "thing", archived=True, pushed_at="2023-02-01T00:00:00Z")
    replay.routes["/old/thing/legacy.tar.gz/refs/heads/main"] = lambda h: (200, {}, tarball({"README.md": b"# old"}))
    tree = github_fetcher(replay, client).fetch(server(repository="https://github.com/old/thing"))
    assert tree.repository.archived is True and tree.files == ["README.md"]


def test_a_renamed_repository_is_followed_on_the_api_host(replay, client):
    replay.repository("new", "name")
    replay.routes["/repos/old/name"] = lambda h: replay.json(301, {"message": "Moved Permanently", "url": f"{replay.base}/repos/new/name"},
                                                              Location=f"{replay.base}/repos/new/name")
    tree = github_fetcher(replay, client).fetch(server(repository="https://github.com/old/name", subpath="src/time"))
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
    github = github_fetcher(replay, client)
    with pytest.raises(Unavailable, match="rate limited until"):
        github.fetch(server(repository="https://github.com/busy/one"))
    asked = len(replay.seen)
    with pytest.raises(Unavailable, match="rate limited until"):
        github.fetch(time_server())  # another repository: GitHub is not asked at all
    assert len(replay.seen) == asked == 1


def test_a_nearly_spent_budget_stops_before_the_next_repository(replay, client):
    replay.repository("o", "r")
    replay.remaining = 3
    github = github_fetcher(replay, client)
    github.fetch(time_server())  # this one is finished
    with pytest.raises(Unavailable, match="nearly spent"):
        github.fetch(time_server())
    assert len(replay.seen) == 6


def test_the_time_github_named_ends_the_stop(replay, client):
    clock = [datetime.now(timezone.utc)]
    replay.routes["/repos/busy/one"] = lambda h: replay.json(429, {"message": "slow down"}, **{"Retry-After": "30"})
    replay.repository("o", "r")
    github = github_fetcher(replay, client, clock=lambda: clock[0])
    with pytest.raises(Unavailable):
        github.fetch(server(repository="https://github.com/busy/one"))
    clock[0] += timedelta(seconds=31)
    assert github.fetch(time_server()).ref == SHA


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
    tree = github_fetcher(replay, client).fetch(time_server())
    assert tree.files == ["server.py"] and tree.read("link") is None and tree.read("../../../tmp/evil.sh") is None


def test_a_tarball_bomb_is_refused_and_the_facts_kept(replay, client):
    replay.repository("o", "r", tar=tarball({"src/time/zeros.txt": b"0" * 3_000_000}))
    with pytest.raises(FetchFailed, match="decompression bomb") as failure:
        github_fetcher(replay, client, limits=Limits(uncompressed=2_000_000)).fetch(time_server())
    assert failure.value.repository.stars == 7321 and failure.value.repository.status == "ok"


def test_a_missing_folder_is_said(replay, client):
    replay.repository("o", "r")
    with pytest.raises(FetchFailed, match="has no folder src/nowhere"):
        github_fetcher(replay, client).fetch(server(repository="https://github.com/o/r", subpath="src/nowhere"))


def test_redirects_only_to_the_api_host_or_codeload(replay, client):
    replay.repository("o", "r")
    replay.routes["/repos/o/r/tarball/main"] = lambda h: (302, {"Location": f"http://127.0.0.2:{replay.port}/steal"}, b"")
    with pytest.raises(FetchFailed, match="not followed"):
        github_fetcher(replay, client).fetch(time_server())
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
        github_fetcher(replay, client).fetch(time_server())


def test_a_list_over_its_cap_is_not_measured_and_the_rest_goes_on(replay, client):
    replay.repository("o", "r")
    replay.routes["/repos/o/r/releases"] = lambda h: (200, {"Content-Type": "application/json"}, b"[" + b" " * 9_000_000 + b"]")
    replay.routes["/repos/o/r/tags"] = lambda h: replay.json(200, {"message": "not a list"})
    tree = github_fetcher(replay, client).fetch(time_server())
    assert tree.repository.releases is None and tree.repository.tags is None and tree.files


def test_a_server_error_is_transient(replay, client):
    replay.routes["/repos/o/r"] = lambda h: replay.json(502, {"message": "Server Error"})
    with pytest.raises(Unavailable):
        github_fetcher(replay, client).fetch(time_server())
