"""Seed 000's repository sub-metrics, computed purely from a fetched SourceTree.

Each metric returns its 0–100 value with the signals behind it, or None when the tree cannot
show it (a published package carries no commit history, releases or CI files): "not measured"
is not zero.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.analyze import licenses
from pipeline.analyze.fetch import SourceTree

ACTION_WORDS = re.compile(
    r"\b(provides?|enables?|allows?|lets?|gets?|fetch(es)?|reads?|writes?|search(es)?|lists?|creates?|manages?|"
    r"converts?|queries|query|retrieves?|exposes?|gives?|connects?|stores?|runs?)\b",
    re.I,
)
USAGE_HEADING = re.compile(r"^#+\s*(usage|installation|install|configuration|getting started|quick ?start|setup)\b", re.I | re.M)


def _has(files: list[str], *names: str) -> bool:
    lowered = [f.lower() for f in files]
    return any(f == n or f.startswith(n) or f.split("/")[-1].startswith(n) for f in lowered for n in names)


def _has_dir(files: list[str], name: str) -> bool:
    return any(f.lower().startswith(name + "/") or f"/{name}/" in f.lower() for f in files)


def documentation_coverage(tree: SourceTree) -> dict[str, Any]:
    """README +25, CHANGELOG +15, examples/ +15, CONTRIBUTING +10, LICENSE +10, docs/ +7,
    SECURITY +3, CODE_OF_CONDUCT +3, namespace match +7, installable package +5 (seed 000)."""
    signals = {
        "readme": (bool(tree.readme and tree.readme.strip()), 25),
        "changelog": (_has(tree.files, "changelog", "changes", "history.md"), 15),
        "examples": (_has_dir(tree.files, "examples") or _has_dir(tree.files, "example"), 15),
        "contributing": (_has(tree.files, "contributing"), 10),
        "license_file": (bool(tree.license_text) or _has(tree.files, "license", "copying"), 10),
        "docs_dir": (_has_dir(tree.files, "docs"), 7),
        "security": (_has(tree.files, "security.md"), 3),
        "code_of_conduct": (_has(tree.files, "code_of_conduct"), 3),
        "namespace_match": (_namespace_match(tree), 7),
        "installable": (tree.manifest_kind in ("package.json", "pypi-metadata"), 5),
    }
    return {
        "value": min(100, sum(points for present, points in signals.values() if present)),
        "signals": {name: present for name, (present, _) in signals.items()},
    }


def _namespace_match(tree: SourceTree) -> bool:
    """The published name claims the namespace its repository lives in (mcpName / mcp-name)."""
    declared = tree.manifest.get("mcpName") or _mcp_name_in_readme(tree.readme)
    repo = _repository_url(tree) or ""
    match = re.match(r"io\.github\.([^/]+)/", declared or "")
    return bool(match and f"github.com/{match.group(1).lower()}/" in repo.lower())


def _mcp_name_in_readme(readme: str | None) -> str | None:
    match = re.search(r"mcp-name:\s*([\w.\-/]+)", readme or "")
    return match.group(1) if match else None


def _repository_url(tree: SourceTree) -> str | None:
    repo = tree.manifest.get("repository")
    if isinstance(repo, dict):
        return repo.get("url")
    if isinstance(repo, str):
        return repo
    for entry in tree.manifest.get("project_urls", []):
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("repository", "source", "source code", "homepage"):
            return url.strip()
    return None


def description_quality(description: str | None, readme: str | None) -> dict[str, Any]:
    """Seed 000: repo description length and action words; README length, headings, code, usage.

    Split 40 (description) / 60 (README); the seed names the signals, not their points (deviation 4).
    """
    text = (description or "").strip()
    body = readme or ""
    desc_points = 0
    if len(text) >= 20:
        desc_points += 15
    if len(text) >= 60:
        desc_points += 10
    if ACTION_WORDS.search(text):
        desc_points += 15
    headings = len(re.findall(r"^#{1,6}\s+\S", body, re.M))
    code_blocks = body.count("```") // 2
    readme_points = 0
    readme_points += 20 if len(body) >= 1500 else 10 if len(body) >= 300 else 0
    readme_points += 15 if headings >= 3 else 5 if headings >= 1 else 0
    readme_points += 15 if code_blocks >= 1 else 0
    readme_points += 10 if USAGE_HEADING.search(body) else 0
    return {
        "value": desc_points + readme_points,
        "signals": {
            "description_chars": len(text),
            "action_word": bool(ACTION_WORDS.search(text)),
            "readme_chars": len(body),
            "headings": headings,
            "code_blocks": code_blocks,
            "usage_section": bool(USAGE_HEADING.search(body)),
        },
    }


def license_clarity(tree: SourceTree) -> dict[str, Any]:
    """Known SPDX license 100; identified but non-standard 70; custom 40; none 0 (seed 000; pipeline/analyze/licenses.py)."""
    declared = tree.manifest.get("license-expression") or tree.manifest.get("license")
    host = tree.repository.license if tree.repository else None
    return licenses.license_clarity(declared, tree.manifest.get("classifiers", []), tree.license_text, host)


def dependency_health(tree: SourceTree) -> dict[str, Any]:
    """Manifest +30, lock file +25, CI/CD +20, Renovate/Dependabot +25 (seed 000).

    A published package shows only its manifest; lock file, CI and automation live in the
    repository, so from a package this metric is measured on the manifest alone and says so.
    """
    signals = {
        "manifest": bool(tree.manifest_kind),
        "lock_file": _has(tree.files, "package-lock.json", "uv.lock", "poetry.lock", "pnpm-lock.yaml", "yarn.lock"),
        "ci": _has_dir(tree.files, ".github/workflows") or _has(tree.files, ".gitlab-ci.yml"),
        "automation": _has(tree.files, ".github/dependabot.yml", "renovate.json"),
    }
    points = {"manifest": 30, "lock_file": 25, "ci": 20, "automation": 25}
    return {
        "value": sum(points[k] for k, present in signals.items() if present),
        "signals": signals,
        "scope": "package" if tree.fetcher in ("installed-package", "npm-archive", "pypi-archive") else "repository",
    }


def analyze_tree(tree: SourceTree, description: str | None) -> dict[str, Any]:
    """The sub-metrics the tree's files and manifest show (maintenance and version hygiene come from its host's history;
    the spec version from its SDK and source, `spec.py`)."""
    return {
        "documentation_coverage": documentation_coverage(tree),
        "description_quality": description_quality(description, tree.readme),
        "license_clarity": license_clarity(tree),
        "dependency_health": dependency_health(tree),
    }
