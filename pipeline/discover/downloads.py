"""Weekly download counts from the npm download-counts API and the PyPI Stats API (enrichment).

Package names come from the catalog's packages (registryType + identifier). The APIs' base URLs
are configuration (SCOREBOARD_NPM_DOWNLOADS_API, SCOREBOARD_PYPI_STATS_API); without them the
enrichment is skipped and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from pipeline.discover.base import number, snapshot_files
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.identity import pypi_name
from pipeline.progress import Progress

NAME = "npm-pypi-downloads"
NPM_BULK = 128  # the bulk endpoint takes up to 128 unscoped names; scoped ones go one by one


def parse_npm(payload: Any) -> dict[str, float]:
    """Weekly downloads by package from a point response or a bulk response (keyed by package)."""
    if not isinstance(payload, dict):
        return {}
    if "package" in payload and "downloads" in payload:
        found = _npm_point(payload)
        return {payload["package"]: found} if found is not None else {}
    return {name: found for name, point in payload.items() if isinstance(point, dict) and (found := _npm_point(point)) is not None}


def _npm_point(point: dict[str, Any]) -> float | None:
    downloads = point.get("downloads")
    if isinstance(downloads, list):  # a range response: sum the days
        return float(sum(number(d.get("downloads")) or 0 for d in downloads if isinstance(d, dict)))
    return number(downloads)


def parse_pypistats(payload: Any) -> dict[str, float]:
    """Last week's downloads from a `/recent` response."""
    if not isinstance(payload, dict) or payload.get("type") != "recent_downloads" or not isinstance(payload.get("data"), dict):
        return {}
    week = number(payload["data"].get("last_week"))
    return {pypi_name(str(payload.get("package"))): week} if week is not None else {}


def read_snapshot(directory: Path) -> tuple[dict[tuple[str, str], float], list[str]]:
    counts: dict[tuple[str, str], float] = {}
    problems: list[str] = []
    for path in snapshot_files(directory, "*.json"):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{path.name}: unreadable: {exc}")
            continue
        counts.update({("pypi", k): v for k, v in parse_pypistats(payload).items()})
        if not (isinstance(payload, dict) and payload.get("type")):
            counts.update({("npm", k): v for k, v in parse_npm(payload).items()})
    return counts, problems


class DownloadCounter:
    """Fetches weekly counts for packages; a failing package is a problem, never an abort."""

    def __init__(self, http: SourceHTTP, npm_api: str | None, pypi_api: str | None) -> None:
        self.http, self.npm_api, self.pypi_api = http, npm_api, pypi_api

    def weekly(self, packages: Iterable[tuple[str, str]], progress: Progress | None = None) -> tuple[dict[tuple[str, str], float], list[str]]:
        """The counts: one request per npm batch and per PyPI package (thousands a week, PyPI one package at a time), each a
        line of `progress` when given."""
        counts: dict[tuple[str, str], float] = {}
        problems: list[str] = []
        wanted = sorted(set(packages))
        npm = [name for registry, name in wanted if registry == "npm"]
        pypi = [name for registry, name in wanted if registry == "pypi"]
        requests: list[tuple[str, str, str, dict[str, str] | None]] = []  # (registry, what, url, params)
        if npm and self.npm_api:
            unscoped = [n for n in npm if not n.startswith("@")]
            batches = [",".join(unscoped[i:i + NPM_BULK]) for i in range(0, len(unscoped), NPM_BULK)] + [n for n in npm if n.startswith("@")]
            requests += [("npm", batch, f"{self.npm_api.rstrip('/')}/downloads/point/last-week/{batch}", None) for batch in batches]
        if pypi and self.pypi_api:
            requests += [("pypi", name, f"{self.pypi_api.rstrip('/')}/api/packages/{pypi_name(name)}/recent", {"period": "week"})
                         for name in pypi]
        steps = progress.sub("downloads", len(requests)) if progress is not None else None
        for registry, what, url, params in requests:
            try:
                payload, _ = self.http.get_json(url, params=params)
            except SourceError as exc:
                problems.append(f"{registry} {what[:80]}: {exc}")
                if steps is not None:
                    steps.step(f"{registry} {what[:80]}", f"failed: {exc}", ok=False)
                continue
            found = parse_npm(payload) if registry == "npm" else parse_pypistats(payload)
            counts.update({(registry, k): v for k, v in found.items()})
            if steps is not None:
                steps.step(f"{registry} {what[:80]}", f"{len(found)} counts")
        if (npm and not self.npm_api) or (pypi and not self.pypi_api):
            problems.append("download APIs not configured (SCOREBOARD_NPM_DOWNLOADS_API, SCOREBOARD_PYPI_STATS_API): some counts skipped")
        return counts, problems
