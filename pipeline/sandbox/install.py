"""Install local servers from their package registries: their own step, with the network but without secrets.

Each package is resolved once per run to an exact version (npm: `npm view`; PyPI: the wheel, else the sdist, pip
downloads), recorded with its artifact's hash (npm's sha512 integrity, the file's sha256), and installed exactly into
its own prefix, `installs/<registry>/<package>/<version>` under the cache, which a marker file (`installed.json`)
completes. A prefix with its marker is a cache hit: nothing runs, nothing is asked of a registry when the version was
pinned. Installers run with a minimal environment (installenv), names are checked and passed after `--` (names), every
install is bounded in time and disk (steps), and no package code runs on the host: npm with `--ignore-scripts`, pip
with wheels; what needs a build (npm install scripts, sdists) runs inside the sandbox backend given, or not at all.
Installers run under a guardian (pipeline.lifetime), so an install and whatever it started end with the pipeline.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Literal, Mapping, Sequence

from pipeline.config import Settings
from pipeline.identity import package_folder
from pipeline.models import LaunchSpec
from pipeline.progress import Progress
from pipeline.sandbox import Backend, FailureKind, SandboxUnavailable, npm, pypi
from pipeline.sandbox.choice import choose
from pipeline.sandbox.entrypoints import NeedsBuild, NoEntry, npm_entry, pypi_entry
from pipeline.sandbox.installenv import Registries, installer_environment
from pipeline.sandbox.names import BadName, check_package, check_request, check_version
from pipeline.sandbox.steps import Bounds, StepFailed, over_cap

InstallMethod = Literal["wheel", "sdist-in-sandbox", "no-deps", "npm", "npm-with-scripts"]
INSTALLS = "installs"  # under the cache directory
MARKER = "installed.json"


@dataclass(frozen=True)
class Installed:
    ok: bool
    executable: Path | None = None
    version: str | None = None  # the version resolved once and installed exactly
    path_dirs: tuple[str, ...] = ()  # PATH entries the server needs (its venv, node)
    error: str | None = None
    prefix: Path | None = None  # the install's own directory, shown read-only inside the sandbox
    entry_args: tuple[str, ...] = ()  # before the launch's arguments: ("-m", module) for `python -m`
    command: str | None = None  # the bin, console script or module chosen
    artifact_hash: str | None = None  # npm's "sha512-..." integrity, or "sha256:<hex>" of the PyPI file
    method: InstallMethod | None = None
    fallback: str | None = None  # why the first way failed, when a fallback (sandboxed build, no-deps) installed it
    failure: FailureKind | None = None  # "install_failed" | "no_entry_point" when not ok
    cached: bool = False  # found finished in the cache: nothing was installed for it this time


def install_prefix(cache_dir: Path, registry: str, package: str, version: str) -> Path:
    return Path(cache_dir) / INSTALLS / registry / package_folder(package) / version


def installed_prefix(cache_dir: Path, registry: str, package: str, version: str | None = None) -> Path | None:
    """The prefix of a finished install of `package`: that version, else the one installed last."""
    if version is not None:
        prefix = install_prefix(cache_dir, registry, package, version)
        return prefix if (prefix / MARKER).is_file() else None
    markers = list((Path(cache_dir) / INSTALLS / registry / package_folder(package)).glob(f"*/{MARKER}"))
    return max(markers, key=lambda m: m.stat().st_mtime).parent if markers else None


def install_key(spec: LaunchSpec) -> str:
    return f"{spec.registry}:{spec.requirement}:{spec.command}"


Package = tuple[str, str, str | None]  # (registry, package, the version asked for, None for the newest)


def packages_of(specs: Sequence[LaunchSpec]) -> list[Package]:
    """The distinct packages of some launches (a package may be launched several ways), in a stable order."""
    return sorted({(s.registry, s.package, s.version) for s in specs}, key=str)


@dataclass(frozen=True)
class InstallTally:
    """What an install did, package by package: how many were already in the cache, installed now, or failed."""

    already: int = 0
    installed: int = 0
    failed: int = 0

    @property
    def packages(self) -> int:
        return self.already + self.installed + self.failed

    def describe(self) -> str:
        return f"{self.already} already installed, {self.installed} installed, {self.failed} failed"


def tally(specs: Sequence[LaunchSpec], results: Mapping[str, Installed]) -> InstallTally:
    """Count the packages of `specs` by what their install did (a launch whose package installed but which names no
    command is the launch's failure, not the package's: its package counts as installed or already there)."""
    first = {(s.registry, s.package, s.version): results.get(install_key(s)) for s in reversed(specs)}
    states = [_state(result) for result in first.values()]
    return InstallTally(already=states.count("already installed"), installed=states.count("installed"), failed=states.count("failed"))


def _state(result: Installed | None) -> str:
    if result is None or not (result.ok or result.failure == "no_entry_point"):
        return "failed"
    return "already installed" if result.cached else "installed"


class Installer:
    """Installs every distinct package of a batch, a few at a time; each result keyed by `install_key`."""

    def __init__(self, cache_dir: Path, timeout: float = 600.0, *, disk_mb: int = 2048, workers: int = 3,
                 registries: Registries | None = None, backend: Backend | None = None, sandbox: str | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.cache_dir = Path(cache_dir)
        self.timeout = timeout
        self.disk_bytes = disk_mb * 1_000_000
        self.workers = workers
        self.registries = registries
        self.backend = backend  # runs what needs a build; None: such packages fail with that reason
        self.sandbox = sandbox  # else the backend to choose (settings.sandbox) the first time a build is needed
        self.no_sandbox = "no sandbox backend was given"
        self.environ = dict(os.environ if environ is None else environ)
        self._resolved: dict[tuple[str, str, str | None], tuple[str, str | None]] = {}  # an unpinned spec, resolved once per run
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> "Installer":
        """The pipeline's installer: builds run in the sandbox backend the settings choose, chosen when first needed (none
        where none can run here, and then a package that needs a build fails with that reason)."""
        return cls(settings.cache_dir, settings.install_timeout, sandbox=settings.sandbox)

    def builder(self) -> Backend | None:
        """The backend builds run in (chosen once); None where there is none, `no_sandbox` saying why."""
        with self._lock:
            if self.backend is None and self.sandbox is not None:
                try:
                    self.backend = choose(self.sandbox)
                except SandboxUnavailable as exc:
                    self.no_sandbox = str(exc)
                self.sandbox = None
            return self.backend

    def install(self, specs: Sequence[LaunchSpec], progress: Progress | None = None) -> dict[str, Installed]:
        """Install every distinct package of `specs`; `progress` (its total: `len(packages_of(specs))`) gets a line per
        package, saying whether it was already in the cache, installed now, or failed."""
        unique = {install_key(s): s for s in specs}
        packages = packages_of(list(unique.values()))
        done: dict[Package, Installed] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            futures = {pool.submit(self._package, *package): package for package in packages}
            for future in as_completed(futures):  # reported here, in one thread, as each package finishes
                package, result = futures[future], future.result()
                done[package] = result
                if progress is not None:
                    progress.step(_label(package), _status(result), ok=result.ok)
        return {key: _with_entry(spec, done[(spec.registry, spec.package, spec.version)]) for key, spec in unique.items()}

    def _package(self, registry: str, package: str, request: str | None) -> Installed:
        try:
            check_package(registry, package)
            check_request(registry, request)
        except BadName as exc:
            return Installed(ok=False, error=str(exc), failure="install_failed")
        bounds = Bounds(time.monotonic() + self.timeout, self.disk_bytes, self.timeout)
        home = Path(tempfile.mkdtemp(prefix="scoreboard-install-"))  # the installers' HOME, thrown away
        try:
            env = installer_environment(home, self.environ, self.registries)
            if registry == "npm":
                return self._npm(package, request, env, bounds)
            return self._pypi(package, request, env, bounds)
        except (StepFailed, BadName) as exc:
            return Installed(ok=False, error=str(exc), failure="install_failed")
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def _cached(self, registry: str, package: str, request: str | None, artifact_hash: str | None = None) -> Installed | None:
        """A finished install of the version `request` pins (or resolved earlier this run), with this hash if known."""
        version = self._resolved.get((registry, package, request), (None, None))[0] or request
        if version is None:
            return None
        try:
            prefix = install_prefix(self.cache_dir, registry, package, check_version(version))
        except BadName:
            return None
        hit = _read_marker(prefix)
        if hit is None or (artifact_hash is not None and hit.artifact_hash != artifact_hash):
            return None
        return replace(hit, cached=True)

    def _remember(self, registry: str, package: str, request: str | None, version: str, artifact_hash: str | None) -> None:
        with self._lock:
            self._resolved[(registry, package, request)] = (version, artifact_hash)

    # -- npm

    def _npm(self, package: str, request: str | None, env: dict[str, str], bounds: Bounds) -> Installed:
        hit = self._cached("npm", package, request)
        if hit is not None:
            return hit
        resolved = npm.resolve(package, request, env, bounds)
        self._remember("npm", package, request, resolved.version, resolved.integrity)
        prefix = install_prefix(self.cache_dir, "npm", package, resolved.version)
        with _locked(prefix):
            hit = self._cached("npm", package, request, resolved.integrity)
            if hit is not None:
                return hit
            _fresh(prefix)
            try:
                integrity = npm.install(package, resolved, prefix, env, bounds)
                method: InstallMethod = "npm"
                fallback = None
                try:
                    npm_entry(prefix, package, None)
                except NeedsBuild as needs:
                    if (backend := self.builder()) is not None:  # the recorded fallback: its install scripts, in the sandbox
                        npm.build_in_sandbox(backend, prefix, env, bounds)
                        method, fallback = "npm-with-scripts", str(needs)
                except NoEntry:
                    pass  # said per launch, with the command it asks for
                return _finish(prefix, "npm", package, resolved.version, integrity, method, fallback, bounds)
            except StepFailed:
                shutil.rmtree(prefix, ignore_errors=True)
                raise

    # -- PyPI

    def _pypi(self, package: str, request: str | None, env: dict[str, str], bounds: Bounds) -> Installed:
        hit = self._cached("pypi", package, request)
        if hit is not None:
            return hit
        requirement = f"{package}=={request}" if request else package
        root = self.cache_dir / INSTALLS / "pypi"
        tools = self._tools(root / ".pip", env, bounds)
        dest = pypi.scratch_dir(root / ".downloads")
        try:
            try:
                artifact = pypi.download_wheel(tools, requirement, dest, env, bounds)
            except StepFailed as no_wheel:
                backend = self.builder()
                if backend is None:
                    raise StepFailed(f"{no_wheel}\n(no wheel; a source build runs only in a sandbox: {self.no_sandbox})") from no_wheel
                shutil.rmtree(dest)
                dest.mkdir()
                artifact = pypi.download_in_sandbox(backend, tools, requirement, dest, env, bounds)
            self._remember("pypi", package, request, artifact.version, f"sha256:{artifact.sha256}")
            prefix = install_prefix(self.cache_dir, "pypi", package, artifact.version)
            with _locked(prefix):
                hit = self._cached("pypi", package, request, f"sha256:{artifact.sha256}")
                if hit is not None:
                    return hit
                _fresh(prefix)
                try:
                    (prefix / "dist").mkdir()
                    artifact = replace(artifact, path=artifact.path.rename(prefix / "dist" / artifact.path.name))
                    pypi.make_venv(prefix / "venv", env, bounds, prefix)
                    method, fallback = self._pip_install(tools, prefix, artifact, env, bounds)
                    return _finish(prefix, "pypi", package, artifact.version, f"sha256:{artifact.sha256}", method, fallback, bounds)
                except StepFailed:
                    shutil.rmtree(prefix, ignore_errors=True)
                    raise
        finally:
            shutil.rmtree(dest, ignore_errors=True)

    def _pip_install(self, pip: Path, prefix: Path, artifact: pypi.Artifact, env: dict[str, str],
                     bounds: Bounds) -> tuple[InstallMethod, str | None]:
        """Wheels on the host; else builds in the sandbox; else the package alone (seed 000's no-deps fallback)."""
        venv = prefix / "venv"
        failures: list[str] = []
        if artifact.wheel:
            try:
                pypi.install_wheels(pip, venv, artifact, env, bounds, prefix)
                return "wheel", None
            except StepFailed as exc:
                failures.append(str(exc))
        backend = self.builder()  # the sdist, or the dependencies that have no wheel, built in the sandbox
        if backend is not None:
            try:
                pypi.install_in_sandbox(backend, pip, venv, artifact, env, bounds, prefix)
                return "sdist-in-sandbox", "\n".join(failures) or None
            except StepFailed as exc:
                failures.append(str(exc))
        try:
            if artifact.wheel:
                pypi.install_wheels(pip, venv, artifact, env, bounds, prefix, no_deps=True)
            elif backend is not None:
                pypi.install_in_sandbox(backend, pip, venv, artifact, env, bounds, prefix, no_deps=True)
            else:
                raise StepFailed(f"a source build runs only in a sandbox: {self.no_sandbox}")
            return "no-deps", "\n".join(failures)
        except StepFailed as exc:
            raise StepFailed("\n".join([*failures, str(exc)])) from exc

    def _tools(self, venv: Path, env: dict[str, str], bounds: Bounds) -> Path:
        """A venv of the system interpreter whose pip downloads for every PyPI install (made once per cache)."""
        python = venv / "bin" / "python"
        with _locked(venv):
            if not (venv / MARKER).is_file():
                shutil.rmtree(venv, ignore_errors=True)
                pypi.make_venv(venv, env, bounds, venv, with_pip=True)
                (venv / MARKER).write_text("{}")
        return python


def _label(package: Package) -> str:
    registry, name, version = package
    return f"{registry}:{name}" + (f"=={version}" if version else "")


def _status(result: Installed) -> str:
    if not result.ok:
        return f"failed: {(result.error or 'no reason given').splitlines()[0][:160]}"
    return f"{'already installed' if result.cached else 'installed'} {result.version}" + (f" ({result.method})" if not result.cached else "")


def _with_entry(spec: LaunchSpec, installed: Installed) -> Installed:
    """The command this launch starts, from the package (its own `command` when it names one)."""
    if not installed.ok or installed.prefix is None:
        return installed
    try:
        if spec.registry == "npm":
            entry = npm_entry(installed.prefix, spec.package, spec.command or None)
        else:
            entry = pypi_entry(installed.prefix / "venv", spec.package, spec.command or None)
    except NoEntry as exc:
        return replace(installed, ok=False, error=str(exc), failure="no_entry_point")
    path_dirs = (str(entry.executable.parent),) if spec.registry == "pypi" else _node_dirs()
    return replace(installed, executable=entry.executable, entry_args=entry.args, command=entry.name, path_dirs=path_dirs)


def _node_dirs() -> tuple[str, ...]:
    node = shutil.which("node")
    return (str(Path(node).parent),) if node else ()


def _finish(prefix: Path, registry: str, package: str, version: str, artifact_hash: str | None, method: InstallMethod,
            fallback: str | None, bounds: Bounds) -> Installed:
    over = over_cap(prefix, bounds.disk_bytes)
    if over:
        raise StepFailed(f"{package}@{version}: {over}")
    record = {"registry": registry, "package": package, "version": version, "artifact_hash": artifact_hash, "method": method,
              "fallback": fallback, "installed_at": time.time()}
    partial = prefix / (MARKER + ".partial")
    partial.write_text(json.dumps(record, indent=1))
    partial.rename(prefix / MARKER)  # the marker appears whole, last: a prefix without it is redone
    return _read_marker(prefix) or Installed(ok=False, error="the install's marker cannot be read", failure="install_failed")


def _read_marker(prefix: Path) -> Installed | None:
    try:
        record = json.loads((prefix / MARKER).read_text())
        return Installed(ok=True, version=record["version"], prefix=prefix, artifact_hash=record.get("artifact_hash"),
                         method=record.get("method"), fallback=record.get("fallback"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _fresh(prefix: Path) -> None:
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)


@contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """One installer at a time per prefix, across threads and processes."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with prefix.with_name(prefix.name + ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
