"""Which MCP SDK a tree depends on, read from its manifests and lock files as text (never installed, never run).

Every official SDK is known (Python, TypeScript v1 and the v2 split packages, Go, Rust, Java, Kotlin, C#), plus the
popular community ones the catalog leans on (FastMCP on PyPI and npm, mark3labs' mcp-go). A dependency names its
declared spec; a lock file or the installed package gives the version actually resolved.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Iterator

from pipeline.analyze.fetch import SourceTree, split_requirement

# (ecosystem, package name) -> SDK key
SDKS = {
    ("pypi", "mcp"): "python",
    ("pypi", "fastmcp"): "fastmcp",
    ("npm", "@modelcontextprotocol/sdk"): "typescript",
    ("npm", "@modelcontextprotocol/server"): "typescript-v2",
    ("npm", "@modelcontextprotocol/client"): "typescript-v2",
    ("npm", "fastmcp"): "fastmcp-ts",
    ("go", "github.com/modelcontextprotocol/go-sdk"): "go",
    ("go", "github.com/mark3labs/mcp-go"): "mcp-go",
    ("cargo", "rmcp"): "rust",
    ("maven", "io.modelcontextprotocol.sdk"): "java",
    ("maven", "io.modelcontextprotocol"): "kotlin",
    ("nuget", "ModelContextProtocol"): "csharp",
}
PYPI_NAMES = {name for (eco, name) in SDKS if eco == "pypi"}
NPM_NAMES = {name for (eco, name) in SDKS if eco == "npm"}
MANIFEST_NAMES = ("package.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements", "go.mod", "Cargo.toml", "pom.xml",
                  "build.gradle", "build.gradle.kts", ".csproj")
LOCK_NAMES = ("package-lock.json", "pnpm-lock.yaml", "yarn.lock", "uv.lock", "poetry.lock", "Cargo.lock")
MAX_MANIFESTS = 40  # manifests read per tree (a monorepo has one per package)
MAX_DEPTH = 3  # directories below the root where a manifest still counts

_REQUIREMENT_NAME = re.compile(r"(mcp|fastmcp) {0,4}(?:[\[<>=!~;]|$)", re.I)
_SETUP_PY = re.compile(r"""["'](mcp|fastmcp) {0,4}(?:\[[\w, -]{0,60}\])? {0,4}([<>=!~][^"'\n]{0,60})?["']""", re.I)
_GO_MOD = re.compile(r"(github\.com/modelcontextprotocol/go-sdk|github\.com/mark3labs/mcp-go)\s+(v[\w.+-]{1,40})")
_MAVEN = re.compile(r"<groupId>\s*(io\.modelcontextprotocol(?:\.sdk)?)\s*</groupId>\s*<artifactId>\s*([\w.-]{1,60})\s*</artifactId>"
                    r"(?:\s*<version>\s*([^<\s]{1,40})\s*</version>)?")
_GRADLE = re.compile(r"""["'](io\.modelcontextprotocol(?:\.sdk)?):([\w.-]{1,60})(?::([\w.+-]{1,40}))?["']""")
_NUGET = re.compile(r"""<PackageReference\s+Include="(ModelContextProtocol)(?:\.[\w.]{1,40})?"\s+Version="([^"]{1,40})\"""")
_NPM_LOCK = re.compile(r'"node_modules/(@modelcontextprotocol/(?:sdk|server|client)|fastmcp)"\s*:\s*\{\s*"version"\s*:\s*"([^"]{1,40})"')
_PNPM_LOCK = re.compile(r"(@modelcontextprotocol/(?:sdk|server|client))[@/](\d{1,4}\.\d{1,4}\.\d{1,4}[\w.+-]{0,30})")
_YARN_LOCK = re.compile(r'^"?(@modelcontextprotocol/(?:sdk|server|client))@[^\n]{0,200}\n\s{1,8}version:?\s+"?(\d[\w.+-]{0,40})', re.M)
_TOML_LOCK = re.compile(r'\[\[package\]\]\s*name\s*=\s*"(mcp|fastmcp|rmcp)"\s*version\s*=\s*"([^"]{1,40})"')


@dataclass(frozen=True)
class SdkDependency:
    sdk: str  # key of SDKS' values: "python", "typescript", "typescript-v2", "go", "mcp-go", "rust", ...
    package: str
    spec: str  # the declared version spec ("" when none)
    resolved: str | None  # the version a lock file or the installed package resolved
    manifest: str  # where it was declared


def sdk_dependencies(tree: SourceTree) -> list[SdkDependency]:
    """The MCP SDKs the tree declares, in a stable order, each with its resolved version when one is known."""
    found: dict[tuple[str, str], tuple[str, str]] = {}  # (sdk, package) -> (spec, manifest)
    ecosystem = "npm" if tree.manifest_kind == "package.json" else "pypi"
    for name, spec in tree.dependencies.items():
        sdk = SDKS.get((ecosystem, name)) or SDKS.get(("npm" if name.startswith("@") else ecosystem, name))
        if sdk:
            found.setdefault((sdk, name), (spec or "", "manifest"))
    resolved: dict[str, str] = {name: version for name, version in tree.installed_versions.items() if version}
    for path, text in manifest_texts(tree, set(MANIFEST_NAMES) | set(LOCK_NAMES)):
        base = path.rsplit("/", 1)[-1]
        if base in LOCK_NAMES:
            for name, version in _lock_versions(base, text):
                resolved.setdefault(name, version)
            continue
        for sdk, name, spec in _declared(base, text):
            found.setdefault((sdk, name), (spec, path))
    return [SdkDependency(sdk, name, spec, resolved.get(name) or (spec if sdk in ("go", "mcp-go") else None), manifest)
            for (sdk, name), (spec, manifest) in sorted(found.items())]


def manifest_texts(tree: SourceTree, names: set[str]) -> Iterator[tuple[str, str]]:
    """(path, text) of the tree's manifests named in `names` (requirements files and .csproj too when asked for them),
    shallowest first, at most MAX_MANIFESTS, never from node_modules."""
    def wanted(path: str) -> bool:
        base = _base(path)
        return (base in names or ("requirements" in names and _is_requirements(path)) or (".csproj" in names and base.endswith(".csproj")))

    paths = {f for f in tree.files if f.count("/") <= MAX_DEPTH and wanted(f) and "node_modules/" not in f}
    paths = sorted(paths | {p for p in tree.manifests if wanted(p)}, key=lambda p: (p.count("/"), p))[:MAX_MANIFESTS]
    for path in paths:
        text = tree.manifests.get(path) if path in tree.manifests else tree.read(path)
        if text:
            yield path, text


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _is_requirements(path: str) -> bool:
    base = _base(path)
    return base.startswith("requirements") and base.endswith((".txt", ".in"))


def _declared(base: str, text: str) -> Iterator[tuple[str, str, str]]:
    """(sdk, package, spec) for each SDK a manifest declares; a manifest that does not parse declares nothing."""
    if base == "package.json":
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            return
        if not isinstance(document, dict):
            return
        for section in ("dependencies", "peerDependencies", "optionalDependencies", "devDependencies"):
            deps = document.get(section)
            for name in NPM_NAMES & set(deps if isinstance(deps, dict) else ()):
                yield SDKS[("npm", name)], name, str(deps[name])
    elif base == "pyproject.toml":
        yield from _pyproject(text)
    elif base == "setup.py":
        for match in _SETUP_PY.finditer(text):
            yield SDKS[("pypi", match.group(1).lower())], match.group(1).lower(), (match.group(2) or "").strip()
    elif base == "setup.cfg" or base.startswith("requirements"):
        for line in text.splitlines()[:2000]:
            line = line.strip()
            if _REQUIREMENT_NAME.match(line):
                name, spec = split_requirement(line)
                if name in PYPI_NAMES:
                    yield SDKS[("pypi", name)], name, spec
    elif base == "go.mod":
        for match in _GO_MOD.finditer(text):
            yield SDKS[("go", match.group(1))], match.group(1), match.group(2)
    elif base == "Cargo.toml":
        yield from _cargo(text)
    elif base == "pom.xml" or base.startswith("build.gradle"):
        for match in (_MAVEN if base == "pom.xml" else _GRADLE).finditer(text):
            group, artifact, version = match.groups()
            if group == "io.modelcontextprotocol.sdk" or artifact.startswith("kotlin-sdk"):
                yield SDKS[("maven", group)], f"{group}:{artifact}", version or ""
    elif base.endswith(".csproj"):
        for match in _NUGET.finditer(text):
            yield "csharp", match.group(1), match.group(2)


def _toml(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError):
        return {}


def _pyproject(text: str) -> Iterator[tuple[str, str, str]]:
    document = _toml(text)
    project = _mapping(document.get("project"))
    requirements = _sequence(project.get("dependencies"))
    for extra in _mapping(project.get("optional-dependencies")).values():
        requirements += _sequence(extra)
    for requirement in requirements:
        if isinstance(requirement, str):
            name, spec = split_requirement(requirement)
            if name in PYPI_NAMES:
                yield SDKS[("pypi", name)], name, spec
    poetry = _mapping(_mapping(_mapping(document.get("tool")).get("poetry")).get("dependencies"))
    for name, value in poetry.items():
        if name.lower() in PYPI_NAMES:
            spec = value.get("version", "") if isinstance(value, dict) else str(value)
            yield SDKS[("pypi", name.lower())], name.lower(), str(spec)


def _mapping(value: object) -> dict:
    """A TOML table where one belongs; an untrusted file may put any type anywhere."""
    return value if isinstance(value, dict) else {}


def _sequence(value: object) -> list:
    return list(value) if isinstance(value, list) else []


def _cargo(text: str) -> Iterator[tuple[str, str, str]]:
    document = _toml(text)
    for table in (document, _mapping(document.get("workspace"))):
        for section in ("dependencies", "dev-dependencies"):
            deps = table.get(section) if isinstance(table, dict) else None
            value = deps.get("rmcp") if isinstance(deps, dict) else None
            if value is not None:
                yield "rust", "rmcp", str(value.get("version", "")) if isinstance(value, dict) else str(value)


def _lock_versions(base: str, text: str) -> Iterator[tuple[str, str]]:
    pattern = {"package-lock.json": _NPM_LOCK, "pnpm-lock.yaml": _PNPM_LOCK, "yarn.lock": _YARN_LOCK}.get(base, _TOML_LOCK)
    for match in pattern.finditer(text):
        yield match.group(1), match.group(2)
