"""best-of-mcp-servers (tolkonepiu): the curated `projects.yaml` plus the weekly history CSVs.

The YAML lists the projects; the newest `history/<date>_projects.csv` adds computed metrics (stars,
contributors, project rank); every CSV's `updated_github_id` records a repository rename.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import yaml

from pipeline.discover.base import SourceBatch, listing_date, mapping, number, snapshot_files, text
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.identity import parse_github
from pipeline.models import Listing, Package

NAME = "best-of-mcp-servers"
REPO = "tolkonepiu/best-of-mcp-servers"
RAW_BASE = f"https://raw.githubusercontent.com/{REPO}/main"
CONTENTS_URL = f"https://api.github.com/repos/{REPO}/contents/history"
_METRICS = {
    "star_count": "github_stars", "fork_count": "github_forks", "contributor_count": "contributors", "projectrank": "bestof_projectrank",
    "projectrank_placing": "bestof_placing", "monthly_downloads": "monthly_downloads", "pypi_monthly_downloads": "pypi_monthly_downloads",
    "commit_count": "commits", "dependent_project_count": "dependents",
}
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})_projects\.csv$")


def parse_projects(text_: str, where: str = "projects.yaml") -> tuple[SourceBatch, dict[str, str]]:
    """Listings from projects.yaml, and its category id -> title map."""
    batch = SourceBatch()
    try:
        document = yaml.safe_load(text_)
        document = mapping(document, "projects.yaml")
    except (yaml.YAMLError, TypeError) as exc:
        batch.problems.append(f"{where}: not valid YAML: {exc}")
        batch.complete = False
        return batch, {}
    titles = {c["category"]: c.get("title") or c["category"] for c in document.get("categories") or [] if isinstance(c, dict) and c.get("category")}
    projects = document.get("projects")
    if not isinstance(projects, list):
        batch.problems.append(f"{where}: `projects` is not a list")
        batch.complete = False
        return batch, titles
    for index, project in enumerate(projects):
        batch.add(f"{where}: project {index}", lambda project=project: _project(project, titles))
    return batch, titles


def _project(project: Any, titles: dict[str, str]) -> Listing:
    project = mapping(project, "project")
    github_id = text(project.get("github_id"))
    if not github_id or parse_github(f"https://github.com/{github_id}") is None:
        raise ValueError(f"github_id {project.get('github_id')!r} is not owner/repo")
    pypi = text(project.get("pypi_id"))
    category = text(project.get("category"))
    return Listing(
        source=NAME,
        key=github_id.lower(),
        name=text(project.get("name")) or github_id,
        description=text(project.get("description")),
        repository=f"https://github.com/{github_id}",
        packages=[Package(registry="pypi", identifier=pypi)] if pypi else [],
        categories=[titles.get(category, category)] if category else [],
        raw=project,
    )


def parse_history(text_: str, where: str) -> tuple[dict[str, dict[str, Any]], dict[str, str], list[str]]:
    """(metrics and attributes by lower-case github_id, renames old -> new repo key, problems) from one CSV.

    Columns come and go between snapshots (2025 had `labels`); only the ones present are read.
    """
    rows: dict[str, dict[str, Any]] = {}
    aliases: dict[str, str] = {}
    problems: list[str] = []
    reader = csv.DictReader(io.StringIO(text_))
    if not reader.fieldnames or "github_id" not in reader.fieldnames:
        return rows, aliases, [f"{where}: no github_id column"]
    for line, row in enumerate(reader, start=2):
        github_id = text(row.get("github_id"))
        old = parse_github(f"https://github.com/{github_id}") if github_id else None
        if old is None:
            problems.append(f"{where}: line {line}: github_id {github_id!r} is not owner/repo")
            continue
        renamed = text(row.get("updated_github_id"))
        new = parse_github(f"https://github.com/{renamed}") if renamed else None
        if new is not None and new.repo_key != old.repo_key:
            aliases[old.repo_key] = new.repo_key
        metrics = {name: value for column, name in _METRICS.items() if (value := number(row.get(column))) is not None}
        attributes = {
            name: value for name, column in (("license", "license"), ("last_commit_at", "last_commit_pushed_at"), ("homepage", "homepage"))
            if (value := text(row.get(column)))
        }
        if text(row.get("show")) in ("False", "false"):
            attributes["bestof_hidden"] = True
        rows[github_id.lower()] = {"metrics": metrics, "attributes": attributes, "row": {k: v for k, v in row.items() if k and v},
                                   "pypi": text(row.get("pypi_id"))}
    return rows, aliases, problems


def combine(projects: SourceBatch, histories: list[tuple[str, str]]) -> SourceBatch:
    """Projects enriched with the newest CSV's metrics; renames from every CSV, newer ones winning."""
    batch = SourceBatch(problems=list(projects.problems), complete=projects.complete, records_read=projects.records_read)
    latest: dict[str, dict[str, Any]] = {}
    dated = None
    for where, body in sorted(histories, key=lambda h: _DATED.match(h[0]).group(1) if _DATED.match(h[0]) else h[0]):
        rows, aliases, problems = parse_history(body, where)
        batch.problems += problems
        batch.aliases.update(aliases)
        if rows:
            latest, dated = rows, listing_date(match.group(1)) if (match := _DATED.match(where)) else None
    for listing in projects.listings:
        found = latest.get(listing.key)
        if found:
            listing.updated_at = dated  # the listing is as of the newest history file that has its row
            listing.metrics.update(found["metrics"])
            listing.attributes.update(found["attributes"])
            if found["pypi"] and not listing.packages:
                listing.packages.append(Package(registry="pypi", identifier=found["pypi"]))
        batch.listings.append(listing)
    return batch


def read_snapshot(directory: Path) -> SourceBatch:
    try:
        projects, _ = parse_projects((directory / "projects.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return SourceBatch(problems=[f"projects.yaml: unreadable: {exc}"], complete=False)
    histories: list[tuple[str, str]] = []
    for path in snapshot_files(directory / "history", "*_projects.csv"):
        try:
            histories.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            projects.problems.append(f"history/{path.name}: unreadable: {exc}")
    return combine(projects, histories)


def fetch(http: SourceHTTP, token: str | None = None, raw_base: str = RAW_BASE, contents_url: str = CONTENTS_URL) -> SourceBatch:
    """projects.yaml and the two newest history CSVs (found through the contents API)."""
    try:
        body, _ = http.get_text(f"{raw_base}/projects.yaml")
        projects, _ = parse_projects(body)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        listing, _ = http.get_json(contents_url, headers=headers)
        names = sorted(item["name"] for item in listing if isinstance(item, dict) and _DATED.match(str(item.get("name"))))
        histories = [(name, http.get_text(f"{raw_base}/history/{name}")[0]) for name in names[-2:]]
    except (SourceError, TypeError) as exc:
        return SourceBatch(problems=[f"{exc}"], complete=False)
    return combine(projects, histories)
