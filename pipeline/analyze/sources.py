"""SourceChooser: which fetcher brings a server's source, and what happens when it cannot.

In order: a local directory configured for the server; its GitHub repository; its published npm or PyPI package
(when GitHub is unavailable, the repository is gone or unreadable, or there is none); the package installed in the
cache. What GitHub said of the repository (a 404, or its metadata and releases when only its tarball or folder
failed) stays with whatever is analysed instead, so the Dead Repository flag still fires. When GitHub is only
unavailable this run and the previous analysis came from it, that analysis is kept rather than replaced by a
package's poorer view (Unavailable passes up).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.fetch import FetchFailed, InstalledPackageFetcher, RepoFetcher, SourceTree, Unavailable
from pipeline.analyze.registries import package_of
from pipeline.identity import parse_github
from pipeline.models import AnalysisResult, Server

NO_SOURCE = "no source: no repository or package is known"


def fetch_order(servers: list[Server]) -> list[Server]:
    """Servers in their order (oldest examined first, as the CLI chooses them), except that a monorepo's are fetched one
    after another, where its first comes (GitHubFetcher shares their repository's fetch)."""
    first: dict[str, int] = {}
    keys = []
    for position, server in enumerate(servers):
        ref = parse_github(server.repository, server.subpath)
        group = ref.repo_key if ref else f"#{position}"
        keys.append((first.setdefault(group, position), position))
    return [server for _, server in sorted(zip(keys, servers), key=lambda pair: pair[0])]


class SourceChooser:
    name = "source"

    def __init__(
        self,
        github: RepoFetcher | None = None,
        packages: RepoFetcher | None = None,
        installed: InstalledPackageFetcher | None = None,
        directories: dict[str, Path] | None = None,
    ) -> None:
        self.github, self.packages, self.installed, self.directories = github, packages, installed, directories or {}

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        if server.id in self.directories:
            return LocalDirectoryFetcher(self.directories[server.id]).fetch(server, previous)
        has_repository = parse_github(server.repository, server.subpath) is not None
        has_package = package_of(server) is not None
        if not has_repository and not has_package:
            raise FetchFailed(NO_SOURCE)
        failures: list[FetchFailed] = []
        said = None  # what GitHub said of the repository before its fetch failed (a 404, or metadata without a tarball)
        if has_repository and self.github is not None:
            try:
                return self.github.fetch(server, previous)
            except FetchFailed as exc:
                failures.append(exc)
                said = exc.repository
                if isinstance(exc, Unavailable) and previous is not None and previous.ok and previous.fetcher == self.github.name:
                    raise
        for fetcher in (self.packages, self.installed if server.launch is not None else None):
            if fetcher is None or not has_package:
                continue
            try:
                tree = fetcher.fetch(server, previous)
            except FetchFailed as exc:
                failures.append(exc)
                continue
            if said is not None:
                tree.repository = said
            return tree
        if not failures:
            raise FetchFailed("no fetcher is configured for its repository or package")
        message = "; ".join(str(f) for f in failures)[:1000]
        facts = said or next((f.repository for f in failures if f.repository is not None), None)
        transient = all(isinstance(f, Unavailable) for f in failures)
        raise (Unavailable if transient else FetchFailed)(message, facts)
