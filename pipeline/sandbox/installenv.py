"""The environment an installer runs with: registry access and nothing else.

pip and npm get PATH (system directories and node's), a throw-away HOME, LANG and the settings that say where the
registries are and which certificates to trust. No token, API key or other variable of the pipeline reaches them.

HOME is a throw-away directory, so the user's own pip.conf and .npmrc are not read where they are: the registry and
certificate keys in them (and in the system-wide pip.conf) are read here and handed over as the installers'
environment variables instead (a value already in the environment wins, as it would for the installer); npm's global
npmrc it reads itself. Given `Registries` (tests' fake registries), no host configuration is read at all.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import urlsplit

from pipeline.sandbox import Mount

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/etc")  # what every backend shows read-only anyway

# Variables passed through as they are: where the registries are, how to reach them, which certificates to trust.
PASSED = (
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CERT", "PIP_TRUSTED_HOST", "PIP_NO_INDEX", "PIP_DEFAULT_TIMEOUT",
    "npm_config_registry", "npm_config_cafile", "npm_config_strict_ssl",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
)
SYSTEM_PIP_CONFIG = (Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf"))
_PIP_KEYS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "find-links": "PIP_FIND_LINKS",
             "cert": "PIP_CERT", "trusted-host": "PIP_TRUSTED_HOST"}
_NPM_KEYS = {"registry": "npm_config_registry", "cafile": "npm_config_cafile", "strict-ssl": "npm_config_strict_ssl"}
# Paths in these may lie outside the system directories: a sandboxed build is shown them read-only (an index may be a
# local directory too, named by a file: URL).
_PATH_VALUES = ("PIP_CERT", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "npm_config_cafile", "SSL_CERT_FILE", "SSL_CERT_DIR",
                "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


@dataclass(frozen=True)
class Registries:
    """The registries to use, given explicitly: then these and only these (no host configuration)."""

    pypi_index: str | None = None  # a PEP 503 simple index
    npm_registry: str | None = None


def installer_environment(home: Path, environ: Mapping[str, str], registries: Registries | None) -> dict[str, str]:
    node = shutil.which("node", path=environ.get("PATH"))
    path = [str(Path(node).parent)] if node else []
    env = {"PATH": os.pathsep.join(dict.fromkeys([*path, *SYSTEM_PATH])), "HOME": str(home), "LANG": "C.UTF-8"}
    if registries is not None:
        # pip loads no configuration file when its file is os.devnull; npm's user file is in the throw-away HOME, and
        # its global file is pointed there too (at nothing).
        env.update({"PIP_CONFIG_FILE": os.devnull, "npm_config_globalconfig": str(home / "no-global-npmrc")})
        if registries.pypi_index:
            env["PIP_INDEX_URL"] = registries.pypi_index
        if registries.npm_registry:
            env["npm_config_registry"] = registries.npm_registry
        return env
    user_home = Path(environ.get("HOME") or Path.home())
    env.update(_pip_settings(user_home, environ))
    env.update(_npm_settings(user_home, environ))
    env.update({name: environ[name] for name in PASSED if environ.get(name)})
    return env


def registry_endpoints(urls: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """The (host, port) pairs of registry URLs (space-separated lists too); local paths (find-links) need no network."""
    found: dict[tuple[str, int], None] = {}
    for url in (value for text in urls for value in text.split()):
        parts = urlsplit(url)
        try:
            if parts.scheme in ("http", "https") and parts.hostname:
                found[(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))] = None
        except ValueError:  # a port that is not one
            continue
    return tuple(found)


def readable_mounts(env: Mapping[str, str]) -> tuple[Mount, ...]:
    """Certificate files and local wheel directories named in `env` that lie outside the system directories."""
    mounts: dict[str, Mount] = {}
    for name in _PATH_VALUES:
        for value in env.get(name, "").split():
            value = value.removeprefix("file://")
            if value.startswith("/") and not value.startswith(SYSTEM_DIRS) and Path(value).exists():
                mounts[value] = Mount(Path(value), value)
    return tuple(mounts.values())


def _pip_settings(home: Path, environ: Mapping[str, str]) -> dict[str, str]:
    config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    # The system-wide files too, though pip reads them itself on the host: a sandboxed build does not see /etc/pip.conf.
    files = [*SYSTEM_PIP_CONFIG, home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"]
    if environ.get("PIP_CONFIG_FILE") and environ["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    parser = configparser.RawConfigParser()
    try:
        parser.read([str(f) for f in files if f.is_file()])
    except configparser.Error:
        return {}
    found: dict[str, str] = {}
    for section in ("global", "download", "install"):  # later sections win, as they do in pip for these commands
        if parser.has_section(section):
            for key, variable in _PIP_KEYS.items():
                if parser.has_option(section, key):
                    found[variable] = " ".join(parser.get(section, key).split())
    return found


def _npm_settings(home: Path, environ: Mapping[str, str]) -> dict[str, str]:
    npmrc = Path(environ.get("npm_config_userconfig") or home / ".npmrc")
    try:
        lines = npmrc.read_text().splitlines() if npmrc.is_file() else []
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key in _NPM_KEYS and value and "${" not in value:  # ${VAR} would need the host environment
            found[_NPM_KEYS[key]] = value
    return found


@dataclass(frozen=True)
class PackageRegistries:
    """Where this host's npm and pip get packages, as their own configuration says: the analyze stage reads package
    archives from the registries the installer uses. None where the tool is absent or says nothing usable."""

    npm: str | None  # npm's registry URL (packuments and tarballs)
    pypi: str | None  # the base of the PyPI JSON API: pip's index URL without its /simple
    pypi_files: tuple[str, ...] = ()  # other hosts the PyPI index keeps its files on (pip knows PyPI's own)


def package_registries(environ: Mapping[str, str]) -> PackageRegistries:
    """npm's configured registry (its environment, .npmrc, else `npm config get registry`) and pip's index (its
    environment and pip.conf, else pip's own default index)."""
    env = installer_environment(Path(os.devnull), environ, None)
    npm = env.get("npm_config_registry") or _npm_default(environ)
    index = (env.get("PIP_INDEX_URL") or "").split()
    pypi, files = (index[0], ()) if index else _pip_default()
    base = pypi.rstrip("/").removesuffix("/simple") if pypi else None
    return PackageRegistries(npm=npm if npm and npm.startswith(("https://", "http://")) else None,
                             pypi=base if base and base.startswith(("https://", "http://")) else None, pypi_files=files)


def _npm_default(environ: Mapping[str, str]) -> str | None:
    npm = shutil.which("npm", path=environ.get("PATH"))
    if npm is None:
        return None
    try:
        answer = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True, timeout=30, env=dict(environ))
    except (OSError, subprocess.SubprocessError):
        return None
    return answer.stdout.strip() or None if answer.returncode == 0 else None


def _pip_default() -> tuple[str | None, tuple[str, ...]]:
    """pip's default index and the host it stores files on, from pip itself (so no registry is named here)."""
    try:
        from pip._internal.models.index import PyPI
    except ImportError:
        return None, ()
    return getattr(PyPI, "simple_url", None), tuple(h for h in [getattr(PyPI, "file_storage_domain", None)] if h)
