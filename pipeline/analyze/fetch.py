"""RepoFetchers: bring a server's source to analyse, behind one interface.

Here: the package installed from its registry and a local directory. The GitHub fetcher (API and tarball,
`github.py`) and the package-archive fetcher (npm tarball, PyPI sdist or wheel, `registries.py`) implement the
same Protocol; `sources.py` chooses among them per server.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path
from typing import Callable, Protocol

from pipeline.models import AnalysisResult, LaunchSpec, RepositoryFacts, Server
from pipeline.sandbox.install import installed_prefix

MAX_TEXT = 200_000  # bytes of any one text file read for analysis
MAX_CODE = 8_000_000  # bytes of one JavaScript file: a published bundle holds its dependencies and its tools in one dist file
CODE_SUFFIXES = (".js", ".mjs", ".cjs")
MAX_FILES = 5_000  # files listed from one source tree


@dataclass
class SourceTree:
    """What a fetcher brings back: the file list, the manifest and the documents that matter."""

    fetcher: str
    ref: str | None  # version or commit
    files: list[str] = field(default_factory=list)  # relative paths
    manifest: dict = field(default_factory=dict)  # package.json, or PyPI core metadata as a dict
    manifest_kind: str = ""  # "package.json" | "pypi-metadata"
    readme: str | None = None
    license_text: str | None = None
    dependencies: dict[str, str] = field(default_factory=dict)  # name -> version spec
    installed_versions: dict[str, str] = field(default_factory=dict)  # resolved versions of key deps
    # The text of one file of `files` (its first MAX_TEXT bytes), None when absent or unreadable. Archives are read
    # into memory, bounded, when fetched; directories lazily from disk.
    read: Callable[[str], str | None] = lambda path: None
    repository: RepositoryFacts | None = None  # what the host said (GitHub metadata, or a registry's release history)
    manifests: dict[str, str] = field(default_factory=dict)  # other manifests by path (pyproject.toml, go.mod, Cargo.toml), as text
    cut: set[str] = field(default_factory=set)  # files `read` gives only in part (over their cap); a lazy reader adds to it

    def __post_init__(self) -> None:
        # The one place a manifest's fields get their types: every reader after this may trust them.
        self.manifest = clean_manifest(self.manifest)
        self.readme = self.readme if isinstance(self.readme, str) else None
        self.license_text = self.license_text if isinstance(self.license_text, str) else None
        self.ref = self.ref if isinstance(self.ref, str) else None


TEXT_FIELDS = ("name", "version", "description", "summary", "license", "license-expression", "mcpName", "main", "homepage",
               "home-page", "type", "module", "types")
LIST_FIELDS = ("classifiers", "project_urls", "keywords", "files")
MAP_FIELDS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies", "scripts", "engines")


def clean_manifest(manifest: object) -> dict:
    """A manifest as untrusted JSON/TOML/metadata gives it, with the fields analysis reads kept only in their own types
    (a string where a string belongs, lists of strings, string maps); `license`/`repository` objects keep their string
    parts. Fields nobody reads are dropped."""
    if not isinstance(manifest, dict):
        return {}
    clean: dict = {key: manifest[key] for key in TEXT_FIELDS if isinstance(manifest.get(key), str)}
    for key in LIST_FIELDS:
        if isinstance(manifest.get(key), list):
            clean[key] = [item for item in manifest[key] if isinstance(item, str)]
    for key in MAP_FIELDS:
        if isinstance(manifest.get(key), dict):
            clean[key] = {str(k): v for k, v in manifest[key].items() if isinstance(v, str)}
    for key in ("repository", "license", "bin"):  # a string, or an object of strings ({"type": "git", "url": …})
        value = manifest.get(key)
        if isinstance(value, dict):
            clean[key] = {str(k): v for k, v in value.items() if isinstance(v, str)}
    if isinstance(manifest.get("private"), bool):
        clean["private"] = manifest["private"]
    if isinstance(manifest.get("repository"), str):
        clean["repository"] = manifest["repository"]
    if isinstance(manifest.get("bin"), str):
        clean["bin"] = manifest["bin"]
    return clean


@dataclass(frozen=True)
class SourceFile:
    """One source file chosen for analysis (`select.py`), its text cut at the seed's 25 KB."""

    path: str  # relative to the tree's root
    text: str
    language: str  # "python" | "typescript" | "javascript" | "go" | "rust"
    reason: str = ""  # why it was chosen: "entry point", "sdk import", "keyword", "fallback"
    first_line: int = 1  # the line of the file `text` starts on (a long compiled file is read where its tools are)


class FetchFailed(Exception):
    """The source could not be brought. `repository` carries what the host said when it said something (a 404)."""

    def __init__(self, message: str, repository: RepositoryFacts | None = None) -> None:
        super().__init__(message)
        self.repository = repository


class Unavailable(FetchFailed):
    """The host could not be asked this time (unreachable, rate limited, failing): transient, so a previous good
    analysis is kept and the server is tried again next run."""


class NotModified(Exception):
    """The source is unchanged since the previous analysis (ETag 304, same pushed_at or version): nothing to redo."""


class RepoFetcher(Protocol):
    name: str

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        """Bring the server's source; raise FetchFailed, or NotModified when `previous` is still current."""
        ...


class InstalledPackageFetcher:
    """Reads a local-catalog server's package where the installer put it."""

    name = "installed-package"

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = Path(cache_dir)

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        launch = server.launch
        if launch is None:
            raise FetchFailed("no installed package: this server is not started from a package")
        prefix = installed_prefix(self.cache_dir, launch.registry, launch.package, launch.version)
        if prefix is None:
            raise FetchFailed(f"{launch.requirement} is not installed in the cache (run the probe stage first)")
        if launch.registry == "npm":
            return self._npm(launch, prefix)
        return self._pypi(launch, prefix)

    def _npm(self, launch: LaunchSpec, prefix: Path) -> SourceTree:
        cut: set[str] = set()
        package = launch.package
        modules = prefix / "node_modules"
        root = modules / package
        manifest_path = root / "package.json"
        if not manifest_path.exists():
            raise FetchFailed(f"{package}: its package.json is missing from its install")
        manifest = json_object(_read(manifest_path))
        files = _list_files(root)
        deps = {str(k): str(v) for k, v in (manifest.get("dependencies") if isinstance(manifest.get("dependencies"), dict) else {}).items()}
        installed = {}
        for dep in ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server"):
            for candidate in (root / "node_modules" / dep / "package.json", modules / dep / "package.json"):
                if candidate.exists():
                    installed[dep] = str(json_object(_read(candidate)).get("version", ""))
                    break
        return SourceTree(
            fetcher=self.name,
            ref=manifest.get("version"),
            files=files,
            manifest=manifest,
            manifest_kind="package.json",
            readme=_first_text(root, files, ("README.md", "README", "readme.md")),
            license_text=_first_text(root, files, ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")),
            dependencies=deps,
            installed_versions=installed,
            read=reader(root, cut),
            cut=cut,
        )

    def _pypi(self, launch: LaunchSpec, prefix: Path) -> SourceTree:
        cut: set[str] = set()
        package = launch.package
        site = next(prefix.glob("venv/lib/python*/site-packages"), None)
        if site is None:
            raise FetchFailed(f"{package}: its install has no site-packages")
        normalized = package.replace("-", "_").lower()
        dist = next((d for d in site.glob("*.dist-info") if d.name.lower().startswith(normalized + "-")), None)
        if dist is None:
            raise FetchFailed(f"{package}: no installed distribution metadata found")
        message = Parser().parsestr(_read(dist / "METADATA") or "")
        manifest = {key.lower(): value for key, value in message.items() if key not in ("Classifier", "Requires-Dist", "Project-URL")}
        manifest["classifiers"] = message.get_all("Classifier") or []
        manifest["project_urls"] = message.get_all("Project-URL") or []
        requires = message.get_all("Requires-Dist") or []
        deps = dict(split_requirement(r) for r in requires)
        installed = {}
        for dist_info in site.glob("mcp-*.dist-info"):
            installed["mcp"] = dist_info.name[len("mcp-"): -len(".dist-info")]
        record = _read(dist / "RECORD") or ""
        files = sorted({line.split(",")[0] for line in record.splitlines() if line and not line.startswith("..")})[:MAX_FILES]
        return SourceTree(
            fetcher=self.name,
            ref=message.get("Version"),
            files=files,
            manifest=manifest,
            manifest_kind="pypi-metadata",
            readme=message.get_payload() or None,
            license_text=_first_text(dist, _list_files(dist), ("LICENSE", "LICENSE.txt", "LICENSE.md", "licenses/LICENSE")),
            dependencies=deps,
            installed_versions=installed,
            read=reader(site, cut),
            cut=cut,
        )


def split_requirement(requirement: str) -> tuple[str, str]:
    """'mcp[cli]>=2.3,<3; python_version>"3.9"' -> ('mcp', '>=2.3,<3'): the name and its version spec."""
    text = requirement.split(";")[0].strip()
    name = text.split("[")[0]
    for separator in ("<", ">", "=", "!", "~", " "):
        name = name.split(separator)[0]
    spec = text[len(name):].strip()
    if spec.startswith("["):
        spec = spec[spec.find("]") + 1:].strip()
    return name.strip().lower(), spec


def _read(path: Path, cap: int = MAX_TEXT) -> str | None:
    """The first `cap` bytes of a regular file; a FIFO, device or link swapped in is never opened for reading."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, cap).decode("utf-8", "replace") if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def json_object(text: str | None) -> dict:
    """A JSON object from untrusted text; anything else (not JSON, too deep, not an object) is an empty one."""
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def reader(root: Path, cut: set[str]) -> Callable[[str], str | None]:
    """Reads files of one tree by relative path; a path that leaves the tree (.., a symlink out) reads as absent. A file
    longer than its cap (MAX_CODE for JavaScript, MAX_TEXT for the rest) is read in part and added to `cut`."""
    base = root.resolve()

    def read(relative: str) -> str | None:
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        cap = MAX_CODE if relative.lower().endswith(CODE_SUFFIXES) else MAX_TEXT
        text = _read(path, cap)
        if text is not None and path.stat().st_size > cap:
            cut.add(relative)
        return text

    return read


def _list_files(root: Path, depth: int = 24) -> list[str]:
    """Regular files under `root`, breadth first and sorted, links not followed, at most `depth` levels and MAX_FILES files."""
    found: list[str] = []
    queue: list[tuple[Path, int]] = [(root, 0)]
    while queue:
        directory, level = queue.pop(0)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in ("node_modules", ".git", "__pycache__") and level + 1 < depth:
                    queue.append((Path(entry.path), level + 1))
            elif entry.is_file(follow_symlinks=False):
                found.append(str(Path(entry.path).relative_to(root)))
                if len(found) >= MAX_FILES:
                    return found
    return sorted(found)


def _first_text(root: Path, files: list[str], names: tuple[str, ...]) -> str | None:
    lowered = {f.lower(): f for f in files}
    for name in names:
        if name.lower() in lowered:
            return _read(root / lowered[name.lower()])
    return None
