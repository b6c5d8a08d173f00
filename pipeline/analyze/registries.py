"""PackageArchiveFetcher: a server's published package as its registry serves it, and the registry's release history.

npm: the full packument (its `time` holds every publish date) names the version's `dist.tarball`, checked against
`dist.integrity` (or the older `shasum`). PyPI: the project's JSON names the version's files; the sdist is preferred
(it carries the source tree, tests and docs), else a wheel, checked against its sha256. The archive is read into
memory (archive.py). The history becomes RepositoryFacts(host="npm"|"pypi"): every published version a Release.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import httpx

from pipeline.analyze.archive import Limits, strip_root, unpack
from pipeline.analyze.download import Reply, get
from pipeline.analyze.fetch import FetchFailed, NotModified, SourceTree, Unavailable
from pipeline.analyze.unpacked import build_tree
from pipeline.models import AnalysisResult, Release, RepositoryFacts, Server

USER_AGENT = "mcp-scoreboard-analyze"
METADATA_CAP = 20_000_000  # a packument or project JSON; MCP servers' are far smaller
MAX_RELEASES = 200  # newest kept in the facts
NPM_NAME = re.compile(r"^(?:@[a-z0-9][a-z0-9._~-]{0,213}/)?[a-z0-9][a-z0-9._~-]{0,213}$")
PYPI_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,99}$")
SEMVER_PRERELEASE = re.compile(r"^\d+\.\d+\.\d+-")
PEP440_PRERELEASE = re.compile(r"(?:a|b|c|rc|alpha|beta|pre|preview|dev)\d*(?:\.\w+)?$|\.dev\d*", re.I)


def package_of(server: Server) -> tuple[str, str, str | None] | None:
    """(registry, name, version) of the server's npm or PyPI package: its launch's, else the first one listed."""
    if server.launch is not None:
        return server.launch.registry, server.launch.package, server.launch.version
    for package in server.packages:
        if package.registry in ("npm", "pypi"):
            return package.registry, package.identifier, package.version
    return None


def is_prerelease(registry: str, version: str) -> bool:
    return bool(SEMVER_PRERELEASE.match(version)) if registry == "npm" else bool(PEP440_PRERELEASE.search(version))


class PackageArchiveFetcher:
    name = "package-archive"

    def __init__(self, client: httpx.Client, npm: str | None, pypi: str | None, pypi_files: tuple[str, ...] = (),
                 limits: Limits = Limits()) -> None:
        """`npm`: the registry's URL; `pypi`: the base of the PyPI JSON API; `pypi_files`: other hosts its files may be on
        (pipeline.sandbox.installenv.package_registries reads them from npm's and pip's configuration)."""
        self.client, self.limits, self.pypi_files = client, limits, pypi_files
        self.npm = httpx.URL(npm.rstrip("/") + "/") if npm else None
        self.pypi = httpx.URL(pypi.rstrip("/") + "/") if pypi else None

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        package = package_of(server)
        if package is None:
            raise FetchFailed("no npm or PyPI package is known")
        registry, name, version = package
        if version in ("", "latest"):
            version = None
        if version is not None and not VERSION.match(version):
            raise FetchFailed(f"{name}: {version[:60]!r} is not a version")
        if registry == "npm":
            if not NPM_NAME.match(name):
                raise FetchFailed(f"{name[:100]!r} is not an npm package name")
            return self._npm(name, version, previous)
        if not PYPI_NAME.match(name):
            raise FetchFailed(f"{name[:100]!r} is not a PyPI project name")
        return self._pypi(name, version, previous)

    # ------------------------------------------------------------------ npm

    def _npm(self, name: str, version: str | None, previous: AnalysisResult | None) -> SourceTree:
        if self.npm is None:
            raise FetchFailed("npm: no registry is configured (npm is not installed here, and SCOREBOARD_NPM_REGISTRY is not set)")
        reply = self._get(self.npm, quote(name, safe="@"), METADATA_CAP, {"Accept": "application/json"})
        document = _document(reply, f"npm: {name}")
        versions, times = _dict(document.get("versions")), _dict(document.get("time"))
        version = version or _dict(document.get("dist-tags")).get("latest")
        if not isinstance(version, str) or not isinstance(versions.get(version), dict):
            raise FetchFailed(f"npm: {name} has no version {str(version)[:60]}")
        history = [(v, _when(times.get(v))) for v in versions if isinstance(v, str) and v not in ("created", "modified")]
        facts = _history("npm", reply.url, history, _when(times.get("created")))
        _unchanged(previous, "npm-archive", version, facts)
        dist = _dict(versions[version].get("dist"))
        url = dist.get("tarball")
        if not isinstance(url, str):
            raise FetchFailed(f"npm: {name}@{version} names no tarball")
        data = self._archive(url, self.npm, (self.npm.host,), f"npm: {name}@{version}")
        _verify_npm(data, dist, f"npm: {name}@{version}")
        tree = build_tree(strip_root(self._unpack(data, facts)), "npm-archive", version, facts, prefer="npm")
        return tree

    # ------------------------------------------------------------------ PyPI

    def _pypi(self, name: str, version: str | None, previous: AnalysisResult | None) -> SourceTree:
        if self.pypi is None:
            raise FetchFailed("PyPI: no index is configured (pip names none, and SCOREBOARD_PYPI_URL is not set)")
        reply = self._get(self.pypi, f"pypi/{quote(name)}/json", METADATA_CAP, {"Accept": "application/json"})
        document = _document(reply, f"PyPI: {name}")
        info, releases = _dict(document.get("info")), _dict(document.get("releases"))
        version = version or info.get("version")
        files = releases.get(version) if isinstance(version, str) else None
        if not isinstance(files, list) or not files:
            raise FetchFailed(f"PyPI: {name} has no files for version {str(version)[:60]}")
        history = [(v, _earliest(fs)) for v, fs in releases.items() if isinstance(fs, list) and fs]
        page = info.get("package_url")
        facts = _history("pypi", page if isinstance(page, str) and page.startswith("https://") else reply.url, history, None)
        _unchanged(previous, "pypi-archive", version, facts)
        chosen = _pypi_file([f for f in files if isinstance(f, dict)])
        if chosen is None:
            raise FetchFailed(f"PyPI: {name} {version} has no sdist or wheel")
        url = chosen.get("url")
        if not isinstance(url, str):
            raise FetchFailed(f"PyPI: {name} {version}: a file without a URL")
        what = f"PyPI: {chosen.get('filename', name)}"
        data = self._archive(str(httpx.URL(reply.url).join(url)), self.pypi, (self.pypi.host, *self.pypi_files), what)
        expected = _dict(chosen.get("digests")).get("sha256")
        if not isinstance(expected, str) or hashlib.sha256(data).hexdigest() != expected.lower():
            raise FetchFailed(f"{what}: its sha256 does not match the registry's (or the registry gives none)")
        unpacked = self._unpack(data, facts)
        return build_tree(unpacked if chosen.get("packagetype") == "bdist_wheel" else strip_root(unpacked), "pypi-archive", version, facts,
                          prefer="pypi")

    # ------------------------------------------------------------------ requests

    def _get(self, base: httpx.URL, path: str, cap: int, extra: dict[str, str]) -> Reply:
        url = base.join(path)
        reply = self._request(str(url), cap, lambda u: (u.scheme, u.host, u.port) == (base.scheme, base.host, base.port), extra)
        if reply.status == 404:
            raise FetchFailed(f"{url.host}: {path[:120]} is not published (404)")
        if reply.status in (429,) or reply.status >= 500:
            raise Unavailable(f"{url.host} answered {reply.status}")
        if reply.status != 200:
            raise FetchFailed(f"{url.host} answered {reply.status} for {path[:120]}")
        return reply

    def _archive(self, url: str, base: httpx.URL, hosts: tuple[str, ...], what: str) -> bytes:
        target = httpx.URL(url)

        def allowed(u: httpx.URL) -> bool:
            return (u.scheme, u.host, u.port) == (base.scheme, base.host, base.port) or (u.scheme == "https" and u.host in hosts)

        if not allowed(target):
            raise FetchFailed(f"{what}: its archive is at {target.host}, not a host of the registry")
        reply = self._request(url, self.limits.compressed, allowed, {})
        if reply.status != 200:
            failure = Unavailable if reply.status in (429,) or reply.status >= 500 else FetchFailed
            raise failure(f"{what}: the archive answered {reply.status}")
        return reply.body

    def _request(self, url: str, cap: int, allowed: Any, extra: dict[str, str]) -> Reply:
        try:
            return get(self.client, url, cap=cap, headers=lambda u: {"User-Agent": USER_AGENT, **extra}, allowed=allowed)
        except httpx.HTTPError as exc:
            raise Unavailable(f"{httpx.URL(url).host}: {type(exc).__name__}: {str(exc)[:200]}") from exc

    def _unpack(self, data: bytes, facts: RepositoryFacts):
        try:
            return unpack(data, self.limits)
        except FetchFailed as exc:
            raise FetchFailed(str(exc), facts) from exc


def _unchanged(previous: AnalysisResult | None, fetcher: str, version: str, facts: RepositoryFacts) -> None:
    """The same version, fetched the same way, with no newer publish since: nothing to redo."""
    if (previous is not None and previous.ok and previous.fetcher == fetcher and previous.source_ref == version
            and previous.repository is not None and previous.repository.pushed_at == facts.pushed_at):
        raise NotModified()


def _document(reply: Reply, what: str) -> dict:
    try:
        document = json.loads(reply.body)
    except (ValueError, RecursionError) as exc:
        raise FetchFailed(f"{what}: the registry's answer is not JSON") from exc
    if not isinstance(document, dict):
        raise FetchFailed(f"{what}: the registry's answer is not an object")
    return document


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _when(value: object) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _earliest(files: list) -> datetime | None:
    stamps = [_when(f.get("upload_time_iso_8601") or f.get("upload_time")) for f in files if isinstance(f, dict)]
    return min((s for s in stamps if s), default=None)


def _history(registry: str, url: str, versions: list[tuple[str, datetime | None]], created: datetime | None) -> RepositoryFacts:
    epoch = datetime.min.replace(tzinfo=timezone.utc)
    releases = sorted((Release(tag=v[:100], published_at=when, prerelease=is_prerelease(registry, v[:100])) for v, when in versions),
                      key=lambda r: r.published_at or epoch, reverse=True)
    dates = [r.published_at for r in releases if r.published_at]
    return RepositoryFacts(host=registry, url=url, pushed_at=max(dates, default=None),  # type: ignore[arg-type]
                           created_at=created or min(dates, default=None), releases=releases[:MAX_RELEASES])


def _pypi_file(files: list[dict]) -> dict | None:
    sdists = [f for f in files if f.get("packagetype") == "sdist" and str(f.get("filename", "")).endswith((".tar.gz", ".zip"))]
    wheels = [f for f in files if f.get("packagetype") == "bdist_wheel"]
    wheels.sort(key=lambda f: "none-any" not in str(f.get("filename", "")))
    return (sdists or wheels or [None])[0]


def _verify_npm(data: bytes, dist: dict, what: str) -> None:
    """Check the tarball against the strongest hash its `dist` gives (SRI integrity, else the sha1 shasum)."""
    integrity = dist.get("integrity")
    for entry in sorted((integrity if isinstance(integrity, str) else "").split(), key=lambda e: e.startswith("sha1-")):
        algorithm, _, digest = entry.partition("-")
        if algorithm in ("sha512", "sha384", "sha256", "sha1"):
            if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != digest.split("?")[0]:
                raise FetchFailed(f"{what}: the tarball does not match its {algorithm} integrity")
            return
    shasum = dist.get("shasum")
    if isinstance(shasum, str) and hashlib.sha1(data).hexdigest() == shasum.lower():
        return
    raise FetchFailed(f"{what}: the tarball does not match its shasum (or the registry gives no hash)")
