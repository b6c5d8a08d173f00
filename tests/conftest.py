"""Shared fixtures: real SQLite files in tmp dirs, the real local-catalog servers installed once, and built sites."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pipeline import store
from pipeline.config import Settings
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.models import ProbeOutcome
from pipeline.render import run_build
from pipeline.sandbox.install import Installed, Installer
from pipeline.score import run_score
from pipeline.score.registry import infos
from pipeline.store import open_db
from tests.support import (
    BOARD_KINDS,
    FLEET,
    LONG_ID,
    NOW,
    ListSource,
    analysis,
    entry,
    fleet_entries,
    long_analysis,
    long_entry,
    long_fast,
    long_probe,
    probe,
    quiet,
)

# The GitHub replay's fixtures (`replay`, `client`), shared by the analyze tests; a module's own fixture of a name wins.
pytest_plugins = ["tests.github_replay"]


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Settings for the run: the real cache (SCOREBOARD_CACHE or the user cache), short timeouts."""
    return Settings.from_env().model_copy(update={"call_timeout": 5.0, "probe_timeout": 30.0, "start_timeout": 20.0})


@pytest.fixture(scope="session")
def installed(settings: Settings) -> dict[str, Installed]:
    """Install the embedded catalog's real servers once per session (a no-op when cached)."""
    batch = LocalCatalogSource().read()
    results = Installer(settings.cache_dir, settings.install_timeout).install([e.launch for e in batch.entries if e.launch])
    failed = {k: v.error for k, v in results.items() if not v.ok}
    assert not failed, f"the local catalog must install for these tests: {failed}"
    return results


@pytest.fixture
def db(tmp_path: Path):
    database = open_db(tmp_path / "scoreboard.db")
    yield database
    database.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The embedded catalog, two servers probed and analysed, scored on two days, built."""
    db = store.open_db(tmp_path_factory.mktemp("api") / "scoreboard.db")
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    run_score(db, servers=store.active_servers(db), now=NOW - timedelta(days=1))
    for server_id in ("mcp-server-time", "server-everything-http"):
        store.record_probe(db, probe().model_copy(update={"server_id": server_id}), None)
        store.record_analysis(db, analysis().model_copy(update={"server_id": server_id}))
    run_score(db, servers=store.active_servers(db), now=NOW)
    root = tmp_path_factory.mktemp("site")
    run_build(db, rubrics=infos(), site_dir=root, now=NOW)
    return root


@pytest.fixture(scope="session")
def board_site(tmp_path_factory):
    """231 servers in several categories and visibility tiers, one with hostile text; built once."""
    db = store.open_db(tmp_path_factory.mktemp("board") / "scoreboard.db")
    run_discover(db, sources=[ListSource("test", fleet_entries())], now=NOW, progress=quiet(1))
    for i in range(0, FLEET, 3):  # a third probed and analysed: a higher tier than the rest
        server_id = f"{BOARD_KINDS[i % len(BOARD_KINDS)][0]}-{i:03d}"
        store.record_probe(db, probe().model_copy(update={"server_id": server_id}), None)
        store.record_analysis(db, analysis().model_copy(update={"server_id": server_id}))
    store.record_probe(db, probe(outcome=ProbeOutcome.timeout).model_copy(update={"server_id": "evil"}), None)
    run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(FLEET + 1))
    root = tmp_path_factory.mktemp("board-site")
    run_build(db, rubrics=infos(), site_dir=root, now=NOW)
    return root, db


@pytest.fixture(scope="session")
def long_site(tmp_path_factory):
    """One remote server with the longest names, URLs and tool list a page shows, monitored for a week and legacy-only, beside
    the embedded catalog and a listing-only server; built once. Yields the site's root and the long server's id."""
    db = store.open_db(tmp_path_factory.mktemp("long") / "scoreboard.db")
    listed = entry("listed-only-" + "x" * 100, description="A listing with nothing to examine: its page and board are public too")
    run_discover(db, sources=[LocalCatalogSource(), ListSource("test", [long_entry(), listed])], now=NOW - timedelta(days=8),
                 progress=quiet(2))
    for hours in range(0, 7 * 24, 6):  # a week of fast probes, one failing: a reliability chart
        store.record_probe(db, long_fast(NOW - timedelta(hours=hours + 1), ok=hours != 30), None)
    store.record_probe(db, long_probe(NOW - timedelta(hours=2)), None)
    store.record_analysis(db, long_analysis())
    run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(2))
    root = tmp_path_factory.mktemp("long-site")
    run_build(db, rubrics=infos(), site_dir=root, now=NOW)
    return root, LONG_ID
