"""Maintenance pulse and version hygiene from a host's facts: the tables, the stability floor, and registries' history
scaled over what a registry can show (never an unmeasurable signal counted as zero)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.analyze.history import maintenance_pulse, version_hygiene
from pipeline.models import Release, RepositoryFacts
from tests.support import NOW


def days(n: float):
    return NOW - timedelta(days=n)


def github(**fields) -> RepositoryFacts:
    base = dict(host="github", url="https://github.com/o/r", pushed_at=days(3), stars=1500, forks=120, open_issues=10,
                releases=[Release(tag=f"v1.{i}.0", published_at=days(10 + 30 * i), notes_chars=400) for i in range(25)],
                tags=[f"v1.{i}.0" for i in range(25)], commit_dates=[days(i) for i in range(40)])
    base.update(fields)
    return RepositoryFacts(**base)


def test_a_thriving_repository_scores_full_marks():
    pulse = maintenance_pulse(github(), NOW)
    assert pulse["value"] == 100 and pulse["vitality"] == 35 and pulse["release_discipline"] == 30 and pulse["community_health"] == 30
    # Seed 000's vitality parts add up to 35 of its 40: the pulse is scaled over the 95 its signals can give.
    assert all(s["measured"] for s in pulse["signals"].values()) and pulse["measured_max"] == 95
    hygiene = version_hygiene(github())
    assert hygiene["signals"]["semver_ratio"]["points"] == 35 and hygiene["semver"] is True
    assert hygiene["signals"]["prerelease"]["points"] == 0 and hygiene["value"] == pytest.approx(100 * 80 / 90)  # unrounded: the score rounds once


@pytest.mark.parametrize("age,points", [(0, 25), (7, 25), (8, 22), (30, 22), (90, 18), (180, 12), (365, 6), (730, 2), (731, 0)])
def test_push_recency_table(age, points):
    unfloored = github(pushed_at=days(age), stars=10)  # below the stability floor's 50 stars
    assert maintenance_pulse(unfloored, NOW)["signals"]["push_recency"]["points"] == points


@pytest.mark.parametrize("commits,points", [(0, 0), (1, 3), (3, 5), (10, 8), (30, 10)])
def test_commit_count_counts_the_last_90_days(commits, points):
    dates = [days(i) for i in range(commits)] + [days(200)] * 50
    assert maintenance_pulse(github(commit_dates=dates), NOW)["signals"]["commit_count"]["points"] == points


def test_the_stability_floor_lifts_a_mature_quiet_project_to_20_vitality():
    quiet = github(pushed_at=days(800), commit_dates=[], stars=300, open_issues=3)
    pulse = maintenance_pulse(quiet, NOW)
    assert pulse["stability_floor"] is True and pulse["vitality"] == 20
    # Too few stars, no release, or a large open-issue backlog: no floor.
    for facts in (quiet.model_copy(update={"stars": 40}), quiet.model_copy(update={"releases": []}),
                  quiet.model_copy(update={"open_issues": 100})):
        pulse = maintenance_pulse(facts, NOW)
        assert pulse["stability_floor"] is False and pulse["vitality"] == 0


def test_community_tiers_and_the_neutral_issue_score():
    small = maintenance_pulse(github(stars=12, forks=1, open_issues=0), NOW)["signals"]
    assert (small["stars"]["points"], small["forks"]["points"], small["issue_backlog"]["points"]) == (3, 2, 5)
    swamped = maintenance_pulse(github(stars=10, open_issues=9), NOW)["signals"]
    assert swamped["issue_backlog"]["points"] == 0


def test_release_notes_quality_reads_the_newest_ten():
    releases = [Release(tag=f"v{i}.0.0", published_at=days(i), notes_chars=500 if i < 4 else 60) for i in range(12)]
    pulse = maintenance_pulse(github(releases=releases), NOW)
    assert pulse["signals"]["release_notes"]["points"] == 4.0
    assert version_hygiene(github(releases=releases))["signals"]["release_notes"]["points"] == 6.0


def test_a_repository_without_releases_or_tags():
    facts = github(releases=[], tags=[])
    pulse = maintenance_pulse(facts, NOW)["signals"]
    assert pulse["release_count"]["points"] == 0 and pulse["release_recency"]["points"] == 0 and pulse["release_notes"]["measured"]
    assert version_hygiene(facts)["value"] == 0


def test_version_hygiene_semver_ratio_and_prereleases():
    facts = github(tags=["v1.0.0", "v1.1.0-beta.1", "latest", "release-2"],
                   releases=[Release(tag="v1.1.0-beta.1", published_at=days(5), prerelease=True, notes_chars=300)])
    hygiene = version_hygiene(facts)
    assert hygiene["signals"]["semver_ratio"]["value"] == 0.5 and hygiene["signals"]["semver_ratio"]["points"] == 17.5
    assert hygiene["signals"]["prerelease"]["points"] == 10 and hygiene["semver"] is False
    assert hygiene["value"] == pytest.approx(100 * (30 + 17.5 + 15 + 10) / 90)


def registry(**fields) -> RepositoryFacts:
    base = dict(host="npm", url="https://registry.test/x", pushed_at=days(20), created_at=days(400),
                releases=[Release(tag=v, published_at=days(20 + 40 * i), prerelease="-" in v)
                          for i, v in enumerate(["1.2.0", "1.2.0-rc.1", "1.1.0", "1.0.0", "0.9.0"])])
    base.update(fields)
    return RepositoryFacts(**base)


def test_registry_history_is_scaled_over_what_a_registry_can_show():
    pulse = maintenance_pulse(registry(), NOW)
    unmeasured = {k for k, s in pulse["signals"].items() if not s["measured"]}
    assert unmeasured == {"commit_count", "release_notes", "stars", "issue_backlog", "forks"}
    assert pulse["measured_max"] == 45
    # push recency 22 (20 days), 5 releases 6, newest release 20 days ago 10: 38 of 45
    assert pulse["value"] == pytest.approx(100 * 38 / 45)
    hygiene = version_hygiene(registry())
    assert not hygiene["signals"]["release_notes"]["measured"] and hygiene["measured_max"] == 75
    assert hygiene["value"] == 100 and hygiene["semver"] is True


def test_nothing_said_is_not_measured():
    assert maintenance_pulse(None, NOW) is None and version_hygiene(None) is None
    gone = RepositoryFacts(host="github", status="not_found")
    assert maintenance_pulse(gone, NOW) is None and version_hygiene(gone) is None
    # GitHub would not list releases (the call failed): version hygiene cannot be measured; the pulse still can.
    assert version_hygiene(github(releases=None)) is None
    pulse = maintenance_pulse(github(releases=None), NOW)
    assert not pulse["signals"]["release_count"]["measured"] and pulse["measured_max"] == 65
