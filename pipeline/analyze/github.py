"""GitHubFetcher: a repository's metadata, releases, tags and recent commits from the REST API, and the tarball of its
default branch, read into memory (archive.py). Five API calls a repository; one when it has not changed.

Everything GitHub says is treated as hostile: bodies are capped, JSON is validated, redirects go only to the API host
or codeload. Rate limits are obeyed for the whole run: once GitHub says stop (403/429 with X-RateLimit-Remaining: 0
or Retry-After), or cannot be reached at all, it is not asked again until the time it named, and every repository
meanwhile fails as Unavailable (kept for the next run, or fetched from its package instead by sources.py).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from typing import Any, Callable
from urllib.parse import quote, urlencode

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.analyze.archive import Limits, Unpacked, strip_root, unpack
from pipeline.analyze.download import Reply, TooLarge, get
from pipeline.analyze.fetch import FetchFailed, NotModified, SourceTree, Unavailable
from pipeline.analyze.unpacked import build_tree, limit_to_subpath
from pipeline.identity import RepoRef, parse_github
from pipeline.models import AnalysisResult, Release, RepositoryFacts, Server

API = "https://api.github.com"
CODELOAD = "https://codeload.github.com"  # where GitHub redirects a tarball request
USER_AGENT = "mcp-scoreboard-analyze"
CALLS_PER_REPOSITORY = 5  # metadata, releases, tags, commits, tarball
METADATA_CAP = 1_000_000
LIST_CAP = 8_000_000
MAX_RELEASES = 100
# Repositories whose metadata and unpacked tarball are kept for their other servers (a monorepo's): the run fetches
# servers ordered by repository (sources.fetch_order), so a few suffice, and memory stays bounded.
SHARED_REPOSITORIES = 2
_REF = re.compile(r"^[A-Za-z0-9._/+-]{1,200}$")


Shared = tuple[RepositoryFacts, Unpacked, str] | FetchFailed  # facts (without commits), the whole tree, the API path


class _License(BaseModel):
    spdx_id: str | None = None


class _Repository(BaseModel):
    model_config = ConfigDict(extra="ignore")

    html_url: str | None = None
    stargazers_count: int | None = None
    forks_count: int | None = None
    open_issues_count: int | None = None
    pushed_at: datetime | None = None
    created_at: datetime | None = None
    archived: bool = False
    default_branch: str | None = None
    license: _License | None = None


class _Release(BaseModel):
    tag_name: str
    published_at: datetime | None = None
    prerelease: bool = False
    draft: bool = False
    body: str | None = None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class GitHubFetcher:
    """Thread-safe: one fetcher serves the analysis's worker threads and keeps the run's rate-limit state."""

    name = "github"

    def __init__(self, client: httpx.Client, api: str = API, token: str | None = None, clock: Callable[[], datetime] = utcnow,
                 limits: Limits = Limits(), codeload: str = CODELOAD) -> None:
        self.client, self.api, self.token, self.clock, self.limits = client, httpx.URL(api.rstrip("/") + "/"), token, clock, limits
        self.codeload = httpx.URL(codeload)
        self._lock = threading.Lock()
        self._guards: dict[str, threading.Lock] = {}
        self._shared: OrderedDict[str, Shared] = OrderedDict()  # the last few repositories fetched, for their other servers
        self._stopped: str | None = None  # why GitHub is not asked any more this run
        self._until: datetime | None = None  # when it may be asked again (None: not this run)
        self._soft = False  # a soft stop (budget nearly spent): fetches under way may finish, no new one starts

    # ------------------------------------------------------------------ run-wide state

    @property
    def stopped(self) -> str | None:
        with self._lock:
            if self._until is not None and self.clock() >= self._until:
                self._stopped = self._until = None
            return self._stopped

    def _stop(self, reason: str, until: datetime | None = None, soft: bool = False) -> Unavailable:
        with self._lock:
            if self._stopped is None or (self._soft and not soft):
                self._stopped, self._until, self._soft = reason, until, soft
        return Unavailable(reason)

    def _hard_stop(self) -> str | None:
        reason = self.stopped
        with self._lock:
            return None if self._soft else reason

    # ------------------------------------------------------------------ fetch

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        ref = parse_github(server.repository, server.subpath)
        if ref is None:
            raise FetchFailed("no GitHub repository is known")
        stopped = self.stopped
        if stopped:
            raise Unavailable(stopped)
        earlier = previous.repository if previous and previous.ok and previous.fetcher == self.name and previous.repository else None
        if earlier is not None and (earlier.host != "github" or earlier.status != "ok"):
            earlier = None
        with self._lock:
            guard = self._guards.setdefault(ref.repo_key, threading.Lock())
        with guard:  # a monorepo's servers wait for the first one's fetch, then share it
            with self._lock:
                shared = self._shared.get(ref.repo_key)
            if shared is None:
                return self._first(ref, earlier)
        if isinstance(shared, FetchFailed):
            raise FetchFailed(str(shared), shared.repository.model_copy(update={"api_calls": 0}) if shared.repository else None)
        facts, whole, base = shared
        if earlier is not None and facts.pushed_at is not None and facts.pushed_at == earlier.pushed_at:
            raise NotModified()
        calls = [0]
        facts = facts.model_copy(deep=True)
        facts.commit_dates = self._commits(base, ref, facts, calls)
        return self._tree(ref, facts, whole, calls)

    def _first(self, ref: RepoRef, earlier: RepositoryFacts | None) -> SourceTree:
        """The repository's first fetch this run: metadata (conditional), releases, tags, commits, tarball."""
        calls = [0]
        base = f"repos/{quote(ref.owner)}/{quote(ref.name)}"
        reply = self._call(base, METADATA_CAP, calls, etag=earlier.etag if earlier else None)
        if reply.status == 304:
            raise NotModified()
        if reply.status in (404, 410):
            gone = FetchFailed(f"GitHub: {ref.url} was not found ({reply.status})",
                               RepositoryFacts(host="github", url=ref.url, status="not_found", api_calls=calls[0]))
            self._keep(ref.repo_key, gone)
            raise gone
        if reply.status != 200:
            raise _failure(reply, "the repository")
        facts = _facts(reply, ref)
        moved = str(reply.url)
        if moved.startswith(str(self.api)) and moved != str(self.api.join(base)):  # renamed: ask the new place directly
            base = moved[len(str(self.api)):].split("?")[0]
        if earlier is not None and facts.pushed_at is not None and facts.pushed_at == earlier.pushed_at:
            raise NotModified()
        facts.releases = self._list(f"{base}/releases?per_page={MAX_RELEASES}", calls, _releases)
        facts.tags = self._list(f"{base}/tags?per_page=100", calls, _tags)
        facts.commit_dates = self._commits(base, ref, facts, calls)
        branch = facts.default_branch or "HEAD"
        reply = self._call(f"{base}/tarball/{quote(branch, safe='/')}", self.limits.compressed, calls)
        facts.api_calls = calls[0]
        if reply.status == 404:
            raise FetchFailed(f"GitHub: {ref.url} has no tarball of {branch} (an empty repository?)", facts)
        if reply.status != 200:
            raise _failure(reply, "the tarball", facts)
        try:
            whole = strip_root(unpack(reply.body, self.limits))
        except FetchFailed as exc:
            raise FetchFailed(str(exc), facts) from exc
        self._keep(ref.repo_key, (facts.model_copy(update={"commit_dates": None}), whole, base))
        return self._tree(ref, facts, whole, calls)

    def _commits(self, base: str, ref: RepoRef, facts: RepositoryFacts, calls: list[int]) -> list[datetime] | None:
        """The newest 100 commits on the default branch, only those touching the server's folder in a monorepo."""
        query = {"per_page": 100, **({"sha": facts.default_branch} if facts.default_branch else {}), **({"path": ref.subpath} if ref.subpath else {})}
        return self._list(f"{base}/commits?{urlencode(query)}", calls, _commit_dates, empty=(409,))

    def _tree(self, ref: RepoRef, facts: RepositoryFacts, whole: Unpacked, calls: list[int]) -> SourceTree:
        facts.api_calls = calls[0]
        if ref.subpath and not any(f.startswith(ref.subpath.strip("/") + "/") for f in whole.files):
            raise FetchFailed(f"GitHub: {ref.url} has no folder {ref.subpath}", facts)
        unpacked = limit_to_subpath(whole, ref.subpath)
        commit = unpacked.comment if unpacked.comment and re.fullmatch(r"[0-9a-f]{40}", unpacked.comment) else None
        return build_tree(unpacked, self.name, commit or facts.default_branch or "HEAD", facts)

    def _keep(self, key: str, shared: Shared) -> None:
        with self._lock:
            self._shared[key] = shared
            self._shared.move_to_end(key)
            while len(self._shared) > SHARED_REPOSITORIES:
                self._shared.popitem(last=False)

    # ------------------------------------------------------------------ requests

    def _call(self, path: str, cap: int, calls: list[int], etag: str | None = None) -> Reply:
        stopped = self._hard_stop()  # another thread may have been told to stop since this fetch began
        if stopped:
            raise Unavailable(stopped)
        api, codeload = self.api, self.codeload

        def headers(url: httpx.URL) -> dict[str, str]:
            if (url.scheme, url.host, url.port) != (api.scheme, api.host, api.port):
                return {"User-Agent": USER_AGENT}  # codeload: no credentials leave for another host
            sent = {"User-Agent": USER_AGENT, "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
            if self.token:
                sent["Authorization"] = f"Bearer {self.token}"
            if etag:
                sent["If-None-Match"] = etag
            return sent

        def allowed(url: httpx.URL) -> bool:
            return (url.scheme, url.host, url.port) in ((api.scheme, api.host, api.port), (codeload.scheme, codeload.host, codeload.port))

        def count(url: httpx.URL) -> None:
            if (url.scheme, url.host, url.port) == (api.scheme, api.host, api.port):
                calls[0] += 1

        try:
            reply = get(self.client, str(api.join(path)), cap=cap, headers=headers, allowed=allowed, sent=count)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._stop(f"GitHub is unreachable ({type(exc).__name__}: {str(exc)[:120]}); not asked again this run") from exc
        except httpx.HTTPError as exc:
            raise Unavailable(f"GitHub: {type(exc).__name__}: {str(exc)[:200]}") from exc
        self._obey(reply)
        return reply

    def _obey(self, reply: Reply) -> None:
        """Stop for the run on a rate limit or a refused token; stop early when the budget cannot cover one more repository."""
        now = self.clock()
        remaining, reset = _number(reply.headers.get("x-ratelimit-remaining")), _number(reply.headers.get("x-ratelimit-reset"))
        until = datetime.fromtimestamp(reset, timezone.utc) if reset is not None and reset < 10**11 else None
        retry = _number(reply.headers.get("retry-after"))
        if retry is not None:
            until = now + timedelta(seconds=min(retry, 86_400))
        limited = reply.status == 429 or (reply.status == 403 and (remaining == 0 or retry is not None or b"rate limit" in reply.body[:2000].lower()))
        if limited:
            until = until or now + timedelta(hours=1)
            raise self._stop(f"GitHub rate limited until {until:%Y-%m-%d %H:%M} UTC", until)
        if reply.status == 401:
            raise self._stop("GitHub refused the token (401); not asked again this run")
        if remaining is not None and remaining < CALLS_PER_REPOSITORY:
            self._stop(f"GitHub rate limit nearly spent ({remaining:.0f} calls left) until {(until or now):%Y-%m-%d %H:%M} UTC", until, soft=True)

    def _list(self, path: str, calls: list[int], parse: Callable[[Any], Any], empty: tuple[int, ...] = ()) -> Any:
        """One list endpoint's items, parsed; None (not measured) when GitHub would not say, or said too much."""
        try:
            reply = self._call(path, LIST_CAP, calls)
        except TooLarge:
            return None
        if reply.status in empty:
            return []
        if reply.status != 200:
            return None
        items = _json(reply)
        return parse(items) if isinstance(items, list) else None


def _failure(reply: Reply, what: str, facts: RepositoryFacts | None = None) -> FetchFailed:
    message = f"GitHub answered {reply.status} for {what}"
    return Unavailable(message) if reply.status >= 500 else FetchFailed(message, facts)


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and 0 <= value < 10**12 else None


def _json(reply: Reply) -> Any:
    try:
        return json.loads(reply.body)
    except (ValueError, RecursionError):
        return None


def _facts(reply: Reply, ref: RepoRef) -> RepositoryFacts:
    body = _json(reply)
    try:
        repo = _Repository.model_validate(body)
    except ValidationError as exc:
        raise FetchFailed(f"GitHub: the repository object of {ref.url} is malformed ({exc.error_count()} errors)") from exc
    branch = repo.default_branch if repo.default_branch and _REF.match(repo.default_branch) and ".." not in repo.default_branch else None
    spdx = repo.license.spdx_id if repo.license and repo.license.spdx_id not in (None, "NOASSERTION") else None
    return RepositoryFacts(
        host="github", url=ref.url, archived=repo.archived, pushed_at=repo.pushed_at, created_at=repo.created_at, default_branch=branch,
        license=spdx[:64] if spdx else None, stars=_count(repo.stargazers_count), forks=_count(repo.forks_count),
        open_issues=_count(repo.open_issues_count), etag=(reply.headers.get("etag") or "")[:200] or None,
    )


def _count(value: int | None) -> int | None:
    return value if value is not None and value >= 0 else None


def _releases(items: list) -> list[Release]:
    found = []
    for item in items[:MAX_RELEASES]:
        try:
            release = _Release.model_validate(item)
        except ValidationError:
            continue
        if not release.draft:
            found.append(Release(tag=release.tag_name[:200], published_at=release.published_at, prerelease=release.prerelease,
                                 notes_chars=len((release.body or "").strip())))
    epoch = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(found, key=lambda r: r.published_at or epoch, reverse=True)


def _tags(items: list) -> list[str]:
    return [item["name"][:200] for item in items[:100] if isinstance(item, dict) and isinstance(item.get("name"), str)]


def _commit_dates(items: list) -> list[datetime]:
    dates = []
    for item in items[:100]:
        commit = item.get("commit") if isinstance(item, dict) else None
        person = (commit.get("committer") or commit.get("author")) if isinstance(commit, dict) else None
        stamp = person.get("date") if isinstance(person, dict) else None
        try:
            dates.append(datetime.fromisoformat(stamp.replace("Z", "+00:00")) if isinstance(stamp, str) else None)
        except ValueError:
            continue
    return sorted((d if d.tzinfo else d.replace(tzinfo=timezone.utc) for d in dates if d), reverse=True)
