"""Entry points for the sandbox: how to install and start a server, from its manifests (package.json, pyproject.toml,
setup.cfg, setup.py, Cargo.toml, go.mod) and its README (entry_readme.py).

Manifests are parsed as data (json, tomllib, configparser, `ast` for setup.py): nothing of the server's is run.
"""

from __future__ import annotations

import ast
import configparser
import json
import re
import tomllib
from typing import Any, Iterator

from pipeline.analyze import pyast
from pipeline.analyze.entry_readme import readme_entry_points, safe_argv
from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.models import EntryPoint

MAX_ENTRIES = 20
MAX_MANIFEST = 200_000  # characters of a manifest parsed
NPM_NAME = re.compile(r"(?:@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,213}", re.I)
PYPI_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")
COMMAND = re.compile(r"[A-Za-z0-9@][A-Za-z0-9@._+-]{0,127}")  # a file name in a bin directory, never a path
_SCRIPT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._+-]{0,127})\s*=\s*([A-Za-z_][\w.]{0,200}(?::[A-Za-z_][\w.]{0,200})?)")
_GO_MODULE = re.compile(r"^module\s+(\S{1,300})\s*$", re.M)


def entry_points(tree: SourceTree, files: list[SourceFile]) -> list[EntryPoint]:
    """Every way to start the server its manifests and README state, manifests first; at most MAX_ENTRIES, no duplicates."""
    found: list[EntryPoint] = []
    seen: set[tuple] = set()
    for entry in _all(tree):
        key = (entry.registry, entry.package, entry.command, tuple(entry.args))
        if key in seen:
            continue
        seen.add(key)
        found.append(entry)
        if len(found) >= MAX_ENTRIES:
            break
    return found


def _all(tree: SourceTree) -> Iterator[EntryPoint]:
    package_json = tree.manifest if tree.manifest_kind == "package.json" else _json(_text(tree, "package.json"))
    if package_json:
        yield from npm_entries(package_json)
    if (text := _text(tree, "pyproject.toml")) is not None:
        yield from pyproject_entries(text)
    if (text := _text(tree, "setup.cfg")) is not None:
        yield from setup_cfg_entries(text)
    if tree.manifest_kind == "pypi-metadata":  # a wheel's or an install's metadata: its console scripts are in entry_points.txt
        name = tree.manifest.get("name")
        for path in [f for f in tree.files if f.endswith((".dist-info/entry_points.txt", ".egg-info/entry_points.txt"))][:2]:
            yield from console_scripts(tree.read(path) or "", name if isinstance(name, str) else None, "entry_points.txt")
    if (text := _text(tree, "setup.py")) is not None:
        yield from setup_py_entries(text)
    if (text := _text(tree, "Cargo.toml")) is not None:
        yield from cargo_entries(text, tree.files)
    if (text := _text(tree, "go.mod")) is not None:
        yield from go_entries(text, tree.files)
    yield from readme_entry_points(tree.readme)


def _text(tree: SourceTree, path: str) -> str | None:
    text = tree.manifests.get(path)
    if text is None and path in tree.files:
        text = tree.read(path)
    return text[:MAX_MANIFEST] if text is not None else None


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return document if isinstance(document, dict) else {}


def npm_entries(manifest: dict[str, Any]) -> Iterator[EntryPoint]:
    """package.json: each bin (a string names one after the package, a map names several), else `main` run by node.
    A private package is not published: no registry, no package to install."""
    name = manifest.get("name")
    name = name if isinstance(name, str) and NPM_NAME.fullmatch(name) else None
    published = name is not None and manifest.get("private") is not True
    registry, package = ("npm", name) if published else (None, None)
    bin_field = manifest.get("bin")
    bins: list[str] = []
    if isinstance(bin_field, str) and name:
        bins = [name.rsplit("/", 1)[-1]]
    elif isinstance(bin_field, dict):
        bins = [k for k in list(bin_field)[:MAX_ENTRIES] if isinstance(k, str) and COMMAND.fullmatch(k)]
    for command in bins:
        yield EntryPoint(registry=registry, package=package, command=command, source="package.json bin")
    main = manifest.get("main")
    if not bins and isinstance(main, str) and safe_argv([main]) and not main.startswith(("/", "..")):
        yield EntryPoint(registry=registry, package=package, command="node", args=[main], source="package.json main")
    mcp_name = manifest.get("mcpName")
    if not bins and not isinstance(main, str) and published and isinstance(mcp_name, str):
        yield EntryPoint(registry=registry, package=package, source="package.json mcpName")


def pyproject_entries(text: str) -> Iterator[EntryPoint]:
    """[project.scripts] under [project] name; [tool.poetry.scripts] under [tool.poetry] name."""
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        return
    project = document.get("project") if isinstance(document.get("project"), dict) else {}
    tool = document.get("tool") if isinstance(document.get("tool"), dict) else {}
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    for table, source in ((project, "pyproject scripts"), (poetry, "pyproject poetry scripts")):
        name = table.get("name")
        package = name if isinstance(name, str) and PYPI_NAME.fullmatch(name) else None
        scripts = table.get("scripts")
        for command in list(scripts)[:MAX_ENTRIES] if isinstance(scripts, dict) else []:
            if isinstance(command, str) and COMMAND.fullmatch(command):
                yield EntryPoint(registry="pypi" if package else None, package=package, command=command, source=source)


def setup_cfg_entries(text: str) -> Iterator[EntryPoint]:
    """setup.cfg: [options.entry_points] console_scripts under [metadata] name."""
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    name = parser.get("metadata", "name", fallback=None)
    package = name if name and PYPI_NAME.fullmatch(name) else None
    scripts = parser.get("options.entry_points", "console_scripts", fallback="")
    for line in scripts.splitlines()[:MAX_ENTRIES]:
        if match := _SCRIPT.fullmatch(line):
            yield EntryPoint(registry="pypi" if package else None, package=package, command=match.group(1), source="setup.cfg console_scripts")


def console_scripts(text: str, name: str | None, source: str) -> Iterator[EntryPoint]:
    """A distribution's entry_points.txt: each [console_scripts] name, under the distribution's name."""
    parser = configparser.RawConfigParser(strict=False, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign] - script names keep their case
    try:
        parser.read_string(text[:MAX_MANIFEST])
    except configparser.Error:
        return
    package = name if name and PYPI_NAME.fullmatch(name) else None
    for command in list(parser["console_scripts"])[:MAX_ENTRIES] if parser.has_section("console_scripts") else []:
        if COMMAND.fullmatch(command):
            yield EntryPoint(registry="pypi" if package else None, package=package, command=command, source=source)


def setup_py_entries(text: str) -> Iterator[EntryPoint]:
    """setup.py read with `ast`, never run: a setup(...) call's literal name= and entry_points={"console_scripts": [...]}."""
    try:
        module = pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and _called(node.func) == "setup"):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        name = _literal(keywords.get("name"))
        package = name if isinstance(name, str) and PYPI_NAME.fullmatch(name) else None
        entry = _literal(keywords.get("entry_points"))
        scripts = entry.get("console_scripts") if isinstance(entry, dict) else None
        for line in scripts[:MAX_ENTRIES] if isinstance(scripts, list) else []:
            if isinstance(line, str) and (match := _SCRIPT.fullmatch(line)):
                yield EntryPoint(registry="pypi" if package else None, package=package, command=match.group(1), source="setup.py console_scripts")
        return


def _called(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def cargo_entries(text: str, files: list[str]) -> Iterator[EntryPoint]:
    """Cargo.toml: each [[bin]] name, else the package's own binary when src/main.rs exists. Not a registry the sandbox installs from."""
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        return
    package = document.get("package") if isinstance(document.get("package"), dict) else {}
    name = package.get("name") if isinstance(package.get("name"), str) and COMMAND.fullmatch(package["name"]) else None
    bins = document.get("bin") if isinstance(document.get("bin"), list) else []
    commands = [b["name"] for b in bins[:MAX_ENTRIES] if isinstance(b, dict) and isinstance(b.get("name"), str) and COMMAND.fullmatch(b["name"])]
    if not commands and name and "src/main.rs" in files:
        commands = [name]
    for command in commands:
        yield EntryPoint(package=name, command=command, source="Cargo.toml bin")


def go_entries(text: str, files: list[str]) -> Iterator[EntryPoint]:
    """go.mod's module, and a command for each cmd/<name>/ with Go files (or the module itself when main.go is at its root)."""
    match = _GO_MODULE.search(text)
    if match is None:
        return
    module = match.group(1)
    commands = sorted({f.split("/")[1] for f in files if f.startswith("cmd/") and f.endswith(".go") and f.count("/") == 2})
    for command in commands[:MAX_ENTRIES]:
        if COMMAND.fullmatch(command):
            yield EntryPoint(package=f"{module}/cmd/{command}", command=command, source="go.mod cmd/")
    last = module.rsplit("/", 1)[-1]
    if not commands and "main.go" in files and COMMAND.fullmatch(last):
        yield EntryPoint(package=module, command=last, source="go.mod main.go")
