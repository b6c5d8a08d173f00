"""The source chooser's fallbacks (GitHub, the package archive, the installed package, a directory; a 404 kept with
the package analysed instead), run_analyze's pool (concurrency, deferral, confirmation, crashes, Ctrl-C), the Dead /
Archived / Stale flags firing end to end from a replayed repository through run_analyze and the score, and the CLI's
default analysis with GitHub unreachable."""

from __future__ import annotations

import io
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline import store
from pipeline.analyze import run_analyze
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.fetch import FetchFailed, SourceTree, Unavailable
from pipeline.analyze.github import GitHubFetcher
from pipeline.analyze.sources import NO_SOURCE, SourceChooser, fetch_order
from pipeline.discover import run_discover
from pipeline.models import AnalysisResult, LaunchSpec, RepositoryFacts
from pipeline.progress import Progress
from pipeline.score import run_score
from tests.github_replay import closed_port, github_fetcher, time_server
from tests.support import NOW, ListSource, entry, quiet, server

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
    chooser = SourceChooser(github=github_fetcher(replay, client), packages=Package())
    tree = chooser.fetch(server(repository="https://github.com/gone/away", launch=PACKAGED))
    assert tree.fetcher == "pypi-archive" and tree.repository.status == "not_found" and tree.repository.host == "github"


def test_a_repository_without_a_readable_tarball_keeps_its_facts_with_the_package(replay, client):
    replay.repository("o", "r", tar=b"this is not a tarball")
    tree = SourceChooser(github=github_fetcher(replay, client), packages=Package()).fetch(time_server(launch=PACKAGED))
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
    failing = Package(Unavailable("pypi.registry.test: ConnectError"))
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
    chooser = SourceChooser(github=github_fetcher(replay, client), packages=Package())
    report = run_analyze(db, servers=servers, fetcher=chooser, now=NOW, progress=Progress("analyze", len(servers), stream=stream), concurrency=3)
    assert report.counts == {"analyzed": 3, "unchanged": 0, "deferred": 0, "failed": 2}
    assert f"listing-only: failed: {NO_SOURCE}" in stream.getvalue()
    run_score(db, servers=servers, now=NOW, progress=quiet(len(servers)))
    flags = {sid: {f["name"] for f in json.loads(row["flags"])} for sid, row in store.load_scores(db, "scoreboard").items()}
    assert "dead_repository" in flags["dead"] and "archived_repository" in flags["archived"] and "stale_project" in flags["stale"]
    assert not flags["fine"] & {"dead_repository", "archived_repository", "stale_project"}
    analyses = {sid: result for sid, (_, result) in store.latest_analyses(db, [s.id for s in servers]).items()}
    assert analyses["fine"].metrics["maintenance_pulse"]["host"] == "github" and analyses["fine"].metrics["version_hygiene"]["value"] > 0
    # Run again with the previous analyses: every repository costs one conditional call, and nothing is rewritten (seed 000:
    # an unchanged repository is skipped and its analysis ages).
    replay.seen.clear()
    chooser = SourceChooser(github=github_fetcher(replay, client), packages=Package())
    again = run_analyze(db, servers=servers, fetcher=chooser, now=NOW + timedelta(days=1), progress=quiet(len(servers)),
                        previous=lambda sid: analyses.get(sid))
    assert again.counts["unchanged"] == 3 and len(replay.seen) == 4  # three 304s and the 404 asked again
    assert store.latest_analyses(db, ["fine"])["fine"][1].analyzed_at == NOW and db["analyses"].count == 7  # the two failures again


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

    run_discover(db, sources=[ListSource("test", [entry(f"s{i}") for i in range(10)])], now=NOW, progress=quiet(1))
    report = run_analyze(db, servers=store.active_servers(db), fetcher=LocalDirectoryFetcher(tmp_path), now=NOW,
                         progress=Interrupting("analyze", 10, stream=io.StringIO()), concurrency=2)
    assert report.interrupted and report.counts["analyzed"] == 2 and db["analyses"].count == 2


def test_a_monorepos_servers_are_fetched_together_where_the_first_comes():
    """The order given (oldest examined first) is kept, but a monorepo's servers follow its first, for one shared fetch."""
    listed = [server(id="b", repository="https://github.com/o/r", subpath="x"), server(id="a", repository=None),
              server(id="c", repository="https://github.com/a/z"), server(id="d", repository="https://github.com/O/R", subpath="y")]
    assert [s.id for s in fetch_order(listed)] == ["b", "d", "a", "c"]


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
