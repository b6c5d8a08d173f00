"""Which command starts an installed package: npm's `bin`, a PyPI console script, or `python -m` a module.

The rule when a package offers several: the one named like the package (npm: without its scope), else the only one,
else the first in sorted order. The choice is recorded with the install. A launch that names its command (the
embedded catalog) keeps it.
"""

from __future__ import annotations

import configparser
import json
import re
from dataclasses import dataclass
from pathlib import Path

_COMMAND = re.compile(r"[A-Za-z0-9@][A-Za-z0-9@._+-]{0,127}")  # one file name in a bin directory, never a path
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INSTALL_SCRIPTS = ("preinstall", "install", "postinstall", "prepare")


@dataclass(frozen=True)
class Entry:
    executable: Path
    args: tuple[str, ...] = ()  # before the launch's own arguments
    name: str = ""  # the bin, console script or module chosen


class NoEntry(Exception):
    """Installed, but nothing to start: the message says what was looked for."""


class NeedsBuild(NoEntry):
    """npm: the bin's file is missing and the package has install scripts that may build it."""


def choose_entry(package: str, names: list[str]) -> str | None:
    if not names:
        return None
    own = _canonical(package.rsplit("/", 1)[-1])
    return next((n for n in names if _canonical(n) == own), None) or (names[0] if len(names) == 1 else sorted(names)[0])


def npm_entry(prefix: Path, package: str, command: str | None) -> Entry:
    """The bin of `package` installed under `prefix` (node_modules/.bin/NAME, pointing at a file that exists)."""
    root = prefix / "node_modules" / package
    try:
        manifest = json.loads((root / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise NoEntry(f"{package}: its package.json cannot be read ({exc})") from exc
    bins = _npm_bins(package, manifest.get("bin"))
    name = command or choose_entry(package, sorted(bins))
    if name is None or not _COMMAND.fullmatch(name):
        raise NoEntry(f"{package} declares no command (package.json has no usable bin)")
    if command and command not in bins:
        raise NoEntry(f"{package} installed no command named {command!r} (its bins: {', '.join(sorted(bins)) or 'none'})")
    target = root / bins[name]
    if not target.is_file() or not target.resolve().is_relative_to(root.resolve()):
        scripts = [s for s in INSTALL_SCRIPTS if s in (manifest.get("scripts") or {})]
        missing = f"{package}'s bin {name!r} points to {bins[name]!r}, which is not in the package"
        raise NeedsBuild(f"{missing} (install scripts: {', '.join(scripts)})") if scripts else NoEntry(missing)
    executable = prefix / "node_modules" / ".bin" / name
    if not executable.exists():
        raise NoEntry(f"{package}: npm linked no {name!r} into node_modules/.bin")
    return Entry(executable, (), name)


def pypi_entry(venv: Path, package: str, command: str | None) -> Entry:
    """A console script of the distribution `package` in `venv`, else `python -m` its module that has a __main__."""
    bin_dir = venv / "bin"
    if command:
        if not _COMMAND.fullmatch(command) or not (bin_dir / command).is_file():
            raise NoEntry(f"{package} installed no command named {command!r}")
        return Entry(bin_dir / command, (), command)
    dist = _dist_info(venv, package)
    scripts = _console_scripts(dist)
    name = choose_entry(package, [s for s in scripts if _COMMAND.fullmatch(s)])
    if name is not None and (bin_dir / name).is_file():
        return Entry(bin_dir / name, (), name)
    module = choose_entry(package.replace("-", "_"), _main_modules(dist))
    if module is not None:
        return Entry(bin_dir / "python", ("-m", module), module)
    raise NoEntry(f"{package} has no console script and no module with a __main__")


def _npm_bins(package: str, field: object) -> dict[str, str]:
    if isinstance(field, str):
        return {package.rsplit("/", 1)[-1]: field}
    if isinstance(field, dict):
        return {str(k): v for k, v in field.items() if isinstance(v, str) and _COMMAND.fullmatch(str(k))}
    return {}


def _dist_info(venv: Path, package: str) -> Path:
    wanted = _canonical(package)
    for site in venv.glob("lib/python*/site-packages"):
        for dist in site.glob("*.dist-info"):
            if _canonical(dist.name.removesuffix(".dist-info").rsplit("-", 1)[0]) == wanted:
                return dist
    raise NoEntry(f"{package}: no installed distribution metadata found")


def _console_scripts(dist: Path) -> list[str]:
    parser = configparser.RawConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # script names are case-sensitive
    try:
        parser.read_string((dist / "entry_points.txt").read_text())
    except (OSError, UnicodeDecodeError, configparser.Error):
        return []
    return sorted(parser.options("console_scripts")) if parser.has_section("console_scripts") else []


def _main_modules(dist: Path) -> list[str]:
    try:
        record = (dist / "RECORD").read_text()
    except (OSError, UnicodeDecodeError):
        return []
    found = set()
    for line in record.splitlines():
        parts = line.split(",")[0].split("/")
        if len(parts) == 2 and parts[1] == "__main__.py" and _MODULE.fullmatch(parts[0]):
            found.add(parts[0])
    return sorted(found)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
