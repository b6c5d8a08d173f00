"""A SourceTree from an archive's files held in memory: the manifest, README, LICENSE and other manifests read from
them, and `read` answering from the in-memory texts (nothing touches the disk)."""

from __future__ import annotations

import json
import tomllib
from email.parser import Parser
from typing import Literal

from pipeline.analyze.archive import Unpacked
from pipeline.analyze.fetch import SourceTree, split_requirement
from pipeline.models import RepositoryFacts

README_NAMES = ("readme.md", "readme.rst", "readme.txt", "readme", "readme.markdown")
LICENSE_NAMES = ("license", "license.md", "license.txt", "licence", "licence.md", "copying", "license-mit", "license.rst")
# Files at the top of a tree that say how it is built and published (kept whole in SourceTree.manifests).
MANIFEST_NAMES = (
    "package.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "PKG-INFO", "go.mod", "Cargo.toml",
    "deno.json", "smithery.yaml", "server.json", "Dockerfile", "manifest.json",
)
# What a monorepo's root contributes to a server in one of its folders: its documents, manifests and automation.
ROOT_DOCUMENTS = (
    "readme", "license", "licence", "copying", "changelog", "changes", "history", "contributing", "security", "code_of_conduct",
    "package.json", "pyproject.toml", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "uv.lock", "poetry.lock", "cargo.lock",
    "go.sum", "renovate.json", ".github/workflows/", ".github/dependabot.y", ".gitlab-ci.yml",
)


def limit_to_subpath(unpacked: Unpacked, subpath: str | None) -> Unpacked:
    """A monorepo server's folder as a tree of its own, with the repository root's documents and manifests where the
    folder has none of its own (the folder's own files win)."""
    if not subpath:
        return unpacked
    prefix = subpath.strip("/") + "/"
    files: dict[str, None] = {}
    texts: dict[str, str] = {}
    for path in unpacked.files:
        if path.startswith(prefix):
            files[path[len(prefix):]] = None
    for path, text in unpacked.texts.items():
        if path.startswith(prefix):
            texts[path[len(prefix):]] = text
    for path in unpacked.files:
        lowered = path.lower()
        root_level = "/" not in path or lowered.startswith(".github/")
        if root_level and lowered.startswith(ROOT_DOCUMENTS) and path not in files:
            files[path] = None
            if path in unpacked.texts:
                texts[path] = unpacked.texts[path]
    return Unpacked(files=sorted(files), texts=texts, skipped=unpacked.skipped, comment=unpacked.comment,
                    cut={p[len(prefix):] for p in unpacked.cut if p.startswith(prefix)})


def _first(unpacked: Unpacked, names: tuple[str, ...], folder: str = "") -> str | None:
    by_name = {p.lower(): p for p in unpacked.texts if p.startswith(folder) and "/" not in p[len(folder):]}
    for name in names:
        if folder + name in by_name:
            return unpacked.texts[by_name[folder + name]]
    return None


def build_tree(
    unpacked: Unpacked,
    fetcher: str,
    ref: str | None,
    repository: RepositoryFacts | None = None,
    prefer: Literal["npm", "pypi"] | None = None,
) -> SourceTree:
    """The tree the analysis reads. `prefer` says which manifest speaks for a package when both kinds are present."""
    texts = unpacked.texts
    manifest: dict = {}
    kind = ""
    deps: dict[str, str] = {}
    readme = _first(unpacked, README_NAMES)
    dist_info = next((p.rsplit("/", 1)[0] + "/" for p in texts if p.endswith(".dist-info/METADATA") and p.count("/") == 1), None)
    core = texts.get("PKG-INFO") or (texts.get(dist_info + "METADATA") if dist_info else None)
    package_json = _json(texts.get("package.json"))
    if package_json is not None and (prefer != "pypi" or core is None):
        manifest, kind = package_json, "package.json"
        deps = {str(k): str(v) for k, v in (_dict(manifest.get("dependencies"))).items()}
    elif core is not None:
        manifest, deps, payload = _core_metadata(core)
        kind = "pypi-metadata"
        if not deps and "pyproject.toml" in texts:
            deps = _pyproject(texts["pyproject.toml"])[1]
        readme = readme or payload
    elif "pyproject.toml" in texts:
        manifest, deps = _pyproject(texts["pyproject.toml"])
        kind = "pypi-metadata" if manifest else ""
    license_text = _first(unpacked, LICENSE_NAMES)
    if license_text is None and dist_info:
        license_text = _first(unpacked, LICENSE_NAMES, dist_info + "licenses/") or _first(unpacked, LICENSE_NAMES, dist_info)
    return SourceTree(
        fetcher=fetcher,
        ref=ref,
        files=list(unpacked.files),
        manifest=manifest,
        manifest_kind=kind,
        readme=readme,
        license_text=license_text,
        dependencies=deps,
        read=texts.get,
        repository=repository,
        manifests={name: texts[name] for name in MANIFEST_NAMES if name in texts},
        cut=set(unpacked.cut),
    )


def _json(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _core_metadata(text: str) -> tuple[dict, dict[str, str], str | None]:
    """PKG-INFO or a wheel's METADATA as InstalledPackageFetcher reads it: fields, dependencies, long description."""
    message = Parser().parsestr(text)
    manifest = {key.lower(): value for key, value in message.items() if key not in ("Classifier", "Requires-Dist", "Project-URL")}
    manifest["classifiers"] = message.get_all("Classifier") or []
    manifest["project_urls"] = message.get_all("Project-URL") or []
    deps = dict(split_requirement(r) for r in message.get_all("Requires-Dist") or [] if isinstance(r, str))
    payload = message.get_payload()
    return manifest, deps, payload if isinstance(payload, str) and payload.strip() else manifest.get("description")


def _pyproject(text: str) -> tuple[dict, dict[str, str]]:
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}, {}
    project = _dict(document.get("project"))
    if not project:
        return {}, {}
    license_field = project.get("license")
    urls = _dict(project.get("urls"))
    manifest = {
        "name": project.get("name"),
        "version": project.get("version"),
        "summary": project.get("description"),
        "license": license_field.get("text") if isinstance(license_field, dict) else license_field,
        "classifiers": [c for c in project.get("classifiers") if isinstance(c, str)] if isinstance(project.get("classifiers"), list) else [],
        "project_urls": [f"{k}, {v}" for k, v in urls.items()],
    }
    dependencies = project.get("dependencies")
    return manifest, dict(split_requirement(r) for r in dependencies if isinstance(r, str)) if isinstance(dependencies, list) else {}
