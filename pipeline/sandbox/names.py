"""Package names and versions as a listing gives them, checked before any installer sees them.

A name or version comes from a stranger's registry entry. Passed to pip or npm it must not be read as an option
(`--index-url=...`), a path (`../x`, `/tmp/x.whl`), a URL or a git spec (`git+https://...`, `user/repo`), and it
becomes a directory name in the cache: so only the registries' own name rules pass, and the installers get it after
`--`.
"""

from __future__ import annotations

import re

# npm's rules for new packages (validate-npm-package-name): lowercase, URL-safe, at most 214 characters, no leading
# dot or underscore, an optional @scope/.
_NPM_NAME = re.compile(r"(?:@[a-z0-9-~][a-z0-9-._~]*/)?[a-z0-9-~][a-z0-9-._~]*")
# PEP 508 names.
_PYPI_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# A version as a registry resolves it (semver, PEP 440): it names a directory too.
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
# What a listing may ask for: an exact version, a dist-tag or a range; never a path, URL, git spec or alias (: / # @).
_NPM_REQUEST = re.compile(r"[0-9A-Za-z.^~<>=|*+ _-]{1,64}")
_PYPI_REQUEST = re.compile(r"[0-9A-Za-z.!+*_-]{1,64}")  # pinned with ==


class BadName(ValueError):
    """A package name or version no registry would publish; the message says which."""


def check_package(registry: str, name: str) -> str:
    pattern = _NPM_NAME if registry == "npm" else _PYPI_NAME
    if len(name) > 214 or not pattern.fullmatch(name):
        raise BadName(f"{name!r} is not a valid {registry} package name")
    return name


def check_request(registry: str, version: str | None) -> str | None:
    """The version a listing asks for (None: the newest)."""
    if version is None:
        return None
    pattern = _NPM_REQUEST if registry == "npm" else _PYPI_REQUEST
    if not pattern.fullmatch(version) or version.strip() != version or version.startswith("-"):
        raise BadName(f"{version!r} is not a version {registry} can be asked for")
    return version


def check_version(version: str) -> str:
    """A version a registry resolved: one path component, nothing more."""
    if not _VERSION.fullmatch(version) or ".." in version:
        raise BadName(f"{version!r} is not a resolved version")
    return version
