"""`scoreboard site stage` and `promote`: a build goes into a hard-linked copy of the live site, which stays byte for byte
as it was until the built copy is promoted; a run that fails before the promote leaves it served as it was."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.score import run_score
from tests.snapshot_support import scoreboard
from tests.support import NOW, quiet


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def live(tmp_path: Path) -> tuple[Path, Path]:
    """A catalog scored and built into the live site; its database."""
    db_path = tmp_path / "scoreboard.db"
    db = store.open_db(db_path)
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    run_score(db, servers=store.active_servers(db), now=NOW)
    db.close()
    site = tmp_path / "_site"
    assert scoreboard("build", "--db", str(db_path), "--site", str(site)).returncode == 0
    return site, db_path


def test_a_staged_build_leaves_the_live_site_until_promoted(live, tmp_path):
    site, db_path = live
    before = files(site)
    staging = tmp_path / "_site.next"
    done = scoreboard("site", "stage", str(staging), "--site", str(site))
    assert done.returncode == 0 and f"{len(before):,} files linked" in done.stdout
    index = "index.html"
    assert os.stat(site / index).st_ino == os.stat(staging / index).st_ino, "linked, not copied"

    db = store.open_db(db_path)
    db.execute("update servers set description = 'A new description, seen only after the promote.' where rowid = 1")
    db.conn.commit()
    run_score(db, servers=store.active_servers(db), now=NOW + timedelta(days=1))
    db.close()
    done = scoreboard("build", "--db", str(db_path), "--site", str(staging))
    assert done.returncode == 0, done.stderr
    assert files(site) == before, "the build into the staged copy changed no byte of the live site"
    built = files(staging)
    assert built != before and any(b"seen only after the promote" in data for data in built.values())

    done = scoreboard("site", "promote", str(staging), "--site", str(site))
    assert done.returncode == 0, done.stderr
    assert files(site) == built and not staging.exists()
    assert files(site.with_name("_site.previous")) == before


def test_a_failed_build_is_never_promoted(live, tmp_path):
    site, db_path = live
    before = files(site)
    staging = tmp_path / "_site.next"
    assert scoreboard("site", "stage", str(staging), "--site", str(site)).returncode == 0
    db_path.write_bytes(b"not a database any more")  # a stage left it broken: the build fails
    done = scoreboard("build", "--db", str(db_path), "--site", str(staging))
    assert done.returncode != 0
    assert files(site) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    done = scoreboard("site", "promote", str(empty), "--site", str(site))
    assert done.returncode != 0 and "not a built site" in done.stderr
    assert files(site) == before


def test_staging_the_live_site_onto_itself_is_refused(live):
    site, _ = live
    done = scoreboard("site", "stage", str(site), "--site", str(site))
    assert done.returncode != 0 and "must not be the live site" in done.stderr
    assert (site / "index.html").exists()


def test_the_downloads_page_links_the_dated_snapshots_of_a_github_store(live, tmp_path, monkeypatch):
    site, db_path = live
    page = (site / "downloads" / "index.html").read_text()
    assert "Dated snapshots" not in page
    monkeypatch.setenv("SCOREBOARD_SNAPSHOT_STORE", "github-release:acme/scoreboard")
    assert scoreboard("build", "--db", str(db_path), "--site", str(site)).returncode == 0
    page = (site / "downloads" / "index.html").read_text()
    assert '<a href="https://github.com/acme/scoreboard/releases/tag/scoreboard-db">Dated snapshots</a>' in page
    monkeypatch.setenv("SCOREBOARD_SNAPSHOT_STORE", "s3://bucket")
    done = scoreboard("build", "--db", str(db_path), "--site", str(site))
    assert done.returncode == 2 and "SCOREBOARD_SNAPSHOT_STORE" in done.stderr
