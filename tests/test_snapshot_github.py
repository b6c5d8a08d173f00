"""Snapshots as the assets of a GitHub release, against GitHub's release API replayed on loopback (tests.release_replay):
the release is made on the first publish, uploads go to the upload origin, downloads follow the redirect without our
token, and every failure GitHub documents leaves the previous snapshots in place and --db untouched."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bench.synthetic import NOW
from pipeline import store
from pipeline.fleet.github_release import RELEASE_TAG, GitHubReleaseStore
from pipeline.fleet.snapshot_format import DATA_SUFFIX, MANIFEST_SUFFIX, METADATA_SUFFIX
from pipeline.fleet.snapshot_publish import publish
from pipeline.fleet.snapshots import SnapshotError, restore
from pipeline.score import registry
from tests.release_replay import READ_TOKEN, WRITE_TOKEN, ReleaseReplay
from tests.snapshot_support import copy_db, forge, scoreboard, scoreboard_process, scored_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return scored_fleet(tmp_path_factory.mktemp("fleet") / "fleet.db", servers=40)


@pytest.fixture
def github():
    with ReleaseReplay() as replay, httpx.Client(timeout=10) as client:
        yield replay, client


def release_store(replay: ReleaseReplay, client: httpx.Client, token: str | None = WRITE_TOKEN) -> GitHubReleaseStore:
    return GitHubReleaseStore(client, replay.repo, api=replay.api, token=token)


def quiet(_: str) -> None:
    pass


def put(replay: ReleaseReplay, directory: Path, database: Path, when) -> str:
    """A snapshot already published (by an earlier run): forged locally, then held by the release."""
    name = forge(directory, database, when)
    for suffix in (DATA_SUFFIX, MANIFEST_SUFFIX):
        replay.add_asset(name + suffix, (directory / (name + suffix)).read_bytes())
    return name


def test_publish_makes_the_release_and_restore_reads_it_back(github, fleet, tmp_path):
    replay, client = github
    work = copy_db(fleet, tmp_path / "scoreboard.db")
    report = publish(release_store(replay, client), work, now=NOW, rubrics=registry.names(), log=quiet)
    assert report.counts["kept"] == 1
    (release,) = replay.releases.values()
    assert release["tag_name"] == RELEASE_TAG and replay.created_with["make_latest"] == "false"
    uploads = [(path, headers) for method, path, headers in replay.seen if method == "POST" and "/assets?name=" in path]
    assert [p.split("name=")[1] for p, _ in uploads] == [n for suffix in (DATA_SUFFIX, METADATA_SUFFIX, MANIFEST_SUFFIX)
                                                           for n in replay.asset_names() if n.endswith(suffix)], "the manifest last"
    assert all(h["host"] == f"localhost:{replay.port}" and h["authorization"] == f"Bearer {WRITE_TOKEN}" for _, h in uploads)
    assert [h["content-type"] for _, h in uploads] == ["application/zstd", "application/json", "application/json"]

    target = tmp_path / "restored" / "scoreboard.db"
    restore(release_store(replay, client, token=None), target, now=NOW, log=quiet)  # a public repository: no token needed
    assert store.open_db(target)["scores"].count == store.open_db(work)["scores"].count
    storage = [h for method, path, h in replay.seen if path.startswith("/storage/")]
    assert storage and all("authorization" not in h for h in storage), "the signed URL is fetched without our token"


def test_pages_of_assets_are_all_read(github, fleet, tmp_path):
    replay, client = github
    names = [put(replay, tmp_path / "made", fleet, NOW - timedelta(days=d)) for d in (3, 2, 1)]
    replay.faults.page_cap = 2  # GitHub pages at 100 at most; two here, so six assets take three pages
    assert release_store(replay, client).names() == sorted(n + s for n in names for s in (DATA_SUFFIX, MANIFEST_SUFFIX))
    assert sum(1 for _, path, _ in replay.seen if "/assets" in path and "page=" in path) == 3


@pytest.mark.parametrize("failing,status", [(DATA_SUFFIX, 502), (METADATA_SUFFIX, 502), (MANIFEST_SUFFIX, 500)])
def test_a_failed_upload_keeps_the_previous_snapshots(github, fleet, tmp_path, failing, status):
    replay, client = github
    previous = put(replay, tmp_path / "made", fleet, NOW - timedelta(days=1))
    work = tmp_path / "scoreboard.db"
    restore(release_store(replay, client), work, now=NOW, log=quiet)
    held = replay.uploaded()
    replay.faults.upload_status = {failing: status}
    with pytest.raises(SnapshotError) as failed:
        publish(release_store(replay, client), work, now=NOW, rubrics=registry.names(), log=quiet)
    message = str(failed.value)
    assert f"github-release:{replay.repo}" in message and f"HTTP {status}" in message and f"newest {previous}" in message
    assert replay.uploaded() == held and replay.asset_names() == sorted(held), "nothing of the failed snapshot stays, a starter asset neither"
    replay.faults.upload_status = {}
    assert publish(release_store(replay, client), work, now=NOW + timedelta(hours=1), rubrics=registry.names(), log=quiet).counts["kept"] == 2


def test_a_token_that_cannot_write_fails_loudly(github, fleet, tmp_path):
    replay, client = github
    put(replay, tmp_path / "made", fleet, NOW - timedelta(days=1))
    work = tmp_path / "scoreboard.db"
    restore(release_store(replay, client, token=READ_TOKEN), work, now=NOW, log=quiet)
    held = replay.uploaded()
    with pytest.raises(SnapshotError, match="HTTP 403: Resource not accessible by integration"):
        publish(release_store(replay, client, token=READ_TOKEN), work, now=NOW, rubrics=registry.names(), log=quiet)
    assert replay.uploaded() == held


@pytest.mark.parametrize("fault,expected", [("download_status", "cannot download"), ("corrupt_downloads", "is not the file that was published")])
def test_a_failed_or_damaged_download_leaves_db_untouched(github, fleet, tmp_path, fault, expected):
    replay, client = github
    put(replay, tmp_path / "made", fleet, NOW)
    target = copy_db(fleet, tmp_path / "scoreboard.db")
    before = target.read_bytes()
    setattr(replay.faults, fault, 503 if fault == "download_status" else DATA_SUFFIX)
    with pytest.raises(SnapshotError, match=expected):
        restore(release_store(replay, client), target, now=NOW, log=quiet)
    assert target.read_bytes() == before


def test_no_release_is_no_snapshot(github, tmp_path):
    replay, client = github
    with pytest.raises(SnapshotError, match=f"no snapshot to restore in github-release:{replay.repo}"):
        restore(release_store(replay, client), tmp_path / "scoreboard.db", now=NOW, log=quiet)
    assert not (tmp_path / "scoreboard.db").exists()


def test_retention_deletes_through_the_api(github, fleet, tmp_path):
    replay, client = github
    for days in (3, 2, 1):
        put(replay, tmp_path / "made", fleet, NOW - timedelta(hours=days))  # three of the same day: the newest of it stays
    work = tmp_path / "scoreboard.db"
    restore(release_store(replay, client), work, now=NOW, log=quiet)
    report = publish(release_store(replay, client), work, now=NOW + timedelta(days=1), rubrics=registry.names(), log=quiet)
    assert report.counts == {**report.counts, "kept": 2, "pruned": 4}
    # the newest of the day before (published before there was metadata: two files) and the new snapshot (three) stay
    assert sum(1 for method, _, _ in replay.seen if method == "DELETE") == 4 and len(replay.asset_names()) == 5


def test_the_cli_reads_the_token_and_the_api_from_the_environment(github, fleet, tmp_path, monkeypatch):
    replay, _ = github
    put(replay, tmp_path / "made", fleet, NOW)
    target = tmp_path / "scoreboard.db"
    env = {"SCOREBOARD_GITHUB_API": replay.api, "GH_TOKEN": WRITE_TOKEN, "GITHUB_TOKEN": ""}
    done = scoreboard_process("snapshot", "restore", "--from", f"github-release:{replay.repo}", "--db", str(target), env=env)
    assert done.returncode == 0, done.stderr
    assert any(h.get("authorization") == f"Bearer {WRITE_TOKEN}" for _, _, h in replay.seen)
    replay.faults.download_status = 500
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    done = scoreboard("snapshot", "restore", "--from", f"github-release:{replay.repo}", "--db", str(target))
    assert done.returncode != 0 and "cannot download" in done.stderr and "HTTP 500" in done.stderr
