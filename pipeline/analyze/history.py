"""Maintenance pulse and version hygiene (seed 000) from what the host said: GitHub metadata, releases, tags and
commits, or a registry's release history when there is no repository.

Seed 000 names the signals and their maxima, not the curves; ours are the tables below (methodology deviation 45).
A signal the host cannot show (a registry has no stars, issues, forks, commits or release notes) is "not measured",
never 0: the metric is its measured points over the maximum of the measured signals, scaled to 0–100.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pipeline.models import RepositoryFacts

# (threshold, points): the first row whose threshold the value meets (days: at most; counts: at least).
PUSH_RECENCY_DAYS = ((7, 25), (30, 22), (90, 18), (180, 12), (365, 6), (730, 2))  # days since the last push (or publish)
COMMITS_90_DAYS = ((30, 10), (10, 8), (3, 5), (1, 3))  # commits on the default branch (or the server's folder) in 90 days
RELEASE_COUNT = ((20, 10), (10, 8), (5, 6), (2, 4), (1, 2))  # releases (registries: published versions)
RELEASE_RECENCY_DAYS = ((30, 10), (90, 8), (180, 6), (365, 4), (730, 2))  # days since the newest release
STAR_TIERS = ((1000, 10), (250, 8), (100, 6), (50, 5), (10, 3), (1, 1))
FORK_TIERS = ((100, 10), (25, 8), (10, 6), (3, 4), (1, 2))
# Open issues (GitHub counts pull requests too) per star: the backlog a community leaves unanswered.
ISSUE_RATIO = ((0.02, 10), (0.05, 8), (0.1, 6), (0.25, 4), (0.5, 2))
NOTES_MIN_CHARS = 100  # release notes that say more than GitHub's generated "Full Changelog" link
NOTES_SAMPLE = 10  # newest releases whose notes are read
STABILITY_FLOOR = 20  # seed 000: mature projects' minimum vitality
MATURE_STARS = 50
LOW_ISSUE_RATIO = 0.1
SEMVER = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
SEMVER_BADGE_RATIO = 0.9  # the Semver badge: nine tags in ten are semantic versions


def _tier(value: float, table: tuple[tuple[float, int], ...], at_most: bool = False) -> int:
    for threshold, points in table:
        if (value <= threshold) if at_most else (value >= threshold):
            return points
    return 0


def _signal(points: float | None, maximum: int, value: Any) -> dict[str, Any]:
    return {"points": points, "max": maximum, "measured": points is not None, "value": value}


def _total(signals: dict[str, dict[str, Any]]) -> float | None:
    """The measured signals' points over their maxima, 0–100, unrounded: the score rounds once, at the end (deviation 59)."""
    measured = [s for s in signals.values() if s["measured"]]
    maximum = sum(s["max"] for s in measured)
    return 100 * sum(s["points"] for s in measured) / maximum if maximum else None


def maintenance_pulse(repository: RepositoryFacts | None, now: datetime) -> dict[str, Any] | None:
    """Vitality 40 (push recency 25, commits in 90 days 10, stability floor 20), release discipline 30 (count 10,
    recency 10, notes 10), community health 30 (stars 10, issue backlog 10, forks 10). Seed 000's vitality parts add up
    to 35, not 40, so the signals give 95 at most and the value is scaled over that. Tables:

    push recency, days since the last push (a registry: the last publish): ≤7 25, ≤30 22, ≤90 18, ≤180 12, ≤365 6, ≤730 2, else 0
    commits in the last 90 days (of the 100 newest): ≥30 10, ≥10 8, ≥3 5, ≥1 3, 0 0
    stability floor: ≥50 stars, a release and ≤0.1 open issues per star lift vitality to 20
    releases: ≥20 10, ≥10 8, ≥5 6, ≥2 4, 1 2, 0 0;  newest release, days: ≤30 10, ≤90 8, ≤180 6, ≤365 4, ≤730 2, else 0
    release notes: 10 × the share of the 10 newest releases whose notes have ≥100 characters
    stars: ≥1000 10, ≥250 8, ≥100 6, ≥50 5, ≥10 3, ≥1 1;  forks: ≥100 10, ≥25 8, ≥10 6, ≥3 4, ≥1 2
    issue backlog, open issues per star: no open issues 5 (neutral), ≤0.02 10, ≤0.05 8, ≤0.1 6, ≤0.25 4, ≤0.5 2, else 0

    None when the host said nothing, or the repository is gone (the Dead Repository flag speaks for it).
    """
    if repository is None or repository.status != "ok" or repository.host == "local":
        return None
    releases = repository.releases
    days = (now - repository.pushed_at).days if repository.pushed_at else None
    recent_commits = sum(1 for d in repository.commit_dates if (now - d).days <= 90) if repository.commit_dates is not None else None
    newest = next((r.published_at for r in releases or [] if r.published_at), None)
    notes = [r.notes_chars for r in (releases or [])[:NOTES_SAMPLE]]
    stars, issues = repository.stars, repository.open_issues
    ratio = issues / max(stars, 1) if stars is not None and issues is not None else None
    signals = {
        "push_recency": _signal(_tier(days, PUSH_RECENCY_DAYS, at_most=True) if days is not None else None, 25, days),
        "commit_count": _signal(_tier(recent_commits, COMMITS_90_DAYS) if recent_commits is not None else None, 10, recent_commits),
        "release_count": _signal(_tier(len(releases), RELEASE_COUNT) if releases is not None else None, 10,
                                 len(releases) if releases is not None else None),
        "release_recency": _signal(None if releases is None else _tier((now - newest).days, RELEASE_RECENCY_DAYS, at_most=True) if newest else 0,
                                   10, (now - newest).days if newest else None),
        "release_notes": _signal(None if releases is None or any(n is None for n in notes) else
                                 round(10 * sum(1 for n in notes if n >= NOTES_MIN_CHARS) / len(notes), 1) if notes else 0, 10,
                                 sum(1 for n in notes if n is not None and n >= NOTES_MIN_CHARS) if notes else 0),
        "stars": _signal(_tier(stars, STAR_TIERS) if stars is not None else None, 10, stars),
        "issue_backlog": _signal(None if ratio is None else 5 if issues == 0 else _tier(ratio, ISSUE_RATIO, at_most=True), 10, issues),
        "forks": _signal(_tier(repository.forks, FORK_TIERS) if repository.forks is not None else None, 10, repository.forks),
    }
    vitality = sum(signals[k]["points"] or 0 for k in ("push_recency", "commit_count"))
    mature = stars is not None and stars >= MATURE_STARS and bool(releases) and ratio is not None and ratio <= LOW_ISSUE_RATIO
    floor = mature and vitality < STABILITY_FLOOR
    if floor:  # the floor's lift is shown on the push-recency signal, so the signals still add up
        signals["push_recency"]["points"] = (signals["push_recency"]["points"] or 0) + STABILITY_FLOOR - vitality
    value = _total(signals)
    if value is None:
        return None
    return {
        "value": value,
        "signals": signals,
        "stability_floor": floor,
        "vitality": sum(signals[k]["points"] or 0 for k in ("push_recency", "commit_count")),
        "release_discipline": sum(signals[k]["points"] or 0 for k in ("release_count", "release_recency", "release_notes")),
        "community_health": sum(signals[k]["points"] or 0 for k in ("stars", "issue_backlog", "forks")),
        "measured_max": sum(s["max"] for s in signals.values() if s["measured"]),
        "host": repository.host,
    }


def version_hygiene(repository: RepositoryFacts | None) -> dict[str, Any] | None:
    """GitHub releases +30, semver tag ratio +35, release notes +15, pre-release use +10 (seed 000): 90 points, scaled
    to 0–100 over the measured signals. Tables:

    releases: 30 when there is one (a registry: a published version)
    semver ratio: 35 × the share of tags (no tags: of the release tags; a registry: of the versions) that are semantic versions
    release notes: 15 × the share of the 10 newest releases whose notes have ≥100 characters (a registry keeps none: not measured)
    pre-releases: 10 when a release (or tag) is a pre-release

    None when the host said nothing or the repository is gone.
    """
    if repository is None or repository.status != "ok" or repository.host == "local" or repository.releases is None:
        return None
    releases = repository.releases
    tags = repository.tags or [r.tag for r in releases]
    semver = [t for t in tags if SEMVER.match(t)]
    notes = [r.notes_chars for r in releases[:NOTES_SAMPLE]]
    prerelease = any(r.prerelease for r in releases) or any("-" in t for t in semver)
    signals = {
        "releases": _signal(30 if releases else 0, 30, len(releases)),
        "semver_ratio": _signal(round(35 * len(semver) / len(tags), 1) if tags else 0, 35, round(len(semver) / len(tags), 2) if tags else None),
        "release_notes": _signal(None if any(n is None for n in notes) else
                                 round(15 * sum(1 for n in notes if n >= NOTES_MIN_CHARS) / len(notes), 1) if notes else 0, 15,
                                 sum(1 for n in notes if n is not None and n >= NOTES_MIN_CHARS)),
        "prerelease": _signal(10 if prerelease else 0, 10, prerelease),
    }
    return {
        "value": _total(signals),
        "signals": signals,
        "semver": bool(tags) and len(semver) / len(tags) >= SEMVER_BADGE_RATIO,
        "measured_max": sum(s["max"] for s in signals.values() if s["measured"]),
        "host": repository.host,
    }
